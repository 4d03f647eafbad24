"""Ground truth never reaches an agent-facing surface, and sessions never see each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import AUTH, FIXTURES, asgi_client

pytestmark = pytest.mark.anyio

CANARIES = [
    "CANARY-EXPECTED-7731",
    "CANARY-ORACLE-4410",
    "CANARY-VALIDATOR-9052",
    "CANARY-META-1187",
]

SCENARIO = f"""
id: canary/isolation-v1
description: A scenario whose ground truth is full of canaries.
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


async def test_the_control_plane_is_where_the_score_is(make_app, canary_scenario):
    async with asgi_client(make_app(canary_scenario)) as c:
        r = await c.get("/sessions/default/score", headers=AUTH)
        assert r.status_code == 200
        assert "reward" in r.json()
        r = await c.get("/sessions/default/score", headers={"X-Simforge-Session": "default"})
        assert r.status_code == 401


async def test_sessions_see_only_their_own_writes(client):
    for sid in ("a", "b"):
        assert (
            await client.post("/sessions", json={"session_id": sid}, headers=AUTH)
        ).status_code == 201
    await client.post("/s/a/tools/create_note", json={"customer_id": "C-0001", "text": "from a"})
    await client.post("/s/a/tools/upgrade_customer", json={"customer_id": "C-0002"})
    await client.post("/s/b/tools/create_note", json={"customer_id": "C-0001", "text": "from b"})
    a = (await client.post("/s/a/tools/list_notes", json={})).json()["items"]
    b = (await client.post("/s/b/tools/list_notes", json={})).json()["items"]
    default = (await client.post("/tools/list_notes", json={})).json()["items"]
    assert [n["text"] for n in a] == ["from a"]
    assert [n["text"] for n in b] == ["from b"]
    assert default == []
    tier_b = (await client.post("/s/b/tools/get_customer", json={"customer_id": "C-0002"})).json()
    assert tier_b["tier"] == "standard"
