"""Named random streams derived from one session seed.

Each stream is keyed by a name such as ``("latency", "get_order")``, so drawing for one tool
never shifts the draws of another: an agent that calls a tool one more time changes nothing
about the schedule of the others.

A stream is a :class:`~simforge.keyed.KeyedRandom`: a ``random.Random`` whose ``random()`` and
``getrandbits()`` are counter-based draws (splitmix64) of one 64-bit integer, the stream's key,
``mix(name key + seed * gamma)``: the seed-th output of a splitmix64 sequence started at the
name's key, a BLAKE2b of the name's text worked out once per process and name (:func:`key_of`
with a prefix of its own, so no fault rule's key is a stream's). A session hashes nothing (a
seed outside 64 bits excepted, hashed once), a stream costs one ``mix`` and an object, and one
never drawn from costs nothing more. Draws are the same in every process, Python run and hash seed;
the fault plan (:mod:`simforge.faults.plan`) draws its decisions the same way.

Hand-written because the standard library has no counter-based generator (numpy has, and is not
a dependency): the streams were ``random.Random(f"{seed}\\x1f{name}")``, a SHA-512 and a
624-word Mersenne Twister initialisation on each stream's first draw, about 5 us, which a short
episode paid on most of its calls (issue 24). A pure-Python draw costs more than the C
generator's, so a stream drawn from often works its words out in blocks
(:func:`~simforge.keyed.block`); ``docs/architecture.md`` and ``BENCHMARKS.md`` give the trade.
"""

from __future__ import annotations

from simforge.keyed import GAMMA, M64, KeyedRandom, key_of, mix

_NAME_KEYS: dict[tuple[str, ...], int] = {}
"""Each stream name's key, worked out once per process (a name is a kind and a tool: few)."""
_MOST_NAMES = 1 << 16  # past this many names (a runaway caller), the cache starts over


def name_key(key: tuple[str, ...]) -> int:
    """A stream name's 64-bit key: BLAKE2b of ``stream\\x1f`` and its parts, once per process."""
    part = _NAME_KEYS.get(key)
    if part is None:
        if len(_NAME_KEYS) >= _MOST_NAMES:
            _NAME_KEYS.clear()
        part = _NAME_KEYS[key] = key_of("stream", *key)
    return part


class Streams:
    __slots__ = ("_key", "_streams", "seed")

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._key = seed * GAMMA & M64 if 0 <= seed <= M64 else key_of("streams", seed)
        self._streams: dict[tuple[str, ...], KeyedRandom] = {}

    def __call__(self, *key: str) -> KeyedRandom:
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = KeyedRandom(mix((self._key + name_key(key)) & M64))
        return stream
