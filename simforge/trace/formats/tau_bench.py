"""tau-bench historical trajectories: an array of ``{task_id, trial, reward, info, traj}``.

``traj`` is an OpenAI chat transcript. Two quirks of the real files shape this adapter: call
ids are reused inside one trajectory (a result answers the call just before it, and ids are
made unique), and tool failures are only visible as results that start with ``Error:``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from simforge.trace.detect import Sample
from simforge.trace.episode import Episode
from simforge.trace.errors import Location, TraceFormatError
from simforge.trace.formats._common import (
    as_dict,
    expect_dict,
    expect_list,
    record_label,
    validate_episode,
)
from simforge.trace.formats._conversation import Conversation
from simforge.trace.registry import FormatAdapter, register_format


@register_format
class TauBenchFormat(FormatAdapter):
    name = "tau_bench"
    description = "tau-bench trajectories ({task_id, trial, reward, info, traj})"
    empty_episodes = False
    values_from_record = True

    def sniff(self, sample: Sample) -> float:
        value = sample.value
        if isinstance(value, dict) and "traj" in value and "task_id" in value:
            return 1.0
        return 0.0

    def parse(self, record: Any, location: Location) -> Iterable[Episode]:
        rec = expect_dict(record, location, "a trajectory")
        traj = expect_list(rec.get("traj"), location, "traj")
        conv = Conversation(error_prefix="Error:")
        for i, message in enumerate(traj):
            try:
                conv.add_openai(message, location)
            except TraceFormatError as exc:
                raise TraceFormatError(location.child(f".traj[{i}]"), exc.reason) from None
        info = as_dict(rec.get("info"))
        task = as_dict(info.get("task"))
        reward_info = as_dict(info.get("reward_info"))
        reward = rec.get("reward")
        task_id = rec.get("task_id")
        trial = rec.get("trial")
        labels = {k: v for k, v in reward_info.items() if k != "reward"}
        metadata = {k: v for k, v in info.items() if k not in ("task", "reward_info")}
        metadata.update({k: v for k, v in rec.items()
                         if k not in ("task_id", "trial", "reward", "info", "traj")})
        if trial is not None:
            metadata["trial"] = trial
        messages, calls = conv.built()
        data = {
            "id": f"task-{task_id}-trial-{trial}" if trial is not None else f"task-{task_id}",
            "source": {"format": self.name, "path": location.path,
                       "record": record_label(location)},
            "task": {
                "id": None if task_id is None else str(task_id),
                "instruction": task.get("instruction"),
                "user_turns": conv.user_turns(),
                "metadata": {k: v for k, v in task.items() if k != "instruction"},
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
