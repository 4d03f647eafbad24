"""Whether a tool reads or writes, learned from what its calls show: a lookup by a field other
than the key returns a stored row (it creates nothing), a usage view that shows part of a row
(numbers as text, a field joined from elsewhere) changes nothing, and a ``get_`` tool whose rows
differ from the snapshot shows each episode's initial state, not a write. Tools that really
change rows stay writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simforge.synth.pack.files import read_json
from simforge.synth.pipeline import synthesize
from simforge.trace.episode import Episode

from .conftest import episode

CUSTOMERS = {
    f"C{n}": {
        "customer_id": f"C{n}",
        "full_name": f"Customer {n}",
        "phone_number": f"555-000-{n:04d}",
        "line_ids": [f"L{n}"],
    }
    for n in range(1, 9)
}
LINES = {
    f"L{n}": {
        "line_id": f"L{n}",
        "phone_number": f"555-000-{n:04d}",
        "status": "Active",
        "plan_id": "P1",
        "data_used_gb": 1.5 + n,
    }
    for n in range(1, 9)
}


def _episodes() -> list[Episode]:
    eps = []
    for n in range(1, 9):
        customer, line = CUSTOMERS[f"C{n}"], dict(LINES[f"L{n}"])
        line["data_used_gb"] += 10.0  # each task starts from its own usage (initial state)
        usage = {
            "line_id": line["line_id"],
            "data_used_gb": str(line["data_used_gb"]),
            "data_limit_gb": "5.0",
            "cycle_end_date": "2025-02-28",
        }
        suspended = {**line, "status": "Suspended"}
        topped = {**suspended, "data_used_gb": 0.0}
        phone = {"phone_number": customer["phone_number"]}
        ids = {"customer_id": customer["customer_id"], "line_id": line["line_id"]}
        eps.append(
            episode(
                n,
                [
                    ("get_customer_by_phone", phone, customer, None),
                    ("get_line_details", {"line_id": line["line_id"]}, line, None),
                    ("get_data_usage", ids, usage, None),
                    ("suspend_line", {"line_id": line["line_id"]}, suspended, None),
                    ("zero_usage_counter", {"line_id": line["line_id"]}, topped, None),
                ],
            )
        )
    return eps


def _kinds(out: Path) -> dict[str, str]:
    return {t["spec"]["name"]: t["handler"]["kind"] for t in read_json(out / "tools.json")}


def test_reads_are_not_learned_as_writes_with_a_snapshot(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "customers.json").write_text(json.dumps(CUSTOMERS))
    (data / "lines.json").write_text(json.dumps(LINES))
    out = tmp_path / "pack"
    synthesize([], out, data=[data], episodes=_episodes())
    kinds = _kinds(out)
    reads = ("get_customer_by_phone", "get_line_details", "get_data_usage")
    assert not {t: kinds[t] for t in reads if kinds[t] in ("create", "update")}, kinds
    # the phone number finds the stored customer
    assert kinds["get_customer_by_phone"] == "find"
    assert kinds["suspend_line"] == "update"
    # named like neither, it changes the row it names in every call: a write by behaviour
    assert kinds["zero_usage_counter"] == "update"


def test_a_partial_usage_view_is_no_write_without_a_snapshot(tmp_path: Path) -> None:
    out = tmp_path / "pack"
    synthesize([], out, episodes=_episodes())
    kinds = _kinds(out)
    assert kinds["get_data_usage"] not in ("create", "update"), kinds
    assert kinds["get_line_details"] not in ("create", "update"), kinds
    assert kinds["suspend_line"] == "update"


def test_tau2_telecom_reads_stay_reads(tmp_path: Path, shared_data: Path) -> None:
    traces = shared_data / "tau2-bench/results/gpt-4.1_telecom_default_gpt-4.1_1trials.json"
    snapshot = shared_data / "tau2-bench/domains/telecom"
    for name, data in (("bare", []), ("snapshot", [snapshot])):
        out = tmp_path / name
        synthesize([traces], out, data=data)
        kinds: dict[str, Any] = _kinds(out)
        for tool in ("get_customer_by_phone", "get_data_usage", "get_details_by_id"):
            assert kinds[tool] not in ("create", "update"), (name, tool, kinds[tool])
