"""Compiled handlers answer exactly as the interpreter does: every call of the real traces, and
generated tables, overlays, searches, lookups and expressions (the interpreter is the
reference: ``simforge.synth.runtime.interpreter.run``)."""

from __future__ import annotations

import functools
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from simforge.synth.expr.language import Unresolved, compile_expr, evaluate
from simforge.synth.pack.loader import entity_models, load_synth_pack
from simforge.synth.pipeline import synthesize
from simforge.synth.runtime import interpreter as interp
from simforge.synth.runtime.compiled import compile_handler, index_of
from simforge.tools.context import ToolContext
from simforge.tools.errors import ToolError
from simforge.world import EntitySchema, World

from ..conftest import shared_data_dir

GPT4O = "tau-bench/historical_trajectories/gpt-4o-airline.json"
TAU2_RETAIL = "tau2-bench/results/gpt-4.1_retail_defautl_gpt-4.1_1trials.json"


def outcome(fn: Any, *args: Any) -> tuple[Any, ...]:
    """What ``fn(*args)`` gives: its result, or its error's status, code and text, or the
    exception type (``repr``: NaN equals itself in its text)."""
    try:
        return ("ok", repr(fn(*args)))
    except ToolError as exc:
        return ("error", exc.status, exc.code, exc.message)
    except Exception as exc:
        return ("raised", type(exc).__name__)


# -- the real traces ---------------------------------------------------------------------------


def _calls(path: Path) -> list[list[tuple[str, Any]]]:
    """Each episode's tool calls in order (tau-bench's OpenAI messages or tau2's)."""
    data = json.loads(path.read_text())
    episodes = []
    for run in data if isinstance(data, list) else data["simulations"]:
        calls = []
        for message in run.get("traj") or run.get("messages") or []:
            for call in message.get("tool_calls") or []:
                if "function" in call:
                    calls.append((call["function"]["name"],
                                  json.loads(call["function"]["arguments"])))
                else:
                    calls.append((call["name"], call["arguments"]))
        episodes.append(calls)
    return episodes


def _replay_both(folder: Path, episodes: list[list[tuple[str, Any]]]) -> int:
    """Replay every call through the compiled pack and the interpreted one, each episode on
    fresh worlds; every answer and every episode's final world must be the same."""
    packs = [load_synth_pack(folder), load_synth_pack(folder, compiled=False)]
    tools = [{t.name: t for t in pack.tools} for pack in packs]
    base = packs[0].base(0, 1)
    compared = 0
    for n, calls in enumerate(episodes):
        worlds = [World(pack.schemas, base) for pack in packs]
        for i, (name, args) in enumerate(calls):
            answers = []
            for pack_tools, world in zip(tools, worlds, strict=True):
                ctx = ToolContext(world, float(i), random.Random(i))
                tool = pack_tools.get(name)
                answers.append(outcome(tool.invoke, ctx, args) if tool else None)
            assert answers[0] == answers[1], f"episode {n}, call {i} ({name} {args})"
            compared += 1
        assert worlds[0].materialize() == worlds[1].materialize(), f"episode {n}"
        assert repr(worlds[0].log) == repr(worlds[1].log), f"episode {n}"
    return compared


def _synthesize_and_replay(tmp_path: Path, traces: str, domain: str) -> tuple[set[str], int]:
    """The kinds of the pack synthesized from ``traces``, and how many calls were compared."""
    shared = shared_data_dir()
    if not (shared / traces).is_file():
        pytest.skip(f"no {shared / traces}")
    out = tmp_path / domain
    synthesize([shared / traces], out, data=[shared / f"tau-bench/envs/{domain}/data"], seed=0)
    kinds = {e["handler"]["kind"] for e in json.loads((out / "tools.json").read_text())}
    return kinds, _replay_both(out, _calls(shared / traces))


@pytest.mark.slow
def test_every_call_of_the_gpt4o_airline_traces_is_answered_as_the_interpreter_does(tmp_path):
    kinds, compared = _synthesize_and_replay(tmp_path, GPT4O, "airline")
    assert {"get", "search", "update", "create"} <= kinds
    assert compared == 1164


