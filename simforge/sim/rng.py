"""Named random streams derived from one session seed.

Each stream is keyed by a name such as ``("latency", "get_order")``, so drawing for one tool
never shifts the draws of another: an agent that calls a tool one more time changes nothing
about the schedule of the others. ``random.Random`` seeded from a string is stable across
processes and Python runs (it hashes with SHA-512, not the salted ``hash``).
"""

from __future__ import annotations

import random


class Streams:
    __slots__ = ("_streams", "seed")

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._streams: dict[tuple[str, ...], random.Random] = {}

    def __call__(self, *key: str) -> random.Random:
        stream = self._streams.get(key)
        if stream is None:
            stream = random.Random(f"{self.seed}\x1f" + "\x1f".join(key))
            self._streams[key] = stream
        return stream
