"""Writers: native JSONL (the canonical, lossless form) and OpenAI-messages JSONL.

The OpenAI form is for tools that speak Chat Completions (fine-tuning sets, eval harnesses): one
``{"id", "messages"}`` object a line, calls as ``tool_calls`` with their original argument text,
results as ``role: "tool"`` messages. It is lossy by nature: timings, outcomes and calls the
simulated *user* made (tau2 telecom) have no place in it and are left out; use native for a
faithful copy.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Literal

import orjson

from simforge.atomic import AtomicFile
from simforge.errors import UsageError
from simforge.trace.episode import Episode, ToolCall
from simforge.trace.formats._common import dumps

ExportFormat = Literal["native", "openai"]


def to_native(episode: Episode) -> bytes:
    """One native JSONL line (without the newline). Defaults are left out: they round-trip."""
    return episode.model_dump_json(exclude_defaults=True).encode()


def _arguments(call: ToolCall) -> str:
    if call.raw_args is not None:
        return call.raw_args
    return dumps(call.args if call.args is not None else {})


def _result_text(call: ToolCall) -> str:
    if call.raw_result is not None:
        return call.raw_result
    if call.result is None:
        return call.error or ""
    if isinstance(call.result, str):
        return call.result
    return dumps(call.result)


def to_openai(episode: Episode) -> dict[str, Any]:
    """The episode as an OpenAI Chat Completions message list (agent-side calls only)."""
    calls = {c.call_id: c for c in episode.tool_calls}
    user_side = {c.call_id for c in episode.tool_calls if c.requestor != "assistant"}
    messages: list[dict[str, Any]] = []
    for message in episode.messages:
        if message.role == "tool":
            if message.call_id is None or message.call_id in user_side:
                continue
            call = calls.get(message.call_id)
            content = message.content if message.content is not None else (
                _result_text(call) if call else "")
            messages.append({"role": "tool", "tool_call_id": message.call_id, "content": content})
            continue
        out: dict[str, Any] = {"role": message.role, "content": message.content}
        tool_calls = [
            {"id": cid, "type": "function",
             "function": {"name": calls[cid].tool, "arguments": _arguments(calls[cid])}}
            for cid in message.tool_call_ids
            if cid in calls and cid not in user_side
        ]
        if tool_calls:
            out["tool_calls"] = tool_calls
        elif message.role == "user" and message.tool_call_ids and not message.content:
            continue
        messages.append(out)
    return {"id": episode.id, "messages": messages}


class EpisodeWriter:
    """Appends episodes to a JSONL file (gzip when the name ends in ``.gz``).

    The file is written under a temporary sibling name and renamed onto ``path`` by
    :meth:`close` (or a clean ``with`` exit): until then the previous file, if any, is left as
    it was, and a run that is killed or fails (:meth:`discard`, or an exception in the ``with``
    block) never leaves a partial file that looks whole.
    """

    def __init__(self, path: str | os.PathLike[str], fmt: ExportFormat = "native") -> None:
        if fmt not in ("native", "openai"):
            raise UsageError(f"unknown export format {fmt!r}; use 'native' or 'openai'")
        self.path = Path(path)
        self.fmt = fmt
        self.count = 0
        self._out = AtomicFile(self.path)
        self._file: gzip.GzipFile | BinaryIO
        if self.path.name.endswith(".gz"):
            self._file = gzip.GzipFile(filename="", mode="wb", fileobj=self._out.file)
        else:
            self._file = self._out.file  # type: ignore[assignment]

    def write(self, episode: Episode) -> None:
        if self.fmt == "native":
            line = to_native(episode)
        else:
            line = orjson.dumps(to_openai(episode), default=str)
        self._file.write(line + b"\n")
        self.count += 1

    def close(self) -> None:
        """Finish the file and move it onto its name."""
        if self._out.closed:
            return
        if self._file is not self._out.file:
            self._file.close()
        self._out.commit()

    def discard(self) -> None:
        """Drop what was written; the previous file at ``path``, if any, stays."""
        if self._out.closed:
            return
        if self._file is not self._out.file:
            self._file.close()
        self._out.discard()

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()


def write_episodes(
    episodes: Iterable[Episode], path: str | os.PathLike[str], fmt: ExportFormat = "native"
) -> int:
    """Write every episode to ``path``; returns how many were written."""
    with EpisodeWriter(path, fmt) as writer:
        for episode in episodes:
            writer.write(episode)
        return writer.count
