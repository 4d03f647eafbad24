"""The catalog from what the traces declare: tools offered to the agent enter the pack with
their own description and parameters, called or not, in every format that declares them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simforge.synth.pipeline import synthesize
from simforge.trace import iter_episodes

from ..conftest import REPO_ROOT, shared_data_dir

THINK = {
    "name": "think",
    "description": "Use the tool to think about something. It will not obtain new information.",
    "parameters": {
        "type": "object",
        "properties": {"thought": {"type": "string", "description": "A thought to think about."}},
        "required": ["thought"],
    },
}
GET_EMPLOYEE = {
    "name": "get_employee",
    "description": "Look up an employee by id: name, department, manager and status.",
    "parameters": {
        "type": "object",
        "properties": {
            "employee_id": {"type": "string", "description": "E-1234"},
            "fields": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["employee_id"],
    },
}


def _openai(tmp_path: Path) -> Path:
    out = tmp_path / "openai.jsonl"
    tools = [{"type": "function", "function": d} for d in (THINK, GET_EMPLOYEE)]
    lines = []
    for line in (REPO_ROOT / "examples/traces/acme-openai.jsonl").read_text().splitlines():
        record = json.loads(line)
        record["tools"] = tools
        lines.append(json.dumps(record))
    out.write_text("\n".join(lines) + "\n")
    return out


def _otlp(tmp_path: Path) -> Path:
    doc = json.loads((REPO_ROOT / "examples/traces/acme-otlp.json").read_text())
    value = {"stringValue": json.dumps([{"type": "function", **d} for d in (THINK, GET_EMPLOYEE)])}
    for resource in doc["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                if span["name"].startswith("chat"):
                    span["attributes"].append({"key": "gen_ai.tool.definitions", "value": value})
    out = tmp_path / "otlp.json"
    out.write_text(json.dumps(doc))
    return out


def _langsmith(tmp_path: Path) -> Path:
    runs = json.loads((REPO_ROOT / "tests/trace/fixtures/langsmith_runs.json").read_text())
    lookup = {**GET_EMPLOYEE, "name": "lookup_user"}
    for run in runs:
        if run["run_type"] == "llm":
            run["extra"] = {
                "invocation_params": {
                    "tools": [{"type": "function", "function": d} for d in (THINK, lookup)]
                }
            }
    out = tmp_path / "langsmith.json"
    out.write_text(json.dumps(runs))
    return out


def _tools(folder: Path) -> dict[str, dict]:
    return {t["spec"]["name"]: t for t in json.loads((folder / "tools.json").read_text())}


@pytest.mark.parametrize("fmt", ["openai", "otlp"])
def test_a_declared_tool_never_called_is_in_the_catalog_with_its_own_words(tmp_path, fmt):
    traces = {"openai": _openai, "otlp": _otlp}[fmt](tmp_path)
    episodes = list(iter_episodes([traces]))
    assert episodes[0].metadata["tool_definitions"][0]["name"] == "think"
    report = synthesize([traces], tmp_path / "pack")
    assert report.declared_only == ["think"]
    tools = _tools(tmp_path / "pack")
    think = tools["think"]
    assert think["spec"]["description"] == THINK["description"]
    assert think["spec"]["input_schema"] == THINK["parameters"]
    assert think["handler"]["kind"] == "declared"
    # a called tool speaks in its declared words, with its declared parameters
    employee = tools["get_employee"]["spec"]
    assert employee["description"] == GET_EMPLOYEE["description"]
    assert employee["input_schema"]["properties"]["fields"] == {
        "type": "array",
        "items": {"type": "string"},
    }
    assert employee["input_schema"]["required"] == ["employee_id"]
    # and the pack loads, the declared tool refusing plainly
    import simforge

    env = simforge.make(str(tmp_path / "pack" / "scenario.yaml"))
    obs, _ = env.reset(seed=0)
    offered = {t["function"]["name"] for t in obs["tools"]}
    assert "get_employee" in offered
    from simforge.synth.pack.loader import load_synth_pack

    assert "think" in load_synth_pack(tmp_path / "pack").catalog


def test_langsmith_declarations_reach_the_episode(tmp_path):
    episodes = list(iter_episodes([_langsmith(tmp_path)]))
    declared = episodes[0].metadata["tool_definitions"]
    assert [d["name"] for d in declared] == ["think", "lookup_user"]
    assert declared[0]["parameters"] == THINK["parameters"]


def test_tau2_tool_defs_reach_the_episode(tmp_path):
    shared = shared_data_dir()
    if not shared.is_dir():
        pytest.skip(f"real-world traces not present at {shared}")
    source = shared / "tau2-bench/results/gpt-4.1_airline_default_gpt-4.1_1trials.json"
    doc = json.loads(source.read_text())
    doc["info"]["environment_info"]["tool_defs"] = {
        "think": {k: v for k, v in THINK.items() if k != "name"}
    }
    doc["simulations"] = doc["simulations"][:2]
    out = tmp_path / "tau2.json"
    out.write_text(json.dumps(doc))
    episodes = list(iter_episodes([out]))
    assert episodes[0].metadata["tool_definitions"] == [THINK]
