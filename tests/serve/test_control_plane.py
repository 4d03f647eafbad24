"""The control plane: sessions created, stepped, finished, scored, behind the token."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

import simforge.faults.library

from .conftest import ACME, AUTH, TOKEN, asgi_client, create_session

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": TOKEN},
        {"Authorization": "Basic !!!"},
        {"X-Simforge-Session": "default"},
    ],
)
async def test_every_control_route_needs_the_token(client, headers):
    for method, path in [
        ("POST", "/sessions"),
        ("GET", "/sessions"),
        ("GET", "/sessions/default"),
        ("POST", "/sessions/default/reset"),
        ("POST", "/sessions/default/step"),
        ("POST", "/sessions/default/finish"),
        ("GET", "/sessions/default/score"),
        ("GET", "/sessions/default/trajectory"),
        ("DELETE", "/sessions/default"),
    ]:
        r = await client.request(method, path, headers=headers, json={})
        assert r.status_code == 401, (method, path, r.text)
        assert r.json()["errors"][0]["field"] == "header.authorization"
        assert "bearer" in r.headers["www-authenticate"].lower()


async def test_basic_auth_with_the_token_as_password_is_accepted(client):
    basic = base64.b64encode(f"trainer:{TOKEN}".encode()).decode()
    r = await client.get("/sessions", headers={"Authorization": f"Basic {basic}"})
    assert r.status_code == 200


async def test_the_tool_plane_cannot_reach_the_control_plane(client):
    for path in ["/tools/../sessions", "/s/default/sessions", "/s/default/tools/../score"]:
        r = await client.post(path, json={})
        assert r.status_code in (401, 404, 405), path
        assert "reward" not in r.text and "verdicts" not in r.text


async def test_create_inspect_step_finish_score_trajectory_delete(make_app):
    async with asgi_client(make_app(ACME)) as c:
        r = await c.post("/sessions", json={"task": "within-window", "seed": 1}, headers=AUTH)
        assert r.status_code == 201, r.text
        created = r.json()
        sid = created["session"]["session_id"]
        assert created["observation"]["task"]["id"] == "within-window"
        assert "expected" not in str(created)

        info = (await c.get(f"/sessions/{sid}", headers=AUTH)).json()
        assert (info["scenario"], info["task"], info["seed"]) == (ACME, "within-window", 1)

        step = {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "O-9001"}}]}
        r = await c.post(f"/sessions/{sid}/step", json={"action": step}, headers=AUTH)
        assert r.status_code == 200
        assert r.json()["observation"]["results"][0]["ok"] is True

        refund = {
            "tool_calls": [
                {
                    "name": "refund_order",
                    "arguments": {"order_id": "O-9001", "amount": 149.99, "reason": "cracked"},
                }
            ]
        }
        r = await c.post(f"/sessions/{sid}/step", json={"action": refund}, headers=AUTH)
        assert r.json()["observation"]["results"][0]["ok"] is True, r.text
        r = await c.post(
            f"/sessions/{sid}/finish",
            json={"answer": "Refunded 149.99 to your card."},
            headers=AUTH,
        )
        done = r.json()
        assert done["terminated"] is True
        assert done["reward"] == 1.0

        score = (await c.get(f"/sessions/{sid}/score", headers=AUTH)).json()
        assert score["reward"] == 1.0 and score["final"] is True
        assert {v["name"] for v in score["verdicts"]} >= {"state_matches"}

        episode = (await c.get(f"/sessions/{sid}/trajectory", headers=AUTH)).json()
        assert [tc["tool"] for tc in episode["tool_calls"]] == ["get_order", "refund_order"]

        r = await c.post(f"/sessions/{sid}/step", json={"action": step}, headers=AUTH)
        assert r.status_code == 409

        assert (await c.delete(f"/sessions/{sid}", headers=AUTH)).status_code == 204
        assert (await c.get(f"/sessions/{sid}", headers=AUTH)).status_code == 404


async def test_a_step_is_idempotent_by_request_id(client):
    sid, tools = await create_session(client)
    body = {
        "action": {
            "tool_calls": [
                {"name": "create_note", "arguments": {"customer_id": "C-0001", "text": "once"}}
            ]
        },
        "request_id": "req-1",
    }
    first = await client.post(f"/sessions/{sid}/step", json=body, headers=AUTH)
    again = await client.post(f"/sessions/{sid}/step", json=body, headers=AUTH)
    assert first.json() == again.json()
    notes = await client.post(f"/s/{sid}/tools/list_notes", json={}, headers=tools)
    assert [n["text"] for n in notes.json()["items"]] == ["once"]


async def test_reset_starts_a_new_episode_with_another_task_and_seed(client):
    _, tools = await create_session(client, session_id="r")
    await client.post("/s/r/tools/create_note", json={"customer_id": "C-0001", "text": "x"},
                      headers=tools)
    r = await client.post("/sessions/r/reset", json={"seed": 7, "task": "note"}, headers=AUTH)
    assert r.status_code == 200
    assert r.json()["session"]["seed"] == 7 and r.json()["session"]["task"] == "note"
    notes = await client.post("/s/r/tools/list_notes", json={}, headers=tools)
    assert notes.json()["items"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"task": "nope"}, "body.task"),
        ({"faults": "nope"}, "body.faults"),
        ({"scenario": "../../etc/passwd.yaml"}, "body.scenario"),
        ({"scenario": "acme/none-v1"}, "body.scenario"),
        ({"seed": -1}, "body.seed"),
        ({"session_id": "bad id!"}, "body.session_id"),
        ({"unknown": 1}, "body.unknown"),
    ],
)
async def test_bad_create_requests_name_the_field(client, body, field):
    r = await client.post("/sessions", json=body, headers=AUTH)
    assert r.status_code == 422, r.text
    assert field in [e["field"] for e in r.json()["errors"]]


async def test_bad_actions_and_bad_json_are_422_and_400(client):
    r = await client.post("/sessions/default/step", json={"action": 5}, headers=AUTH)
    assert r.status_code == 422
    assert r.json()["errors"][0]["field"].startswith("body")
    r = await client.post(
        "/sessions/default/step",
        content=b"{oops",
        headers={**AUTH, "content-type": "application/json"},
    )
    assert r.status_code == 400  # as on the tool plane: one parse path for every body
    assert r.json()["errors"][0]["field"] == "body" and "line 1" in r.json()["detail"]


async def test_another_registered_scenario_can_be_served_in_a_session(client):
    _, tools = await create_session(client, scenario=ACME, session_id="a", task="within-window")
    r = await client.post("/s/a/tools/get_order", json={"order_id": "O-9001"}, headers=tools)
    assert r.status_code == 200
    # a tool of the pack that the scenario does not offer does not exist for its agent
    r = await client.post("/s/a/tools/create_leave_request", json={}, headers=tools)
    assert r.status_code == 404 and r.json()["code"] == "unknown_tool"


async def test_a_body_not_sent_as_json_is_told_how_to_send_it(client):
    """``curl -d '{}'`` sends a form: the 422 says to send JSON, not only 'not a dictionary'."""
    r = await client.post(
        "/sessions", content=b"{}", headers={**AUTH,
                                               "Content-Type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 422
    (error,) = r.json()["errors"]
    assert error["field"] == "body" and error["expected"] == "a JSON object"
    assert "Content-Type: application/json" in error["problem"]
    assert (await client.post("/sessions", json={}, headers=AUTH)).status_code == 201


async def test_fault_profiles_are_names_never_paths_on_the_servers_disk(client, tmp_path):
    """A path answered differently as it exists or not, is a profile or not (a 500 for any
    other YAML): an oracle on the server's disk, and a way to load any profile from it."""
    profile = Path(simforge.faults.library.__file__).parent / "profiles" / "flaky-network.yaml"
    other = tmp_path / "notes.yaml"
    other.write_text("just: some yaml\n")
    assert profile.is_file()
    paths = [str(profile), str(other), str(tmp_path / "missing.yaml"), "../../etc/passwd",
             str(tmp_path)]
    _, _tools = await create_session(client, session_id="f")
    answers = []
    for path in paths:
        for url, body in (("/sessions", {"faults": path}),
                          ("/sessions/f/reset", {"faults": path}),
                          ("/reset", {"faults": path})):
            r = await client.post(url, json=body, headers=AUTH)
            assert r.status_code == 422, (url, path, r.text)
            answers.append(r.text.replace(json.dumps(path)[1:-1], "X").replace(path, "X"))
    assert len(set(answers)) == 1, set(answers)  # the same answer, whatever the path is
    assert json.loads(answers[0])["errors"][0]["field"] == "body.faults"
    r = await client.post("/sessions", json={"faults": "flaky-network"}, headers=AUTH)
    assert r.status_code == 201 and r.json()["session"]["faults"] == "flaky-network"
