"""tau2-bench results files: ``{timestamp, info, tasks, simulations}``.

Each simulation is one episode. The adapter reads the (small) ``tasks`` list first, so that an
episode carries its task's instruction, then streams ``simulations`` one by one. What tau2
records and simforge keeps: wall-clock timestamps of every message (ISO strings, naive, taken as
UTC), the requestor of every call (the simulated user calls tools in telecom), the ``error``
flag of tool messages, parallel calls (several calls in one message share ``message_index``),
``reward_info`` (the outcome), ``termination_reason`` (metadata and a label), the agent
policy of the domain (``info.environment_info.policy``, as ``metadata["policy"]``) and the
domain's declared tools (``info.environment_info.tool_defs``, when the file has them, as
``metadata["tool_definitions"]``). Of ``raw_data``,
the provider's verbatim response, only ``finish_reason`` is kept: the rest repeats the message.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from simforge.trace.detect import Sample
from simforge.trace.episode import Episode
from simforge.trace.errors import Location, TraceFormatError
from simforge.trace.formats._common import (
    Json,
    expect_dict,
    expect_list,
    record_label,
    text_of,
    to_epoch,
    validate_episode,
)
from simforge.trace.formats._conversation import REQUESTORS, Conversation, role_of
from simforge.trace.formats.openai import tool_definitions
from simforge.trace.reader import Document, Record
from simforge.trace.registry import FormatAdapter, register_format

_MESSAGE_KEYS = frozenset(
    {"role", "content", "tool_calls", "timestamp", "raw_data", "id", "requestor", "error"}
)
_SIMULATION_KEYS = frozenset({"id", "task_id", "messages", "reward_info"})


def _instruction(task: Json) -> str | None:
    scenario = task.get("user_scenario")
    instructions = scenario.get("instructions") if isinstance(scenario, dict) else None
    if isinstance(instructions, str) or instructions is None:
        return instructions
    if isinstance(instructions, dict):
        parts = [f"{key}: {value}" for key, value in instructions.items()
                 if isinstance(value, str) and value and key != "domain"]
        return "\n".join(parts) or None
    return text_of(instructions)


@register_format
class Tau2Format(FormatAdapter):
    name = "tau2"
    description = "tau2-bench results files ({info, tasks, simulations})"
    empty_episodes = False
    values_from_record = True

    def __init__(self) -> None:
        self.tasks: dict[str, Json] = {}
        self.domain: str | None = None
        self.policy: str | None = None
        self.tools: list[Json] | None = None

    def sniff(self, sample: Sample) -> float:
        value = sample.value
        if isinstance(value, dict):
            if "simulations" in value and ("tasks" in value or "info" in value):
                return 1.0
            if "messages" in value and "reward_info" in value and "task_id" in value:
                return 0.95
        return 0.0

    def records(self, doc: Document) -> Iterator[Record]:
        if doc.layout == "jsonl":
            return doc.lines(parse=True)
        if doc.layout == "array":
            return doc.items("item")
        head = doc.skeleton()
        if not (isinstance(head, dict) and "simulations" in head):
            return doc.items("")
        tasks = doc.top_level("tasks")
        if isinstance(tasks, list):
            self.tasks = {str(t.get("id")): t for t in tasks if isinstance(t, dict)}
        info = doc.top_level("info")
        env = info.get("environment_info") if isinstance(info, dict) else None
        if isinstance(env, dict):
            self.domain = env.get("domain_name")
            policy = env.get("policy")
            self.policy = policy if isinstance(policy, str) and policy.strip() else None
            self.tools = tool_definitions(env.get("tool_defs"))
        return doc.items("simulations.item")

    def parse(self, record: Any, location: Location) -> Iterable[Episode]:
        sim = expect_dict(record, location, "a simulation")
        messages = expect_list(sim.get("messages"), location, "messages")
        conv = Conversation()
        for i, raw in enumerate(messages):
            try:
                self._add(conv, raw, location)
            except TraceFormatError as exc:
                raise TraceFormatError(location.child(f".messages[{i}]"), exc.reason) from None
        task_id = sim.get("task_id")
        task = self.tasks.get(str(task_id), {})
        reward_info = sim.get("reward_info")
        reward_info = reward_info if isinstance(reward_info, dict) else {}
        reward = reward_info.get("reward")
        termination = sim.get("termination_reason")
        metadata = {k: v for k, v in sim.items() if k not in _SIMULATION_KEYS}
        for key in ("start_time", "end_time", "timestamp"):
            if key in metadata:
                metadata[f"{key}_epoch"] = to_epoch(metadata[key])
        if self.domain is not None:
            metadata["domain"] = self.domain
        if self.policy is not None:
            metadata["policy"] = self.policy  # one string shared by every episode of the file
        if self.tools is not None:
            metadata["tool_definitions"] = self.tools
        labels = dict(reward_info)
        labels.pop("reward", None)
        if termination is not None:
            labels["termination_reason"] = termination
        messages, calls = conv.built()
        data = {
            "id": str(sim.get("id") or f"{task_id}-{sim.get('trial')}"),
            "source": {"format": self.name, "path": location.path,
                       "record": record_label(location)},
            "task": {
                "id": None if task_id is None else str(task_id),
                "instruction": _instruction(task),
                "user_turns": conv.user_turns(),
                "metadata": {k: v for k, v in task.items() if k != "id"},
            },
            "messages": messages,
            "tool_calls": calls,
            "outcome": {
                "reward": reward if isinstance(reward, int | float) else None,
                "success": (reward >= 1.0) if isinstance(reward, int | float) else None,
                "labels": labels,
            },
            "metadata": metadata,
        }
        return (validate_episode(data, location),)

    def _add(self, conv: Conversation, raw: Any, location: Location) -> None:
        if not isinstance(raw, dict):
            raise TraceFormatError(location, "a message is not an object")
        get = raw.get
        role = role_of(get("role"), location)
        meta = {k: v for k, v in raw.items() if v is not None and k not in _MESSAGE_KEYS}
        raw_data = get("raw_data")
        if isinstance(raw_data, dict) and raw_data.get("finish_reason") is not None:
            meta["finish_reason"] = raw_data["finish_reason"]
        content = get("content")
        stamp = to_epoch(get("timestamp"))
        # Keys equal to a field's default are left out: validation then skips them.
        message: Json = {"role": role}
        if content is not None:
            message["content"] = content if type(content) is str else text_of(content)
        if stamp is not None:
            message["timestamp"] = stamp
        if role == "tool":
            source_id = get("id")
            call = conv.answer(source_id, content, error=bool(get("error")), ended_at=stamp)
            if call is not None:
                message["call_id"] = call["call_id"]
            else:
                meta["tool_call_id"] = source_id
            if get("requestor") is not None:
                meta["requestor"] = raw["requestor"]
        else:
            tool_calls = get("tool_calls")
            if tool_calls is not None and type(tool_calls) is not list:
                raise TraceFormatError(location,
                                       f"tool_calls is not an array: {tool_calls!r:.40}")
            if tool_calls:
                index = len(conv.messages)
                ids = []
                for tc in tool_calls:
                    if not isinstance(tc, dict):
                        raise TraceFormatError(location, "a tool call is not an object")
                    requestor = tc.get("requestor") or ("user" if role == "user" else "assistant")
                    if requestor not in REQUESTORS:
                        raise TraceFormatError(location, f"unknown requestor {requestor!r} of a "
                                               f"tool call (expected one of {REQUESTORS})")
                    call = conv.add_call(tc.get("id"), tc.get("name"), tc.get("arguments"),
                                         location, message_index=index, requestor=requestor,
                                         started_at=stamp)
                    ids.append(call["call_id"])
                message["tool_call_ids"] = ids
        if meta:
            message["metadata"] = meta
        conv.messages.append(message)
