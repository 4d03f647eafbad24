"""Ground truth never reaches an agent-facing surface, and sessions never see each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import AUTH, FIXTURES, asgi_client, create_session

pytestmark = pytest.mark.anyio

CANARIES = [
    "CANARY-EXPECTED-7731",
    "CANARY-ORACLE-4410",
    "CANARY-VALIDATOR-9052",
    "CANARY-META-1187",
    "CANARY-NOTES-6620",
    "CANARY-USER-3391",
]

SCENARIO = f"""
id: canary/isolation-v1
description: Grader notes, full of canaries (CANARY-NOTES-6620).
agent_description: Customer tiers of a small shop.
pack: {FIXTURES / "packs" / "mini"}
budgets: {{max_steps: 20, max_sim_seconds: 600}}
seeds: [0]
validators:
  - name: action_sequence
    params: {{calls: [{{tool: create_note, args: {{text: CANARY-VALIDATOR-9052}}}}]}}
tasks:
  - id: upgrade
    instruction: Customer C-0003 asked to be moved to the gold tier.
    metadata: {{secret: CANARY-META-1187}}
    user: {{wants: "to be gold, says CANARY-USER-3391"}}
    expected:
      state:
        Customer: {{C-0003: {{tier: gold}}}}
      outputs: ["CANARY-EXPECTED-7731"]
    oracle:
      - calls: [{{tool: create_note, args: {{customer_id: C-0003, text: CANARY-ORACLE-4410}}}}]
      - answer: CANARY-ORACLE-4410
"""


@pytest.fixture
def canary_scenario(tmp_path: Path) -> str:
    path = tmp_path / "canary.yaml"
    path.write_text(SCENARIO)
    return str(path)


def assert_clean(text: str, where: str) -> None:
    for canary in CANARIES:
        assert canary not in text, f"{canary} leaked through {where}"


async def test_no_agent_facing_payload_carries_ground_truth(make_app, canary_scenario):
    app = make_app(canary_scenario)
    catalog = app.state.manager.loaded.pack.catalog
    async with asgi_client(app) as c:
        for path in ["/openapi.json", "/docs", "/schema", "/metadata", "/health"]:
            r = await c.get(path)
            assert r.status_code == 200
            assert_clean(r.text, path)
        for name in catalog:
            for body in ({}, {"customer_id": "C-0003"}, {"customer_id": 1}):
                r = await c.post(f"/tools/{name}", json=body)
                assert r.status_code < 500 or name == "explode", (name, r.text)
                assert_clean(r.text, f"/tools/{name}")
        for path in ["/tools/missing", "/s/nobody/tools/get_customer", "/sessions/default/score"]:
            r = await c.post(path, json={})
            assert_clean(r.text, path)
        assert (await c.get("/metadata")).json()["description"] == (
            "Customer tiers of a small shop.")
        # what a session's agent is handed: the first observation, its tools, its user
        r = await c.post("/sessions", json={}, headers=AUTH)
        assert_clean(r.json()["observation"].__repr__(), "a session's first observation")
        sid, tools = r.json()["session"]["session_id"], r.json()["tool_token"]
        r = await c.post(f"/s/{sid}/messages", json={"content": "Hi"},
                         headers={"Authorization": f"Bearer {tools}"})
        assert r.status_code == 200
        assert_clean(r.text, "/messages")


async def test_the_control_plane_is_where_the_score_is(make_app, canary_scenario):
    async with asgi_client(make_app(canary_scenario)) as c:
        r = await c.get("/sessions/default/score", headers=AUTH)
        assert r.status_code == 200
        assert "reward" in r.json()
        r = await c.get("/sessions/default/score", headers={"X-Simforge-Session": "default"})
        assert r.status_code == 401


async def test_sessions_see_only_their_own_writes(client):
    _, ta = await create_session(client, session_id="a")
    _, tb = await create_session(client, session_id="b")
    await client.post("/s/a/tools/create_note", json={"customer_id": "C-0001", "text": "from a"},
                      headers=ta)
    await client.post("/s/a/tools/upgrade_customer", json={"customer_id": "C-0002"}, headers=ta)
    await client.post("/s/b/tools/create_note", json={"customer_id": "C-0001", "text": "from b"},
                      headers=tb)
    a = (await client.post("/s/a/tools/list_notes", json={}, headers=ta)).json()["items"]
    b = (await client.post("/s/b/tools/list_notes", json={}, headers=tb)).json()["items"]
    # one session's token opens nothing of another's; no token opens nothing at all
    assert (await client.post("/s/b/tools/list_notes", json={}, headers=ta)).status_code == 401
    assert (await client.post("/s/a/tools/list_notes", json={})).status_code == 401
    default = (await client.post("/tools/list_notes", json={})).json()["items"]
    assert [n["text"] for n in a] == ["from a"]
    assert [n["text"] for n in b] == ["from b"]
    assert default == []
    tier_b = (await client.post("/s/b/tools/get_customer", json={"customer_id": "C-0002"},
                                headers=tb)).json()
    assert tier_b["tier"] == "standard"


@pytest.mark.parametrize("sid", ["1", "..", "a" * 40, "session-0001", "../default"])
async def test_guessable_or_unsafe_session_ids_are_refused(client, sid):
    r = await client.post("/sessions", json={"session_id": sid}, headers=AUTH)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["field"] == "body.session_id"


async def test_a_random_looking_id_of_the_callers_own_is_accepted(client):
    r = await client.post("/sessions", json={"session_id": "k7Qx2mZp9RtLw4Nb"}, headers=AUTH)
    assert r.status_code == 201 and r.json()["tool_token"]
    # "insecure_id" lets a local user pick a short one; the token still guards it
    r = await client.post("/sessions", json={"session_id": "1", "insecure_id": True},
                          headers=AUTH)
    assert r.status_code == 201
    assert (await client.post("/s/1/tools/refund_order", json={})).status_code == 401
