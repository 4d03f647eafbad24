"""The tool plane: every tool at POST /tools/{name}; sessions by header or path prefix; every
client error a 4xx problem that names the field."""

from __future__ import annotations

import json

import pytest

from simforge.serve.sessions import Limits

from .conftest import ACME, AUTH, asgi_client, create_session

pytestmark = pytest.mark.anyio


async def test_a_read_tool_answers_its_result_as_json(client):
    r = await client.post("/tools/get_customer", json={"customer_id": "C-0003"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.json()["id"] == "C-0003"
    assert r.headers["x-simforge-call-id"]


async def test_a_write_lands_in_the_default_session_and_is_read_back(client):
    r = await client.post("/tools/create_note", json={"customer_id": "C-0001", "text": "hi"})
    assert r.status_code == 200, r.text
    notes = (await client.post("/tools/list_notes", json={})).json()["items"]
    assert any(n["text"] == "hi" for n in notes)


async def test_a_session_is_chosen_by_header_or_by_path_prefix(client):
    _, tools = await create_session(client, session_id="s1")
    await client.post("/s/s1/tools/create_note", json={"customer_id": "C-0001", "text": "one"},
                      headers=tools)
    by_header = await client.post(
        "/tools/list_notes", json={}, headers={"X-Simforge-Session": "s1", **tools}
    )
    assert [n["text"] for n in by_header.json()["items"]] == ["one"]
    default = await client.post("/tools/list_notes", json={})
    assert default.json()["items"] == []


async def test_an_empty_body_means_no_arguments(client):
    r = await client.post("/tools/list_customers", content=b"")
    assert r.status_code == 200
    assert isinstance(r.json()["items"], list)


@pytest.mark.parametrize(
    ("path", "kwargs", "status", "field"),
    [
        ("/tools/get_customer", {"content": b"{not json"}, 400, "body"),
        ("/tools/get_customer", {"json": {"customer_id": 7}}, 422, "body.customer_id"),
        ("/tools/get_customer", {"json": {}}, 422, "body.customer_id"),
        ("/tools/get_customer", {"json": {"customer_id": "C-1", "x": 1}}, 422, "body.x"),
        ("/tools/get_customer", {"json": [1, 2]}, 422, "body.(arguments)"),
        ("/tools/no_such_tool", {"json": {}}, 404, "path.name"),
        ("/s/nobody/tools/get_customer", {"json": {"customer_id": "C-1"}}, 404, "session"),
    ],
)
async def test_client_errors_are_problems_naming_the_field(client, path, kwargs, status, field):
    r = await client.post(path, **kwargs)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["status"] == status
    assert body["title"] and body["detail"] and body["type"].startswith("urn:simforge:problem:")
    assert field in [e["field"] for e in body["errors"]]


async def test_a_business_error_keeps_its_status_and_code(client):
    r = await client.post("/tools/get_customer", json={"customer_id": "C-9999"})
    assert r.status_code == 404
    assert r.json()["code"] == "not_found"


async def test_get_on_a_tool_is_405_with_allow(client):
    r = await client.get("/tools/get_customer")
    assert r.status_code == 405
    assert r.headers["allow"] == "POST"


async def test_a_body_over_the_limit_is_413_and_never_read_whole(make_app):
    app = make_app(limits=Limits(max_body_bytes=2048))
    async with asgi_client(app) as c:
        r = await c.post("/tools/get_customer", json={"customer_id": "C" * 5000})
        assert r.status_code == 413
        assert r.json()["errors"][0]["field"] == "body"


async def test_an_unknown_path_is_a_problem_too(client):
    r = await client.get("/nowhere")
    assert r.status_code == 404
    assert r.headers["content-type"] == "application/problem+json"


async def test_a_finished_episode_answers_409_until_reset(client):
    _, tools = await create_session(client, session_id="s", max_steps=2)
    for _ in range(2):
        r = await client.post("/s/s/tools/get_customer", json={"customer_id": "C-0001"},
                              headers=tools)
        assert r.status_code == 200
    r = await client.post("/s/s/tools/get_customer", json={"customer_id": "C-0001"},
                          headers=tools)
    assert r.status_code == 409
    assert r.json()["code"] == "episode_ended"
    await client.post("/sessions/s/reset", json={}, headers=AUTH)
    r = await client.post("/s/s/tools/get_customer", json={"customer_id": "C-0001"},
                          headers=tools)
    assert r.status_code == 200


async def test_the_default_session_is_a_sandbox_without_budgets(client):
    # mini allows 6 steps per episode; the default session is for load, not for scoring
    for _ in range(10):
        r = await client.post("/tools/get_customer", json={"customer_id": "C-0001"})
        assert r.status_code == 200


async def test_openapi_documents_every_tool_with_its_own_schemas(make_app):
    app = make_app(ACME)
    async with asgi_client(app) as c:
        doc = (await c.get("/openapi.json")).json()
    catalog = app.state.manager.loaded.all_offered
    assert 20 <= len(catalog) < len(app.state.manager.loaded.pack.catalog)
    assert not [p for p in doc["paths"] if p.startswith("/tools/") and p[7:] not in catalog]
    components = doc["components"]["schemas"]

    def hoisted(schema: dict, name: str) -> dict:
        raw = json.dumps(schema).replace('"#/$defs/', f'"#/components/schemas/{name}__')
        out = json.loads(raw)
        for def_name, sub in out.pop("$defs", {}).items():
            assert components[f"{name}__{def_name}"] == sub
        return out

    for tool in catalog.values():
        op = doc["paths"][f"/tools/{tool.name}"]["post"]
        assert op["tags"] == [tool.spec.system]
        body = op["requestBody"]["content"]["application/json"]["schema"]
        assert body == hoisted(tool.spec.input_schema, tool.name)
        out = op["responses"]["200"]["content"]["application/json"]["schema"]
        assert out == hoisted(tool.spec.output_schema, tool.name)
    text = str(doc)
    assert "#/$defs/" not in text  # every $ref resolves inside the document
    assert "/sessions" in doc["paths"]
    assert doc["paths"]["/sessions"]["post"]["security"] == [{"bearer": []}]


async def test_docs_page_is_served(client):
    r = await client.get("/docs")
    assert r.status_code == 200
    assert "swagger" in r.text.lower()