@pytest.mark.slow
def test_every_call_of_the_tau2_retail_traces_is_answered_as_the_interpreter_does(tmp_path):
    kinds, compared = _synthesize_and_replay(tmp_path, TAU2_RETAIL, "retail")
    assert "find" in kinds
    assert compared == 299


# -- generated tables, overlays and handlers ---------------------------------------------------

FIELDS = ["id", "a", "b", "dates", "tags"]
MODELS = entity_models({"Item": {"pk": "id", "fields": FIELDS}, "Log": {"pk": "id",
                                                                         "fields": ["id", "a"]}})
SCHEMAS = {m.__name__: EntitySchema.of(m) for m in MODELS}
NAN = float("nan")

scalars = st.sampled_from([0, 1, 1.0, True, False, "x", "y", "", None, NAN, -0.0, 2.5])
common = st.sampled_from([1, True, "x", None])
"""Few values, so that filters and matches hit often."""
values = st.one_of(common, common, scalars, st.lists(scalars, max_size=2), st.dictionaries(
    st.sampled_from(["k", "a"]), scalars, max_size=2))
subrecord = st.dictionaries(st.sampled_from(["a", "b", "status"]), common, max_size=3)
dates = st.one_of(st.none(), st.none(), st.just([]), st.dictionaries(st.sampled_from(["d1", "d2", "0"]),
                                                           st.one_of(subrecord, scalars),
                                                           max_size=3))
rows = st.fixed_dictionaries({"a": st.one_of(common, values), "b": values, "dates": dates,
                              "tags": values})
ids = st.sampled_from([f"r{i}" for i in range(8)] + ["new"])
changes = st.lists(
    st.one_of(
        st.tuples(st.just("update"), ids, rows),
        st.tuples(st.just("insert"), ids, rows),
        st.tuples(st.just("insert"), st.sampled_from(["n1", "n2", "n3"]), rows),
        st.tuples(st.just("delete"), ids, st.none()),
    ),
    max_size=6,
)
argsets = st.lists(st.fixed_dictionaries({}, optional={
    "qa": common, "qb": values, "date": st.sampled_from(["d1", "d2", "0", 0, None]),
    "id": ids, "n": scalars,
}), min_size=1, max_size=4)
merge = st.sampled_from([[], [[{"c": "dates"}, {"arg": "date"}]], [[{"c": "dates"}, {"c": "d1"}]],
                         [[{"c": "tags"}, {"c": 0}]]])
filters = st.lists(st.one_of(
    st.fixed_dictionaries({"field": st.sampled_from(["a", "a", "b", "status", "tags", "k"]),
                           "arg": st.sampled_from(["qa", "qa", "qb", "n", "missing"])}),
    st.fixed_dictionaries({"field": st.sampled_from(["a", "b", "status"]), "c": common}),
), max_size=2)
searches = st.fixed_dictionaries({
    "tool": st.just("s"), "kind": st.just("search"), "entity": st.just("Item"),
    "refs": st.sampled_from([{}, {"id": {"entity": "Item", "sub": None}}]),
    "view": st.fixed_dictionaries({
        "omit": st.lists(st.sampled_from(["a", "b", "dates"]), max_size=2, unique=True),
        "merge": merge,
        "add": st.sampled_from([{}, {"b": "qb"}, {"x": "qa"}]),
        "const": st.sampled_from([{}, {"a": 1}, {"z": "k"}]),
    }),
    "filters": filters,
    "errors": st.sampled_from([[], [{"when": {"missing_ref": "id"}, "message": "no item",
                                      "status": 404}]]),
})
finds = st.fixed_dictionaries({
    "tool": st.just("f"), "kind": st.just("find"), "entity": st.just("Item"), "pk": st.just("id"),
    "match": st.dictionaries(st.sampled_from(["qa", "qb", "n"]), st.sampled_from(
        [["a"], ["b"], ["dates", "d1", "a"], ["tags", "k"], ["dates", "0"]]), max_size=2),
    "returns": st.sampled_from(["key", "row"]),
    "errors": st.sampled_from([[], [{"when": {"no_match": True}, "message": "Error: none",
                                      "status": 404}]]),
})


