"""Scripted models for the dialogue fixture (``tests/fixtures/scenarios/mini_dialogue.yaml``):
an agent that asks the user for their customer id, looks the customer up, upgrades them and
says so; and a user who gives the id when asked and ends the conversation once told it is done.
Each is a responder for :func:`tests.fakes.openai_server.serve_fake` (``[agent] * n``)."""

from __future__ import annotations

from typing import Any

from tests.fakes.openai_server import Reply, completion, tool_call

ANSWER = "Done: C-0003 is now on the gold tier."


def agent(body: dict[str, Any]) -> Reply:
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "user" and len(messages) == 2:
        return Reply(body=completion("Sure. What is your customer id?"))
    if last["role"] == "user" and "C-0003" in (last.get("content") or ""):
        return Reply(body=completion(None, [
            tool_call("get_customer", {"customer_id": "C-0003"}, id="call_1")]))
    if last["role"] == "tool" and last["tool_call_id"] == "call_1":
        return Reply(body=completion("Upgrading you now.", [
            tool_call("upgrade_customer", {"customer_id": "C-0003"}, id="call_2")]))
    if last["role"] == "tool" and last["tool_call_id"] == "call_2":
        return Reply(body=completion(ANSWER, usage={
            "prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129}))
    return Reply(body=completion("Is there anything else?"))


def user(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]
    assert last["role"] == "user"  # the agent's words, seen from the user's side
    said = last["content"]
    if "customer id" in said:
        return Reply(body=completion("It's C-0003."))
    if "gold tier" in said:
        return Reply(body=completion("Great, thank you! ###STOP###"))
    return Reply(body=completion("Sorry?"))
