"""An agent written with the official ``openai`` SDK, run against simforge's mocked tools.

Two ways to run it (see docs/agents.md):

1. As a harness that simforge starts once per episode::

       simforge run acme/refund-damaged-order-v1 \
           --policy "harness:python examples/harnesses/openai_agent.py"

   simforge serves the episode's tools and hands the program ``SIMFORGE_*`` variables: where
   the tools are, where to talk to the user, the tools file, the policy file, a token that opens
   this session only. simforge scores what the program did.

2. Against a running ``simforge serve`` (a session of its own, created on the control plane)::

       simforge serve acme/refund-damaged-order-v1 --token secret &
       python examples/harnesses/openai_agent.py --serve http://127.0.0.1:8000 --token secret \
           --task within-window

   It prints the score the control plane reports when the conversation is over.

The model is whatever ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``OPENAI_MODEL`` name (any
OpenAI-compatible endpoint). The loop is the plain tool-calling loop every team writes:
send the conversation and the tools; run the tool calls it asks for and send back the results;
a reply without tool calls goes to the user, whose answer is the next user message; when the
user ends the conversation, that reply was the final answer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

from openai import OpenAI

SYSTEM = (
    "You are a customer-operations agent with the company's tools. Follow the policy below. "
    "Ask the user for what you need; confirm before changing anything when the policy says so; "
    "when you are done, tell the user the outcome.\n\n# Policy\n\n{policy}"
)
MAX_TURNS = 30


class Session:
    """The HTTP side of one simforge session: tools, messages to the user, finish."""

    def __init__(self, base: str, sid: str, token: str | None) -> None:
        self.base, self.sid, self.token = base.rstrip("/"), sid, token

    def post(self, path: str, body: dict[str, Any], token: str | None = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if token or self.token:
            headers["Authorization"] = f"Bearer {token or self.token}"
        req = urllib.request.Request(
            f"{self.base}{path}", data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:  # tool errors are answers the model should read
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, {"detail": raw.decode(errors="replace")}
        except (ConnectionError, urllib.error.URLError) as e:  # a dropped connection
            return 0, {"detail": f"connection failed: {e}"}

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        status, body = self.post(f"/s/{self.sid}/tools/{name}", arguments)
        return json.dumps(body if status == 200 else {"error": body, "status": status})

    def say(self, content: str) -> dict[str, Any]:
        status, body = self.post(f"/s/{self.sid}/messages", {"content": content})
        if status != 200:
            raise RuntimeError(f"messages answered {status}: {body}")
        return body


def run_agent(session: Session, instruction: str, tools: list[dict], policy: str) -> None:
    client = OpenAI()  # OPENAI_BASE_URL, OPENAI_API_KEY from the environment
    model = os.environ.get("OPENAI_MODEL", "gpt-4.1")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM.format(policy=policy or "(none given)")},
        {"role": "user", "content": instruction},
    ]
    for _ in range(MAX_TURNS):
        reply = client.chat.completions.create(
            model=model, messages=messages, tools=tools or None,  # type: ignore[arg-type]
            seed=int(os.environ.get("SIMFORGE_SEED", "0")),
        ).choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        if reply.tool_calls:
            for call in reply.tool_calls:
                try:
                    arguments = json.loads(call.function.arguments or "{}")
                except ValueError:
                    arguments = {}
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": session.call(call.function.name, arguments)})
            continue
        answer = session.say(reply.content or "")
        if answer["ended"]:
            return
        messages.append({"role": "user", "content": answer["user"] or ""})


def as_harness() -> None:
    """simforge started this program: everything it needs is in SIMFORGE_* variables."""
    env = os.environ
    base, sid = env["SIMFORGE_BASE_URL"], env["SIMFORGE_SESSION"]
    with open(env["SIMFORGE_TOOLS_FILE"]) as f:
        tools = json.load(f)
    with open(env["SIMFORGE_POLICY_FILE"]) as f:
        policy = f.read()
    run_agent(Session(base, sid, env["SIMFORGE_TOOL_TOKEN"]), env["SIMFORGE_TASK"], tools, policy)


def against_serve(url: str, token: str, task: str | None, seed: int) -> None:
    """A session of our own on a running `simforge serve`: created and scored on its control
    plane (which needs the server's token); the agent itself holds only the session's tool
    token, which opens that session's tools and user and nothing else."""
    control = Session(url, "", token)
    status, created = control.post("/sessions", {"task": task, "seed": seed})
    if status != 201:
        sys.exit(f"creating a session answered {status}: {created}")
    sid, tool_token = created["session"]["session_id"], created["tool_token"]
    obs = created["observation"]
    agent_side = Session(url, sid, tool_token)  # the session's tools and user, nothing else
    run_agent(agent_side, obs["task"]["instruction"], obs["tools"], obs["policy"])
    req = urllib.request.Request(f"{url.rstrip('/')}/sessions/{sid}/score",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        score = json.loads(r.read())
    print(json.dumps({"session": sid, "reward": score["reward"], "failed": score["failed"]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", help="a running simforge serve (default: run as a harness)")
    parser.add_argument("--token", help="the server's control-plane token")
    parser.add_argument("--task", help="the task of the session (default: sampled)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.serve:
        if not args.token:
            parser.error("--serve needs --token")
        against_serve(args.serve, args.token, args.task, args.seed)
    else:
        as_harness()


if __name__ == "__main__":
    main()