def _world(table: dict[str, dict[str, Any]], edits: list[Any]) -> World:
    world = World(SCHEMAS, {"Item": table, "Log": {}})
    for t, (op, id, row) in enumerate(edits):
        exists = world.get("Item", id) is not None
        if op == "update" and exists:
            world.update("Item", id, row, now=float(t))
        elif op == "insert" and not exists:
            world.insert("Item", {**row, "id": id}, now=float(t))
        elif op == "delete" and exists:
            world.delete("Item", id, now=float(t))
    return world


def _same_answers(desc: dict[str, Any], table: dict[str, Any], edits: list[Any],
                  calls: list[dict[str, Any]], stale: bool = False) -> None:
    compiled = compile_handler(desc, SCHEMAS)
    rt = interp.Runtime({}, {})
    world = _world(table, edits)
    ctx = ToolContext(world, 100.0, random.Random(0), read_as_of=0.5 if stale else None)
    for args in calls:
        want = outcome(interp.run, desc, ctx, dict(args), rt)
        got = outcome(compiled, ctx, dict(args), rt)
        assert got == want, (desc, args)


tables = st.lists(rows, min_size=0, max_size=10).map(
    lambda rs: {f"r{i}": {"id": f"r{i}", **r} for i, r in enumerate(rs)})


def _row(**fields: Any) -> dict[str, Any]:
    return {"a": None, "b": None, "dates": None, "tags": None, **fields}


_BY_A = {"tool": "s", "kind": "search", "entity": "Item", "view": {},
         "filters": [{"field": "a", "arg": "qa"}]}
_MERGED = {**_BY_A, "view": {"merge": [[{"c": "dates"}, {"arg": "date"}]]}}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(searches, tables, changes, argsets, st.booleans())
# rows this episode created, after the seeded ones, in the order they were created
@example(_BY_A, {"r0": {"id": "r0", **_row(a=1)}},
         [("insert", "n2", _row(a=1)), ("insert", "n1", _row(a=1)), ("update", "r0", _row(a=2))],
         [{"qa": 1}, {"qa": 2}], False)
# a merged sub-record sets the filtered field for one seeded row of many
@example(_MERGED, {f"r{i}": {"id": f"r{i}", **_row(a=i, dates={"d1": {"a": 1 if i == 5 else i}})}
                   for i in range(8)}, [("delete", "r1", None)], [{"qa": 1, "date": "d1"}], False)
def test_an_indexed_search_finds_what_a_scan_finds_in_the_same_order(desc, table, edits, calls,
                                                                     stale):
    _same_answers(desc, table, edits, calls, stale)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(finds, tables, changes, argsets)
def test_an_indexed_find_returns_the_first_row_a_scan_returns(desc, table, edits, calls):
    _same_answers(desc, table, edits, calls)


def test_an_index_is_built_once_per_seeded_table_and_a_search_probes_it():
    table = {f"r{i}": {"id": f"r{i}", "a": i % 3, "b": "x", "dates": None, "tags": []}
             for i in range(30)}
    desc = {"tool": "s", "kind": "search", "entity": "Item", "view": {},
            "filters": [{"field": "a", "arg": "qa"}]}
    compiled = compile_handler(desc, SCHEMAS)
    ctx = ToolContext(World(SCHEMAS, {"Item": table, "Log": {}}), 0.0, random.Random(0))
    found = compiled(ctx, {"qa": 1}, interp.Runtime({}, {}))
    assert [r["id"] for r in found] == [f"r{i}" for i in range(1, 30, 3)]
    index = index_of(table)
    assert index is index_of(table)
    buckets = [b for b, _ in index._keys.values()]
    assert buckets and sorted(buckets[-1][(1,)]) == list(range(1, 30, 3))
    # a write of this episode is seen; the shared index is not changed by it
    ctx.world.update("Item", "r0", {"a": 1}, now=1.0)
    found = compiled(ctx, {"qa": 1}, interp.Runtime({}, {}))
    assert [r["id"] for r in found][:2] == ["r0", "r1"]
    assert 0 not in buckets[-1][(1,)]


