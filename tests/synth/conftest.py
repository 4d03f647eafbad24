"""Small hand-made episodes of a shop: orders (in a snapshot) and users, with reads, writes,
errors, a calculator and a multi-turn dialogue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simforge.trace.episode import Episode, Message, Outcome, Source, ToolCall

ORDERS = {
    f"#W{n}": {
        "order_id": f"#W{n}",
        "user_id": f"user_{n % 3}",
        "status": "pending" if n % 2 else "delivered",
        "items": [{"item_id": f"{1000 + n}", "price": 10.0 + n}],
        "payment_history": [{"kind": "payment", "amount": 10.0 + n, "method": f"card_{n}"}],
    }
    for n in range(1, 21)
}


def _order(id: str, **changes: Any) -> dict[str, Any]:
    return {**ORDERS[id], **changes}


def _cancelled(id: str, reason: str) -> dict[str, Any]:
    row = ORDERS[id]
    refunds = [
        {"kind": "refund", "amount": p["amount"], "method": p["method"]}
        for p in row["payment_history"]
    ]
    return {
        **row,
        "status": "cancelled",
        "reason": reason,
        "payment_history": row["payment_history"] + refunds,
    }


def episode(
    n: int, calls: list[tuple[str, dict[str, Any], Any, str | None]], success: bool = True
) -> Episode:
    tool_calls = []
    messages = [Message(role="user", content=f"Hello, I am customer {n}.", timestamp=100.0 * n)]
    t = 100.0 * n + 1
    for i, (tool, args, result, error) in enumerate(calls):
        call_id = f"c{n}_{i}"
        messages.append(Message(role="assistant", tool_call_ids=[call_id], timestamp=t))
        tool_calls.append(
            ToolCall(
                call_id=call_id,
                tool=tool,
                args=args,
                result=result,
                error=error,
                started_at=t,
                ended_at=t + 0.1,
                message_index=len(messages) - 1,
            )
        )
        messages.append(
            Message(role="tool", call_id=call_id, content=json.dumps(result), timestamp=t + 0.1)
        )
        t += 2
    messages.append(Message(role="user", content="Thanks, that is all.", timestamp=t))
    messages.append(Message(role="assistant", content="Done.", timestamp=t + 1))
    return Episode(
        id=f"ep-{n}",
        source=Source(format="native"),
        messages=messages,
        tool_calls=tool_calls,
        outcome=Outcome(success=success, reward=1.0 if success else 0.0),
    )


def shop_episodes() -> list[Episode]:
    eps = []
    for n in range(1, 16, 2):  # pending orders get cancelled
        oid = f"#W{n}"
        reason = "no longer needed" if n % 4 == 1 else "ordered by mistake"
        eps.append(
            episode(
                n,
                [
                    ("get_order", {"order_id": oid}, _order(oid), None),
                    (
                        "cancel_order",
                        {"order_id": oid, "reason": reason},
                        _cancelled(oid, reason),
                        None,
                    ),
                    ("get_order", {"order_id": oid}, _cancelled(oid, reason), None),
                ],
            )
        )
    for n in range(2, 12, 2):  # delivered orders cannot be cancelled; unknown ids
        oid = f"#W{n}"
        eps.append(
            episode(
                n,
                [
                    ("get_order", {"order_id": oid}, _order(oid), None),
                    (
                        "cancel_order",
                        {"order_id": oid, "reason": "no longer needed"},
                        "Error: order is not pending",
                        "Error: order is not pending",
                    ),
                    (
                        "get_order",
                        {"order_id": f"#X{n}"},
                        "Error: order not found",
                        "Error: order not found",
                    ),
                    (
                        "calculate",
                        {"expression": f"{n} * 1.5 + 2"},
                        str(round(n * 1.5 + 2, 2)),
                        None,
                    ),
                ],
            )
        )
    eps.append(
        Episode(
            id="ep-empty",
            source=Source(format="native"),
            messages=[Message(role="user", content="hi")],
        )
    )
    return eps


@pytest.fixture
def snapshot_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "orders.json").write_text(json.dumps(ORDERS))
    return folder


@pytest.fixture
def shop_pack(tmp_path: Path, snapshot_dir: Path) -> Path:
    from simforge.synth.pipeline import synthesize

    out = tmp_path / "pack"
    synthesize([], out, data=[snapshot_dir], episodes=shop_episodes())
    return out
