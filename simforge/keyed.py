"""Counter-based random draws: the ``n``-th 64-bit word of a stream is a function of the
stream's 64-bit key and ``n`` alone (splitmix64's finaliser over ``key + n * gamma``).

Both of simforge's keyed randomness users draw from here: the fault plan
(:mod:`simforge.faults.plan`: :func:`uniform` at a rule's counter) and the session's named
streams (:mod:`simforge.sim.rng`: a :class:`KeyedRandom` per stream). A key is worked out from
text once (:func:`key_of`, BLAKE2b, stable across processes, Python versions and hash seeds, not
the salted ``hash``) and then combined with a session's seed by integer arithmetic alone
(:func:`seed_key`, :func:`mix`), so nothing is hashed per session beyond the seed itself.

Written here because the standard library has no counter-based generator (``random.Random`` is
a Mersenne Twister: seeding one costs a SHA-512 of a string seed and the 624-word initialisation,
about 5 us, which a short episode paid once for every tool it drew from) and numpy, which has
one, is not a dependency.

This module imports only the standard library: every layer may use it.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
from typing import Any

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15  # splitmix64's increment: 2**64 over the golden ratio
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_TO_UNIT = 2.0**-53


def mix(x: int) -> int:
    """splitmix64's finaliser: a bijection of 64-bit integers that scatters nearby inputs."""
    x = (x ^ (x >> 30)) * _M1 & M64
    x = (x ^ (x >> 27)) * _M2 & M64
    return x ^ (x >> 31)


