"""Reward agreement: each episode's recorded actions replayed in its task, the simulated
reward against the recorded one, as a confusion matrix."""

from __future__ import annotations

import json

from simforge.audit.fidelity import fidelity, reward_agreement
from simforge.synth.pipeline import synthesize
from simforge.trace.episode import Episode

from .conftest import _cancelled, _order, episode


def _cancel(n: int, oid: str, *, success: bool, task: str, reads: int = 1) -> Episode:
    calls = [("get_order", {"order_id": oid}, _order(oid), None)] * reads
    calls.append(
        (
            "cancel_order",
            {"order_id": oid, "reason": "no longer needed"},
            _cancelled(oid, "no longer needed"),
            None,
        )
    )
    ep = episode(n, calls, success=success)
    ep.task.id = task
    return ep


def _training() -> list[Episode]:
    # pending orders (odd numbers) are cancelled; one task per order
    eps = [_cancel(n, f"#W{n}", success=True, task=f"t{n}") for n in (1, 3, 5, 7, 9)]
    eps.append(_cancel(11, "#W11", success=False, task="t11"))  # the only run of t11 failed
    return eps


def test_the_confusion_matrix_of_other_agents_episodes(tmp_path, snapshot_dir):
    out = tmp_path / "pack"
    synthesize([], out, data=[snapshot_dir], episodes=_training())
    others = [
        _cancel(21, "#W3", success=True, task="t3", reads=2),  # another way to the same end
        _cancel(22, "#W5", success=False, task="t3"),  # the wrong order: production failed it
        _cancel(23, "#W3", success=False, task="t3"),  # production failed what the pack passes
        _cancel(24, "#W7", success=True, task="t5"),  # production passed what the pack fails
        _cancel(25, "#W11", success=True, task="t11"),  # no gold task of t11
        _cancel(26, "#W13", success=True, task="t-unknown"),
    ]
    result = reward_agreement(out, others, details=True)
    assert result["confusion"] == {
        "hit": 1,
        "missed_success": 1,
        "false_success": 1,
        "correct_fail": 1,
        "unscored": 2,
    }
    assert result["episodes"] == 4 and result["agree"] == 2 and result["rate"] == 0.5
    by_episode = {row["episode"]: row for row in result["per_episode"]}
    assert by_episode["ep-22"]["outcome"] == "correct_fail"
    assert "state_matches" in by_episode["ep-22"]["failed"]
    assert by_episode["ep-25"]["why"] == "no gold task"
    # the training episodes in their own tasks: the gold ones agree, the failed one is unscored
    own = fidelity(out, episodes=_training())["reward"]
    assert own["confusion"]["hit"] == 5 and own["confusion"]["unscored"] == 1
    assert own["rate"] == 1.0
    json.dumps(own)
