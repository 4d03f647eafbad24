"""A session's streams are counter-based: the n-th word of a stream is a function of the session
seed, the stream's name and n alone, the same in every process. Stored runs and their replays
depend on every draw staying the same, whichever way it is drawn (one word at a time or in
blocks), copied, pickled or restored."""

from __future__ import annotations

import copy
import math
import os
import pickle
import random
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simforge.keyed import KeyedRandom, block, seed_key, word
from simforge.sim.rng import Streams

ROOT = Path(__file__).resolve().parents[2]

DRAWS = {
    "random": lambda r: r.random(),
    "uniform": lambda r: r.uniform(0.5, 2.5),
    "gauss": lambda r: r.gauss(0.0, 1.0),
    "lognormvariate": lambda r: r.lognormvariate(0.0, 0.5),
    "expovariate": lambda r: r.expovariate(2.0),
    "randint": lambda r: r.randint(0, 10**6),
    "randrange": lambda r: r.randrange(3, 10**30, 7),
    "getrandbits": lambda r: r.getrandbits(70),
    "getrandbits64": lambda r: r.getrandbits(64),
    "randbytes": lambda r: r.randbytes(3),
    "choice": lambda r: r.choice("abcdefgh"),
    "choices": lambda r: r.choices("abc", k=3),
    "shuffle": lambda r: (lambda xs: (r.shuffle(xs), xs)[1])(list(range(8))),
    "sample": lambda r: r.sample(range(100), 3),
}

keys = st.integers(0, 2**64 - 1)
sequences = st.lists(st.sampled_from(sorted(DRAWS)), min_size=1, max_size=60)