def _digest(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def key_of(*parts: object) -> int:
    """A 64-bit key from text (a seed, a rule id, a tool name): BLAKE2b, stable across processes
    and hash seeds. Worked out once per session or per profile and tool, never per call."""
    return _digest("\x1f".join(str(p) for p in parts).encode())


def seed_key(seed: int) -> int:
    """The session seed's key: splitmix64 of the seed itself when it is a 64-bit integer (most
    seeds: no hashing per session), else of its text's BLAKE2b."""
    if 0 <= seed <= M64:
        return mix((seed + GAMMA) & M64)
    return mix(key_of(seed, "rule"))


def word(key: int, counter: int) -> int:
    """The ``counter``-th 64-bit word of stream ``key`` (counters count from 0)."""
    return mix((key + (counter + 1) * GAMMA) & M64)


def uniform(key: int, counter: int) -> float:
    """The ``counter``-th uniform of stream ``key``, in (0, 1]: splitmix64 at that position."""
    return ((word(key, counter) >> 11) + 1) * _TO_UNIT


# -- blocks: many words in a handful of big-integer operations -------------------------------

_BLOCK = 64
"""The most words one refill works out: past 32 or so the cost per word stops falling."""
_SCALAR = 4
"""A stream's first words are worked out one at a time (a block costs more than a few)."""

_LITTLE = sys.byteorder == "little"
_LANES: list[tuple[int, int, int]] = [(0, 0, 0)]
"""For each block size ``n``: ``n`` 128-bit lanes of ones, the lanes' mask, and each lane's
counter offset times ``GAMMA`` (lane ``i`` holds word ``n - i`` of the block, so the block's
list comes out last word first, ready to ``pop``)."""
for _n in range(1, _BLOCK + 1):
    _LANES.append((
        sum(1 << 128 * i for i in range(_n)),
        sum(M64 << 128 * i for i in range(_n)),
        sum(((_n - i) * GAMMA & M64) << 128 * i for i in range(_n)),
    ))


def block(key: int, counter: int, n: int) -> list[int]:
    """Words ``counter`` to ``counter + n - 1`` of stream ``key``, the last first (``n`` at most
    64): exactly :func:`word` at each, worked out at once.

    Each word sits in a 128-bit lane of one integer, so that splitmix64's products (128 bits)
    never carry into the next lane; every shift is masked back to the lanes before the next
    product, so a lane sees only its own bits. That is a dozen operations on one
    ``128 * n``-bit integer instead of a dozen per word."""
    if not _LITTLE:  # the lanes are read back as little-endian 64-bit words
        return [word(key, c) for c in range(counter + n - 1, counter - 1, -1)]
    ones, lanes, offsets = _LANES[n]
    x = (((key + counter * GAMMA) & M64) * ones + offsets) & lanes
    x = ((x ^ (x >> 30)) & lanes) * _M1 & lanes
    x = ((x ^ (x >> 27)) & lanes) * _M2 & lanes
    x = (x ^ (x >> 31)) & lanes
    return memoryview(x.to_bytes(16 * n, "little")).cast("Q")[::2].tolist()


class KeyedRandom(random.Random):
    """A ``random.Random`` whose draws are the counter-based words of one 64-bit key.

    ``random()`` is the next word's top 53 bits over ``2**53``, ``getrandbits(k)`` the next
    word's top ``k`` bits (``k`` over 64: as many words as it takes, the first lowest), so every
    draw uses whole words and the stream's state is its key, how many words it has used and
    ``gauss``'s spare normal. Every distribution method of ``random.Random`` (``gauss``,
    ``lognormvariate``, ``choice``, ``shuffle``, ``sample``, ``randint``...) draws through these
    two: defining ``getrandbits`` makes ``random.Random.__init_subclass__`` pick its
    ``_randbelow`` that uses it. ``getstate``/``setstate``, ``pickle`` and ``copy`` carry that
    state; ``seed(x)`` keys the stream from any seed ``random.Random`` accepts (an integer by
    :func:`seed_key`, text or bytes by BLAKE2b, ``None`` from the OS).

    Made from a key (``KeyedRandom(key)``), it costs the object and nothing else until it is
    drawn from: no seeding, no hashing. Its first few words are worked out one at a time; past
    them, in blocks (:func:`block`) as large as what the stream has drawn so far (up to 64),
    so that a stream drawn from once pays for one word and a long one less per word
    (``BENCHMARKS.md``: the kernel). The C Mersenne Twister this class inherits is never seeded
    nor used."""

    STATE = "simforge.keyed/1"  # getstate's first item: a state of another generator is refused

    def __init__(self, key: int = 0) -> None:
        """A stream of the 64-bit ``key`` (not hashed nor checked: the hot path makes these)."""
        self.key = key
        self.used = 0
        """Words worked out so far (those in ``_words`` included: not drawn yet)."""
        self._words: list[int] = []
        """Words worked out ahead and not drawn yet, the next last."""
        self.gauss_next = None

    def _next_word(self) -> int:
        words = self._words
        if words:
            return words.pop()
        n = self.used
        if n < _SCALAR:
            self.used = n + 1
            return word(self.key, n)
        size = n if n < _BLOCK else _BLOCK
        self.used = n + size
        self._words = words = block(self.key, n, size)
        return words.pop()

    def random(self) -> float:
        words = self._words
        return ((words.pop() if words else self._next_word()) >> 11) * _TO_UNIT

    def getrandbits(self, k: int) -> int:
        if k <= 64:
            if k <= 0:
                if k < 0:
                    raise ValueError("number of bits must be non-negative")
                return 0
            words = self._words
            return (words.pop() if words else self._next_word()) >> (64 - k)
        n = -(-k // 64)
        x = 0
        for i in range(n):
            x |= self._next_word() << (64 * i)
        return x >> (64 * n - k)

    def seed(self, a: Any = None, version: int = 2) -> None:
        if a is None:
            key = int.from_bytes(os.urandom(8), "little")
        elif isinstance(a, int):
            key = seed_key(a)
        elif isinstance(a, (str, float)):
            key = key_of(a)
        elif isinstance(a, (bytes, bytearray)):
            key = _digest(bytes(a))
        else:
            raise TypeError("The only supported seed types are: None,\n"
                            "int, float, str, bytes, and bytearray.")
        self.key = key
        self.used = 0
        self._words = []
        self.gauss_next = None

    def getstate(self) -> tuple[Any, ...]:
        return self.STATE, self.key, self.used - len(self._words), self.gauss_next

    def setstate(self, state: tuple[Any, ...]) -> None:
        if not state or state[0] != self.STATE:
            raise ValueError(f"state is not a {type(self).__name__} state: {state[:1]!r}")
        _, key, used, gauss_next = state
        self.key = key
        self.used = used
        self._words = []
        self.gauss_next = gauss_next
