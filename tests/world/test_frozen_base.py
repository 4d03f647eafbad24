"""The shared seeded base is read-only: an in-place edit of a base row raises, so it cannot leak
into another environment, and ``diff()`` stays what the writes made."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

import simforge
from simforge.tools.tool import to_jsonable
from simforge.world import World
from simforge.world.frozen import FrozenDict, FrozenList, freeze
from tests.conftest import MINI_SCENARIO

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


def _fresh_world():
    env = simforge.make(str(MINI_SCENARIO), task="upgrade")
    env.reset(seed=0)
    assert env.session is not None
    return env.session.world


def _first_row(world: World):
    entity = next(name for name in world.schemas if world.ids(name))
    id = world.ids(entity)[0]
    return entity, id, world.get(entity, id)


def test_an_in_place_edit_of_a_base_row_raises_and_leaks_nowhere():
    world = _fresh_world()
    entity, id, row = _first_row(world)
    before = copy.deepcopy(row)
    field = next(iter(row))
    with pytest.raises(TypeError, match="read-only"):
        row[field] = "edited"
    with pytest.raises(TypeError):
        row.update({field: "edited"})
    with pytest.raises(TypeError):
        del row[field]
    nested = next((v for v in row.values() if isinstance(v, list | dict)), None)
    if nested is not None:
        with pytest.raises(TypeError):
            nested.clear()
    other = _fresh_world()
    assert other.get(entity, id) == before
    assert world.diff() == [] and other.diff() == []


def test_diff_sees_writes_made_through_the_world():
    world = _fresh_world()
    entity, id, row = _first_row(world)
    field = next(k for k in row if k != world.schemas[entity].primary_key)
    world.update(entity, id, {field: "changed"}, now=1.0)
    (change,) = world.diff()
    assert (change.entity, change.id) == (entity, id)
    assert world.get(entity, id)[field] == "changed"
    assert _fresh_world().get(entity, id)[field] == row[field]


@given(json_values)
def test_frozen_values_read_equal_and_copy_to_plain_mutable_values(value):
    frozen = freeze(value)
    assert frozen == value
    assert to_jsonable(frozen) == value
    thawed = copy.deepcopy(frozen)
    assert thawed == value
    for part in _containers(thawed):
        assert type(part) in (dict, list)
    assert pickle.loads(pickle.dumps(frozen)) == value
    assert freeze(frozen) is frozen


def _containers(value):
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _containers(v)
    elif isinstance(value, list):
        yield value
        for v in value:
            yield from _containers(v)


@given(st.lists(st.integers(), max_size=5), st.dictionaries(st.text(max_size=3), st.integers()))
def test_every_mutating_method_refuses(items, mapping):
    frozen_list, frozen_dict = FrozenList(items), FrozenDict(mapping)
    for call in (
        lambda: frozen_list.append(1), lambda: frozen_list.extend([1]),
        lambda: frozen_list.insert(0, 1), lambda: frozen_list.sort(), lambda: frozen_list.reverse(),
        lambda: frozen_list.__setitem__(slice(None), []), lambda: frozen_list.__iadd__([1]),
        lambda: frozen_dict.__setitem__("k", 1), lambda: frozen_dict.setdefault("k", 1),
        lambda: frozen_dict.pop("k", None), lambda: frozen_dict.clear(),
        lambda: frozen_dict.__ior__({"k": 1}), lambda: frozen_dict.popitem(),
    ):
        with pytest.raises(TypeError):
            call()
    assert frozen_list == items and frozen_dict == mapping
