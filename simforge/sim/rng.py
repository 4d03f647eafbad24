"""Named random streams derived from one session seed.

Each stream is keyed by a name such as ``("latency", "get_order")``, so drawing for one tool
never shifts the draws of another: an agent that calls a tool one more time changes nothing
about the schedule of the others. A stream draws exactly what ``random.Random(material)`` with
the string ``material = f"{seed}\\x1f{key...}"`` draws, which is stable across processes and
Python runs (a string seed is hashed with SHA-512, not the salted ``hash``).

Seeding a Mersenne Twister costs a few microseconds (the SHA-512 and the 624-word state), and
a short episode asks for a stream per tool it calls (latency, errors, handler) though most of
them are never drawn from: a constant latency, a tool without an error rate and a handler that
draws nothing leave theirs untouched. So a stream is seeded on its first draw
(:class:`LazyRandom`), and one that is never drawn from costs a dict entry.
"""

from __future__ import annotations

import random
from typing import Any


class LazyRandom(random.Random):
    """``random.Random(material)``, seeded when it is first drawn from or inspected.

    Written here because the standard library has no deferred seeding. Every draw of
    ``random.Random`` goes through ``random()`` or ``getrandbits()``; until the first one, the
    instance shadows both with a method that seeds and then removes the shadow, so later draws
    run the C methods directly. ``getstate``, ``setstate`` and ``seed`` (and so ``pickle`` and
    ``copy``) see the seeded generator."""

    def __init__(self, material: Any = None) -> None:
        self._material = material
        self.gauss_next = None
        self.random = self._first_random  # type: ignore[method-assign]
        self.getrandbits = self._first_getrandbits  # type: ignore[method-assign]

    def _unshadow(self) -> bool:
        """Drop the first-draw shadows (the C methods answer from now on); whether there were."""
        if "random" not in self.__dict__:
            return False
        del self.random
        del self.getrandbits
        return True

    def _seed_now(self) -> None:
        if self._unshadow():
            super().seed(self._material)

    def _first_random(self) -> float:
        self._seed_now()
        return self.random()

    def _first_getrandbits(self, k: int) -> int:
        self._seed_now()
        return self.getrandbits(k)

    def seed(self, a: Any = None, version: int = 2) -> None:
        self._unshadow()
        super().seed(a, version)

    def getstate(self) -> tuple[Any, ...]:
        self._seed_now()
        return super().getstate()

    def setstate(self, state: tuple[Any, ...]) -> None:
        self._unshadow()
        super().setstate(state)


class Streams:
    __slots__ = ("_streams", "seed")

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._streams: dict[tuple[str, ...], random.Random] = {}

    def __call__(self, *key: str) -> random.Random:
        stream = self._streams.get(key)
        if stream is None:
            stream = LazyRandom(f"{self.seed}\x1f" + "\x1f".join(key))
            self._streams[key] = stream
        return stream