def test_a_pack_compiles_each_distinct_handler_once():
    desc = {"tool": "g", "kind": "get", "entity": "Item", "key": "id", "view": {}}
    assert compile_handler(desc, SCHEMAS) is compile_handler(json.loads(json.dumps(desc)), SCHEMAS)
    assert compile_handler(desc, SCHEMAS) is not compile_handler({**desc, "tool": "h"}, SCHEMAS)


# -- writes and expressions ---------------------------------------------------------------------

paths = st.sampled_from([["args", "qa"], ["args", "n"], ["old", "a"], ["old", "tags"],
                         ["old", "dates", "d1"], ["args", "list"], ["elem", "a"], ["new", "a"],
                         ["old", "tags", 0], ["args"], ["ref", "id", "a"]])
leaf = st.one_of(st.builds(lambda v: {"c": v}, values), st.builds(lambda p: {"p": p}, paths))


def _forms(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    one = st.sampled_from(["neg", "abs", "len", "sorted"])
    two = st.sampled_from(["add", "sub", "mul"])
    return st.one_of(
        st.builds(lambda o, e: {o: e}, one, inner),
        st.builds(lambda o, a, b: {o: [a, b]}, two, inner, inner),
        st.builds(lambda e, d: {"round": [e, d]}, inner, st.sampled_from([0, 2])),
        st.builds(lambda p, k: {"sum": [p, k]}, paths, st.sampled_from(["a", "k"])),
        st.builds(lambda p, q: {"pairdiff": [p, q, "a"]}, paths, paths),
        st.builds(lambda d: {"obj": d}, st.dictionaries(st.sampled_from(["a", "b"]), inner,
                                                       max_size=2)),
        st.builds(lambda c, t, e: {"if_pos": [c, t, e]}, inner, inner, inner),
        st.builds(lambda c, t, e: {"if_true": [c, t, e]}, inner, inner, inner),
        st.builds(lambda b, es: {"append": [b, es]}, inner, st.lists(inner, max_size=2)),
        st.builds(lambda b, p, e: {"appendmap": [b, p, e]}, inner, paths, inner),
        st.builds(lambda s, e: {"map": [s, e]}, inner, inner),
        st.builds(lambda k: {"row": ["Item", k]}, inner),
        st.builds(lambda n, s: {"at": [n, *s]}, inner, st.lists(inner, max_size=2)),
        st.builds(lambda a, b, c: {"replace": {"list": a, "ids": b, "with": c, "key": "a",
                                               "keys": ["a"]}}, inner, inner, inner),
        st.just({"nosuchform": 1}),
        st.just({"add": [{"c": 1}]}),
        st.just({"c": 1, "p": ["args"]}),
    )


exprs = st.recursive(leaf, _forms, max_leaves=8)
envs = st.fixed_dictionaries({
    "args": st.fixed_dictionaries({}, optional={"qa": values, "n": scalars,
                                                "list": st.lists(rows, max_size=2)}),
    "old": st.one_of(st.none(), rows),
    "ref": st.fixed_dictionaries({}, optional={"id": rows}),
    "elem": rows,
})


def _value(fn: Any, *args: Any) -> tuple[str, str]:
    try:
        return ("ok", repr(fn(*args)))
    except (Unresolved, TypeError, ValueError, OverflowError, ZeroDivisionError, KeyError,
            AttributeError, IndexError) as exc:
        return ("raised", type(exc).__name__)


@settings(max_examples=500, deadline=None)
@given(exprs, envs)
def test_a_compiled_expression_has_the_interpreters_value_or_failure(expr, env):
    table = {"x": {"id": "x", "a": 1}, "1": {"id": "1", "a": [1]}}
    env = {**env, "db": World(SCHEMAS, {"Item": table, "Log": {}})}
    want = _value(evaluate, expr, env)
    assert _value(compile_expr(expr), env) == want, expr


updates = st.fixed_dictionaries({
    "tool": st.just("u"), "kind": st.sampled_from(["update", "get"]), "entity": st.just("Item"),
    "key": st.just("id"),
    "refs": st.sampled_from([{}, {"id": {"entity": "Item", "sub": None}}]),
    "effects": st.dictionaries(st.sampled_from(["a", "b", "tags"]), exprs, max_size=3),
    "view": st.sampled_from([{}, {"omit": ["dates"]}, {"omit_null": ["b"]},
                             {"path": [{"c": "dates"}, {"arg": "date"}]}]),
    "errors": st.lists(st.builds(
        lambda w: {"when": w, "message": "Error: {0} vs {1}", "status": 409,
                   "format": [{"p": ["new", "a"]}, {"p": ["old", "a"]}]},
        st.one_of(
            st.builds(lambda o, a, b: {o: [a, b]}, st.sampled_from(["ne", "lt", "gt"]), exprs,
                      exprs),
            st.builds(lambda p, vs: {"not_in": [p, vs]}, paths, st.lists(scalars, max_size=3)),
            st.just({"missing": "target"}), st.just({"missing_ref": "id"}),
        )), max_size=2),
    "returns": st.sampled_from(["row", {"template": "Done {id}."}, {"c": "ok"}]),
})
creates = st.fixed_dictionaries({
    "tool": st.just("c"), "kind": st.just("create"), "entity": st.just("Item"), "pk": st.just("id"),
    "refs": st.sampled_from([{}, {"id": {"entity": "Item", "sub": None}}]),
    "fields": st.dictionaries(st.sampled_from(["id", "a", "b"]), exprs, max_size=3),
    "returns": st.sampled_from(["row", {"c": "ok"}]),
    "errors": st.sampled_from([[], [{"when": {"gt": [{"p": ["new", "a"]}, {"c": 1}]},
                                      "message": "too big", "status": 422}]]),
})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(updates, creates), tables, argsets)
def test_a_compiled_write_changes_the_world_as_the_interpreter_does(desc, table, calls):
    worlds, answers = [], []
    for fn in (functools.partial(interp.run, desc), compile_handler(desc, SCHEMAS)):
        world = World(SCHEMAS, {"Item": table, "Log": {}})
        rt = interp.Runtime({}, {})
        got = []
        for t, args in enumerate(calls):
            ctx = ToolContext(world, float(t), random.Random(0))
            got.append(outcome(fn, ctx, dict(args), rt))
        worlds.append(repr(world.log))
        answers.append(got)
    assert answers[0] == answers[1], desc
    assert worlds[0] == worlds[1], desc


