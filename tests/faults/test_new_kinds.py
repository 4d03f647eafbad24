"""Every fault kind beyond the network's: byte and protocol, auth and clock, plausible but
wrong data, tool surface, world events. Each fires, is recorded, is the same for a seed, is
absent with probability 0, and renders on the env API; wire kinds also on real HTTP bytes
(a raw socket client against uvicorn on 127.0.0.1)."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import uvicorn
import yaml

import simforge
from simforge.faults import KINDS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MINI = str(FIXTURES / "scenarios" / "mini.yaml")
GET = {"tool_calls": [{"name": "get_customer", "arguments": {"customer_id": "C-0003"}}]}


def profile(tmp_path: Path, fault: dict[str, Any], *, tools: list[str] | None = None,
            probability: float = 1.0, name: str = "p", when: dict | None = None) -> str:
    rule: dict[str, Any] = {"id": "r1", "fault": fault, "probability": probability,
                            "target": {"tools": tools or ["get_customer"]}}
    if when:
        rule["when"] = when
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "rules": [rule]}))
    return str(path)


def play(faults: str | None, actions: list[Any], seed: int = 0, task: str = "upgrade",
         scenario: str = MINI) -> tuple[list[dict], Any]:
    env = simforge.make(scenario, task=task, faults=faults)
    obs, _ = env.reset(seed=seed)
    seen = [obs]
    for action in actions:
        obs, *_ = env.step(action)
        seen.append(obs)
    return seen, env


def test_at_least_25_kinds_and_each_says_where_it_renders():
    from simforge.faults.library import describe_kinds

    kinds = describe_kinds()
    assert len(kinds) >= 25 and len(KINDS) >= 25
    by = {k["kind"]: k for k in kinds}
    assert "env" in by["wrong_content_type"]["renders"]  # what an in-process agent cannot see
    assert by["header_patch"]["params"]["set"]["required"] is True


WIRE = [
    ({"kind": "malformed_body"}, "malformed_body"),
    ({"kind": "truncated_body", "fraction": 0.5}, "truncated_body"),
    ({"kind": "garbage_body", "size": 32}, "garbage_body"),
]


@pytest.mark.parametrize(("fault", "code"), WIRE)
def test_a_corrupted_body_is_the_error_an_http_library_reports(tmp_path, fault, code):
    seen, env = play(profile(tmp_path, fault), [GET])
    (result,) = seen[1]["results"]
    assert not result["ok"] and result["error"]["status"] == 200
    assert result["error"]["code"] == code
    with pytest.raises(ValueError):  # the body the agent got is not JSON
        json.loads(result["error"]["body"] or "{")
    faults = env.trajectory().simulation.faults
    assert [f.kind for f in faults] == [code]
    # the same seed, the same bytes; probability 0, nothing
    assert play(profile(tmp_path, fault), [GET])[0][1] == seen[1]
    clean, _ = play(profile(tmp_path, fault, probability=0.0, name="off"), [GET])
    assert clean[1]["results"][0]["ok"] is True


def test_a_slow_body_arrives_later_by_its_transfer_time(tmp_path):
    fast, _ = play(None, [GET])
    slow, env = play(profile(tmp_path, {"kind": "slow_body", "bytes_per_second": 10.0}), [GET])
    assert slow[1]["results"][0]["ok"] is True
    body = json.dumps(slow[1]["results"][0]["result"], separators=(",", ":"))
    assert slow[1]["time"] == pytest.approx(fast[1]["time"] + len(body) / 10.0, rel=0.05)


@pytest.mark.parametrize("fault", [{"kind": "wrong_content_type"},
                                   {"kind": "header_patch", "set": {"Retry-After": "0"}}])
def test_header_faults_leave_an_in_process_agent_its_result(tmp_path, fault):
    seen, env = play(profile(tmp_path, fault), [GET])
    assert seen[1]["results"][0]["ok"] is True
    assert [f.kind for f in env.trajectory().simulation.faults] == [fault["kind"]]


def test_an_expired_token_is_401_until_the_refresh_flow_is_followed(tmp_path):
    path = profile(tmp_path, {"kind": "token_expiry", "after": 0, "lifetime": 3600},
                   tools=["*"])
    seen, env = play(path, [
        GET,
        {"tool_calls": [{"name": "refresh_session", "arguments": {}}]},
        GET,
    ])
    assert "refresh_session" in [t["function"]["name"] for t in seen[0]["tools"]]
    first = seen[1]["results"][0]
    assert first["error"]["status"] == 401 and first["error"]["code"] == "token_expired"
    assert "refresh_session" in first["error"]["message"]
    assert seen[2]["results"][0]["ok"] and seen[3]["results"][0]["ok"]


def test_a_revoked_permission_is_403_from_its_time_and_not_transient(tmp_path):
    path = profile(tmp_path, {"kind": "permission_revoked"}, when={"start": 5})
    seen, _ = play(path, [GET, {**GET, "think": 10}])
    assert seen[1]["results"][0]["ok"] is True
    error = seen[2]["results"][0]["error"]
    assert error["status"] == 403 and error["code"] == "permission_denied"
    assert KINDS["permission_revoked"]().is_transient() is False


def test_a_skewed_clock_moves_every_date_a_tool_returns(tmp_path):
    get_order = {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "O-9001"}}]}
    path = profile(tmp_path, {"kind": "clock_skew", "seconds": -86400}, tools=["get_order"])
    clean, _ = play(None, [get_order], scenario="acme/refund-damaged-order-v1",
                    task="within-window")
    skewed, _ = play(path, [get_order], scenario="acme/refund-damaged-order-v1",
                     task="within-window")
    assert clean[1]["results"][0]["result"]["delivered_at"] == "2026-01-06"
    assert skewed[1]["results"][0]["result"]["delivered_at"] == "2026-01-05"


def test_a_wrong_value_is_another_rows_value_consistent_and_wrong(tmp_path):
    path = profile(tmp_path, {"kind": "wrong_value", "field": "email"})
    seen, env = play(path, [GET])
    got = seen[1]["results"][0]["result"]
    truth = env.session.world.get("Customer", "C-0003")
    others = {r["email"] for r in env.session.world.rows("Customer")}
    assert got["email"] != truth["email"] and got["email"] in others
    assert got["id"] == "C-0003"


def test_a_body_patch_and_a_long_output(tmp_path):
    patched, _ = play(profile(tmp_path, {"kind": "body_patch",
                                         "patch": {"tier": "platinum", "balance": None}}), [GET])
    result = patched[1]["results"][0]["result"]
    assert result["tier"] == "platinum" and "balance" not in result
    long, _ = play(profile(tmp_path, {"kind": "long_output", "chars": 5000}, name="l"), [GET])
    result = long[1]["results"][0]["result"]
    assert result["id"] == "C-0003" and len(result["debug_log"]) >= 5000


def test_renamed_tools_are_called_by_their_new_names_and_recorded_by_their_real_ones(tmp_path):
    path = profile(tmp_path, {"kind": "tool_rename"}, tools=["get_customer", "upgrade_customer"])
    env = simforge.make(MINI, task="upgrade", faults=path)
    obs, _ = env.reset(seed=1)
    names = {t["function"]["name"] for t in obs["tools"]}
    assert "get_customer" not in names and "upgrade_customer" not in names
    renamed = env.privileged_task().oracle[0].calls[0].tool
    assert renamed in names and renamed != "get_customer"
    obs, *_ = env.step({"tool_calls": [{"name": "get_customer", "arguments": {
        "customer_id": "C-0003"}}]})
    assert obs["results"][0]["error"]["status"] == 404
    obs, *_ = env.step({"tool_calls": [{"name": renamed, "arguments": {"customer_id": "C-0003"}}]})
    assert obs["results"][0]["ok"] is True
    call = env.trajectory().tool_calls[-1]
    assert call.tool == "get_customer" and call.metadata["called_as"]["name"] == renamed
    assert "tool_rename" in [f.kind for f in env.trajectory().simulation.faults]


def test_the_oracle_solves_the_task_under_every_surface_kind(tmp_path):
    from simforge.policies.scripted import OraclePolicy
    from simforge.runs.episode import run_episode

    for i, fault in enumerate([{"kind": "tool_rename"}, {"kind": "distractor_tools", "count": 2},
                               {"kind": "param_rename", "rename": {"customer_id": "id"}}]):
        path = profile(tmp_path, fault, tools=["get_customer", "upgrade_customer"], name=f"s{i}")
        env = simforge.make(MINI, task="upgrade", faults=path)
        for seed in range(3):
            result = run_episode(env, OraclePolicy(), seed=seed, task="upgrade")
            assert result.reward == 1.0, (fault, seed, result.failed)


def test_a_distractor_looks_right_and_is_retired(tmp_path):
    path = profile(tmp_path, {"kind": "distractor_tools", "count": 1})
    env = simforge.make(MINI, task="upgrade", faults=path)
    obs, _ = env.reset(seed=0)
    extra = [t for t in obs["tools"] if t["function"]["name"] not in env.pack.catalog]
    assert len(extra) == 1
    schema = extra[0]["function"]["parameters"]
    assert schema == env.pack.catalog["get_customer"].spec.input_schema
    obs, *_ = env.step({"tool_calls": [{"name": extra[0]["function"]["name"],
                                        "arguments": {"customer_id": "C-0003"}}]})
    assert obs["results"][0]["error"]["status"] == 410


def test_a_renamed_parameter_until_a_later_step(tmp_path):
    path = profile(tmp_path, {"kind": "param_rename", "rename": {"customer_id": "id"},
                              "until": 30})
    env = simforge.make(MINI, task="upgrade", faults=path)
    obs, _ = env.reset(seed=0)
    tool = next(t for t in obs["tools"] if t["function"]["name"] == "get_customer")
    assert "id" in tool["function"]["parameters"]["properties"]
    old, *_ = env.step(GET)
    assert old["results"][0]["error"]["status"] == 422
    new, *_ = env.step({"tool_calls": [{"name": "get_customer", "arguments": {"id": "C-0003"}}]})
    assert new["results"][0]["ok"] is True
    later, *_ = env.step({**GET, "think": 40})
    assert later["results"][0]["ok"] is True and "tools" in later
    assert env.trajectory().tool_calls[1].args == {"customer_id": "C-0003"}


def test_a_delayed_tool_appears_later_and_the_observation_says_so(tmp_path):
    path = profile(tmp_path, {"kind": "tool_delayed", "until": 20})
    env = simforge.make(MINI, task="upgrade", faults=path)
    obs, _ = env.reset(seed=0)
    assert "get_customer" not in [t["function"]["name"] for t in obs["tools"]]
    early, *_ = env.step(GET)
    assert early["results"][0]["error"]["status"] == 404 and "tools" not in early
    later, *_ = env.step({**GET, "think": 30})
    assert later["results"][0]["ok"] is True
    assert "get_customer" in [t["function"]["name"] for t in later["tools"]]


def test_world_events_change_the_world_and_the_agent_is_not_blamed(tmp_path):
    path = tmp_path / "busy.yaml"
    path.write_text(yaml.safe_dump({"name": "busy", "background": [{
        "kind": "event", "name": "upgrades", "tool": "upgrade_customer", "entity": "Customer",
        "every": 5, "where": {"tier": "standard"}, "args": {"customer_id": "$id"},
        "limit": 3}]}))
    env = simforge.make(MINI, task="upgrade", faults=str(path))
    env.reset(seed=0)
    env.step({"tool_calls": [{"name": "upgrade_customer", "arguments": {
        "customer_id": "C-0003"}}], "think": 1})
    obs, reward, *_ , info = env.step({"final_answer": "C-0003 is now gold.", "think": 60})
    sim = env.trajectory().simulation
    assert len(sim.world_events) == 3 and all(e["tool"] == "upgrade_customer"
                                              for e in sim.world_events)
    others = {c["id"] for e in sim.world_events for c in e["changed"]}
    assert others and {c.id for c in sim.world_diff} >= others
    assert "no_collateral_damage" not in info["score"]["failed"], info["score"]


def _serve(faults: str) -> tuple[uvicorn.Server, threading.Thread, int]:
    from simforge.serve.app import create_app

    app = create_app(MINI, time_scale=0.001, token="t", faults=faults)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    return server, thread, port


def _raw(port: int) -> bytes:
    body = b'{"customer_id": "C-0003"}'
    request = (b"POST /tools/get_customer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
               b"\r\nConnection: close\r\nContent-Length: " + str(len(body)).encode()
               + b"\r\n\r\n" + body)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("fault", [
    {"kind": "truncated_body", "fraction": 0.4},
    {"kind": "garbage_body", "size": 40},
    {"kind": "malformed_body"},
    {"kind": "wrong_content_type"},
    {"kind": "header_patch", "set": {"X-Proxy": "in-the-way"}},
    {"kind": "slow_body", "bytes_per_second": 400.0},
])
def test_wire_faults_are_real_bytes_on_the_socket(tmp_path, fault):
    server, thread, port = _serve(profile(tmp_path, fault))
    try:
        raw = _raw(port)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    head, _, body = raw.partition(b"\r\n\r\n")
    headers = dict(
        line.split(b": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line
    )
    length = int(headers.get(b"content-length", b"-1"))
    kind = fault["kind"]
    if kind in ("truncated_body", "garbage_body"):
        assert len(body) < length  # promised more than it sent, then closed
    if kind in ("truncated_body", "garbage_body", "malformed_body"):
        with pytest.raises(ValueError):
            json.loads(body)
    if kind == "wrong_content_type":
        assert headers[b"content-type"].startswith(b"text/html")
        assert json.loads(body)["id"] == "C-0003"
    if kind == "header_patch":
        assert headers[b"x-proxy"] == b"in-the-way"
    if kind == "slow_body":
        assert json.loads(body)["id"] == "C-0003" and len(body) == length