class OneWordAtATime(random.Random):
    """The specification: word ``n`` of the key at the ``n``-th word drawn, nothing cached."""

    def __init__(self, key: int) -> None:
        self.key, self.n, self.gauss_next = key, 0, None

    def _word(self) -> int:
        self.n += 1
        return word(self.key, self.n - 1)

    def random(self) -> float:
        return (self._word() >> 11) * 2.0**-53

    def getrandbits(self, k: int) -> int:
        if k <= 64:
            return self._word() >> (64 - k) if k else 0
        n = -(-k // 64)
        return sum(self._word() << (64 * i) for i in range(n)) >> (64 * n - k)


@given(keys, st.integers(0, 2**40), st.integers(1, 64))
def test_a_block_is_the_words_one_at_a_time(key, counter, n):
    assert block(key, counter, n) == [word(key, c) for c in range(counter, counter + n)][::-1]


@given(keys, sequences)
def test_every_distribution_draws_the_words_in_order(key, names):
    """Blocks, the first words one at a time and every method of ``random.Random`` drawing
    through ``random()`` and ``getrandbits()`` (``_randbelow`` included) give the words of the
    specification, in order."""
    keyed, spec = KeyedRandom(key), OneWordAtATime(key)
    assert [DRAWS[n](keyed) for n in names] == [DRAWS[n](spec) for n in names]
    assert keyed.getstate()[2] == spec.n


@given(keys, sequences, st.integers(0, 150),
       st.sampled_from(["pickle", "deepcopy", "copy", "state"]))
def test_copies_and_states_continue_the_same_draws(key, names, before, how):
    keyed, spec = KeyedRandom(key), OneWordAtATime(key)
    for _ in range(before):  # copied before its first draw, between blocks or inside one
        assert keyed.random() == spec.random()
    if before % 3 == 0:
        keyed.gauss(0.0, 1.0), spec.gauss(0.0, 1.0)  # a spare normal in the state
    if how == "pickle":
        other = pickle.loads(pickle.dumps(keyed))
    elif how == "deepcopy":
        other = copy.deepcopy(keyed)
    elif how == "copy":
        other = copy.copy(keyed)
    else:
        other = KeyedRandom(key ^ 1)
        other.setstate(keyed.getstate())
    assert type(other) is KeyedRandom
    expected = [DRAWS[n](spec) for n in names]
    assert [DRAWS[n](other) for n in names] == expected
    assert [DRAWS[n](keyed) for n in names] == expected


def test_a_state_of_another_generator_is_refused():
    with pytest.raises(ValueError, match="KeyedRandom"):
        KeyedRandom(1).setstate(random.Random(1).getstate())


def test_seeding_keys_the_stream_from_any_seed_random_accepts():
    def first(seed: object) -> list[float]:
        r = KeyedRandom(99)
        r.random()
        r.seed(seed)
        return [r.random() for _ in range(3)]

    keyed = KeyedRandom(seed_key(7))
    assert first(7) == [keyed.random() for _ in range(3)]
    assert first(7) == first(7) and first("a") == first("a") and first(b"a") == first(b"a")
    assert first("b") == first(b"b") == first(bytearray(b"b"))  # as random.Random has them
    assert len({tuple(first(s)) for s in (7, 8, -7, 2**70, "a", "b", b"c", 1.5)}) == 8
    assert first(None) != first(None)
    with pytest.raises(TypeError):
        KeyedRandom().seed([1])


def test_getrandbits_edges():
    r = KeyedRandom(5)
    assert r.getrandbits(0) == 0 and r.getstate()[2] == 0  # no word used
    with pytest.raises(ValueError):
        r.getrandbits(-1)
    assert r.getrandbits(64) == word(5, 0)
    assert r.getrandbits(1) == word(5, 1) >> 63
    assert r.getrandbits(128) == word(5, 2) | word(5, 3) << 64
    assert r.getstate()[2] == 4
    assert 0 <= r.random() < 1


def test_session_streams_are_keyed_and_stable():
    a, b = Streams(3), Streams(3)
    assert a("latency", "t") is a("latency", "t")
    assert b("latency", "t") is not a("latency", "t")
    assert a("latency", "t").random() == b("latency", "t").random()
    assert Streams(3)("errors", "t").random() != Streams(3)("latency", "t").random()
    assert Streams(3)("latency", "t").random() != Streams(4)("latency", "t").random()
    assert Streams(-3)("latency", "t").random() != Streams(2**64 - 3)("latency", "t").random()


PINNED = """
from simforge.sim.rng import Streams
s = Streams(3)
print(s("latency", "get_order").random(), s("think").getrandbits(64),
      Streams(2**80)("handler", "book").randrange(10**9), s("latency", "get_order").gauss(0, 1))
"""
PINNED_OUT = "0.6904924879813826 9218698450391441942 50739792 -0.22476779921248713"


@pytest.mark.parametrize("hash_seed", ["0", "12345"])
def test_draws_are_the_same_in_every_process_and_hash_seed(hash_seed):
    """Pinned: the draws every stored run was played with. A change here changes every run."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", PINNED], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == PINNED_OUT.split()


names = st.tuples(st.sampled_from(["latency", "errors", "handler", "think"]),
                  st.sampled_from(["a", "b", "c"]))


@given(st.integers(0, 2**32), st.lists(st.tuples(names, st.integers(1, 40)), max_size=20))
def test_drawing_from_one_stream_never_changes_another(seed, turns):
    """Whatever the other streams draw, and in whatever order, a stream draws the same."""
    mixed = Streams(seed)
    got: dict[tuple[str, ...], list[float]] = {}
    for name, n in turns:
        got.setdefault(name, []).extend(mixed(*name).random() for _ in range(n))
    for name, draws in got.items():
        alone = Streams(seed)(*name)
        assert [alone.random() for _ in draws] == draws


def _chi2(cells: list[int], bins: int) -> float:
    counts = [0] * bins
    for cell in cells:
        counts[cell] += 1
    expected = len(cells) / bins
    return sum((c - expected) ** 2 / expected for c in counts)


def test_draws_look_uniform_and_independent():
    """A sanity check at loose bounds (fixed seeds, so it cannot flake): a chi-square far below
    what a broken generator gives, and no correlation between consecutive draws, neighbouring
    tools or neighbouring seeds, where a weak key derivation would show first."""
    n = 20_000
    streams = {(seed, tool): Streams(seed)("latency", tool)
               for seed in (0, 1) for tool in ("t0", "t1")}
    draws = {k: [s.random() for _ in range(n)] for k, s in streams.items()}
    # chi-square with 99 degrees of freedom: mean 99, sd 14; a bias of 1% per bin gives ~200
    for values in draws.values():
        assert _chi2([int(v * 100) for v in values], 100) < 170
        assert abs(statistics.fmean(values) - 0.5) < 0.01
        assert abs(statistics.correlation(values[:-1], values[1:])) < 0.03
    for a, b in [((0, "t0"), (0, "t1")), ((0, "t0"), (1, "t0")), ((0, "t1"), (1, "t0"))]:
        assert abs(statistics.correlation(draws[a], draws[b])) < 0.03
    # the pairs of consecutive draws fill the unit square evenly (10 x 10 cells)
    values = draws[0, "t0"]
    pairs = [int(x * 10) * 10 + int(y * 10)
             for x, y in zip(values[::2], values[1::2], strict=True)]
    assert _chi2(pairs, 100) < 170
    # the bits getrandbits hands out are balanced, each of the 64
    bits = Streams(5)("handler", "t")
    ones = [0] * 64
    for _ in range(4000):
        x = bits.getrandbits(64)
        for i in range(64):
            ones[i] += x >> i & 1
    assert all(abs(c - 2000) < 4 * math.sqrt(1000) for c in ones)
    # normals from gauss: mean 0, variance 1
    g = Streams(6)("latency", "t")
    normals = [g.gauss(0.0, 1.0) for _ in range(n)]
    assert abs(statistics.fmean(normals)) < 0.03 and abs(statistics.pvariance(normals) - 1) < 0.05