def test_nan_is_never_found_by_a_probe():
    # a probe finds a key by identity; == says NaN is nothing, so NaN rows are always scanned
    table = {"r0": {"id": "r0", "a": NAN, "b": None, "dates": None, "tags": None}}
    desc = {"tool": "s", "kind": "search", "entity": "Item", "view": {},
            "filters": [{"field": "a", "arg": "qa"}]}
    ctx = ToolContext(World(SCHEMAS, {"Item": table, "Log": {}}), 0.0, random.Random(0))
    assert compile_handler(desc, SCHEMAS)(ctx, {"qa": table["r0"]["a"]},
                                          interp.Runtime({}, {})) == []
    assert math.isnan(table["r0"]["a"])


def test_replay_and_constant_handlers_answer_as_the_interpreter():
    from simforge.synth.runtime.replay_table import ReplayTable

    table = ReplayTable([{"args": {"id": "a"}, "response": {"result": {"x": [1]}}},
                         {"args": {"id": "b"}, "response": {"error": "Error: no such b"}}])
    runtimes = [interp.Runtime({}, {"r": table}), interp.Runtime({}, {})]
    descs = [{"tool": "r", "kind": "replay"}, {"tool": "c", "kind": "constant", "value": [1]},
             {"tool": "r", "kind": "replay", "records": True},
             {"tool": "r", "kind": "replay", "side": [{"arg": "@result", "entity": "Item"}]}]
    ctx = ToolContext(_world({}, []), 0.0, random.Random(0))
    for desc in descs:
        compiled = compile_handler(desc, ["Item"])
        for rt in runtimes:
            for args in ({"id": "a"}, {"id": "b"}, {"id": "bb"}, {}):
                assert outcome(compiled, ctx, args, rt) == outcome(interp.run, desc, ctx, args, rt)
