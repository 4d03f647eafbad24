"""Streams are seeded on first draw, and draw exactly what ``random.Random(material)`` draws:
stored runs and their replays depend on every draw staying the same."""

from __future__ import annotations

import copy
import pickle
import random

from hypothesis import given
from hypothesis import strategies as st

from simforge.sim.rng import LazyRandom, Streams

DRAWS = {
    "random": lambda r: r.random(),
    "uniform": lambda r: r.uniform(0.5, 2.5),
    "gauss": lambda r: r.gauss(0.0, 1.0),
    "randint": lambda r: r.randint(0, 10**6),
    "getrandbits": lambda r: r.getrandbits(70),
    "choice": lambda r: r.choice("abcdefgh"),
    "shuffle": lambda r: (lambda xs: (r.shuffle(xs), xs)[1])(list(range(8))),
    "sample": lambda r: r.sample(range(100), 3),
    "expovariate": lambda r: r.expovariate(2.0),
}

materials = st.text(max_size=30)
sequences = st.lists(st.sampled_from(sorted(DRAWS)), min_size=1, max_size=25)


@given(materials, sequences)
def test_a_stream_draws_what_random_seeded_with_its_material_draws(material, names):
    lazy, plain = LazyRandom(material), random.Random(material)
    assert [DRAWS[n](lazy) for n in names] == [DRAWS[n](plain) for n in names]


@given(materials, sequences, st.integers(0, 5), st.sampled_from(["pickle", "deepcopy", "state"]))
def test_copies_and_states_continue_the_same_draws(material, names, before, how):
    lazy, plain = LazyRandom(material), random.Random(material)
    for _ in range(before):  # copied before its first draw, or after some
        assert lazy.random() == plain.random()
    if how == "pickle":
        other = pickle.loads(pickle.dumps(lazy))
    elif how == "deepcopy":
        other = copy.deepcopy(lazy)
    else:
        other = LazyRandom("something else")
        other.setstate(lazy.getstate())
        assert lazy.getstate() == plain.getstate()
    expected = [DRAWS[n](plain) for n in names]
    assert [DRAWS[n](other) for n in names] == expected
    assert [DRAWS[n](lazy) for n in names] == expected


def test_reseeding_before_the_first_draw_wins_over_the_material():
    lazy = LazyRandom("material")
    lazy.seed(7)
    assert lazy.random() == random.Random(7).random()


def test_session_streams_are_keyed_and_stable():
    a, b = Streams(3), Streams(3)
    assert a("latency", "t") is a("latency", "t")
    assert a("latency", "t").random() == random.Random("3\x1flatency\x1ft").random()
    assert b("errors", "t").random() != b("latency", "t").random()
