"""JSON out for values that came from outside: orjson's speed, and the standard library for the
one thing orjson refuses that JSON allows, integers beyond 64 bits.

A trace may carry such integers (native episodes keep them exact, as pydantic parses them), and
the code that writes what was read (quarantine files, exports, synthesized packs) must not lose a
file to one. The fallback writes the same layout: compact, or two-space indented, keys sorted
when asked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson


def dumps(value: Any, option: int = 0, default: Callable[[Any], Any] | None = None) -> bytes:
    """``orjson.dumps(value, option=option, default=default)``, falling back to :mod:`json`
    when orjson refuses an integer beyond 64 bits (``OPT_SORT_KEYS``, ``OPT_INDENT_2`` and
    ``OPT_NON_STR_KEYS`` are honoured; any other refusal is raised as orjson raised it)."""
    try:
        return orjson.dumps(value, default=default, option=option)
    except TypeError as exc:
        if "64-bit" not in str(exc):
            raise
    indent = 2 if option & orjson.OPT_INDENT_2 else None
    return json.dumps(
        value,
        default=default,
        ensure_ascii=False,
        sort_keys=bool(option & orjson.OPT_SORT_KEYS),
        indent=indent,
        separators=(",", ": ") if indent else (",", ":"),
    ).encode()
