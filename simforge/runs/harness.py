"""An external agent harness as a policy: simforge serves the episode's tools over HTTP, starts
the user's command once per episode, and scores what the program did.

The program gets, in its environment:

- ``SIMFORGE_BASE_URL`` - the server; ``SIMFORGE_SESSION`` - its session id;
- ``SIMFORGE_TOOLS_URL`` - ``POST {url}/{tool}`` with the arguments as a JSON object;
- ``SIMFORGE_MESSAGES_URL`` - ``POST {"content": "..."}`` says something to the user and answers
  ``{"user": reply | null, "ended": bool}``; once ``ended``, the conversation is over and that
  message was the final answer (the conversation contract of :mod:`simforge.env.core`);
- ``SIMFORGE_FINISH_URL`` - ``POST {"answer": "..."}`` ends the episode at once with that answer;
- ``SIMFORGE_TOOL_TOKEN`` - ``Authorization: Bearer <token>`` for all three; it opens this
  session and nothing else (not the control plane, not another session);
- ``SIMFORGE_TASK`` (the instruction: the user's first message), ``SIMFORGE_TASK_ID``,
  ``SIMFORGE_SEED``, ``SIMFORGE_TOOLS_FILE`` (the tools the task offers, in OpenAI function
  format), ``SIMFORGE_POLICY_FILE`` (the policy the agent follows, markdown; empty when none).

The episode ends when the conversation does, when the program finishes the session or exits
(then with its last message as the answer, if any), or at the wall-clock timeout (the program's
process group is killed). Tools are answered by :func:`simforge.serve.app.create_app` (the same
server ``simforge serve`` runs: errors, retry headers and connection resets as a real API shows
them), in virtual time by default; the serve gate's access policy (:func:`harness_access`) keeps
harnesses to their own session, off the control plane (whose token would also reveal scores).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any, ClassVar

from simforge.errors import PolicyUnavailable, UsageError
from simforge.policies.base import PolicyBase
from simforge.policies.scripted import NOOP_ANSWER

if TYPE_CHECKING:
    from simforge.env.core import SimforgeEnv
    from simforge.runs.episode import EpisodeOutcome
    from simforge.serve.problems import Problem

Scope = MutableMapping[str, Any]


def harness_access(scope: Scope) -> Problem | None:
    """The access policy of a harness's server (the serve gate applies it before anything
    else): ``/s/{sid}/...`` (tools, messages, finish) is the serve app's, which asks for that
    session's tool token; ``/sessions`` (the control plane, whose token would also reveal
    scores), the default sandbox, the open tool plane, MCP and OpenEnv are closed to harnesses
    whatever token they send; discovery (``/openapi.json``) stays open."""
    from simforge.serve.problems import Problem

    if scope["type"] != "http":
        return Problem(404, "not_served", "not served to harnesses")
    path: str = scope["path"]
    if path.startswith("/s/default/"):
        return Problem(401, "unauthorized", "harnesses reach their own session only")
    if path.startswith(("/sessions", "/ws", "/tools/", "/mcp")):
        return Problem(403, "forbidden", "harnesses reach their own session only")
    return None


class _Server:
    """One uvicorn server in a daemon thread, for one scenario, for the policy's lifetime."""

    def __init__(self, env: SimforgeEnv, time_scale: float) -> None:
        import uvicorn

        from simforge.serve.app import create_app

        user = getattr(env.user, "spec", None)
        self.app = create_app(env.loaded, time_scale=time_scale, user=user,
                              refuse=harness_access)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning",
                                lifespan="on", access_log=False)
        self.server = uvicorn.Server(config)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete,
                                       args=(self.server.serve(),), name="simforge-harness",
                                       daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise PolicyUnavailable("the harness tool server did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"

    def run(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the server's event loop (sessions are not thread-safe)."""
        async def call() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(timeout=60)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()


class HarnessPolicy(PolicyBase):
    """Runs ``command`` (a shell-style string) per episode against a served session."""

    name: ClassVar[str] = "harness"

    def __init__(self, command: str | None = None, *, timeout: float | None = None,
                 time_scale: float | None = None) -> None:
        command = command or os.environ.get("SIMFORGE_HARNESS_COMMAND")
        if not command:
            raise UsageError(
                "the harness policy needs a command: 'harness:COMMAND' or "
                "$SIMFORGE_HARNESS_COMMAND"
            )
        self.command = shlex.split(command)
        self.timeout = timeout or float(os.environ.get("SIMFORGE_HARNESS_TIMEOUT", "300"))
        self.time_scale = time_scale if time_scale is not None else float(
            os.environ.get("SIMFORGE_HARNESS_TIME_SCALE", "0"))
        self._servers: dict[str, _Server] = {}

    def act(self, observation: dict[str, Any]) -> Any:
        raise TypeError("the harness policy plays whole episodes (play_episode), not steps")

    def play_episode(self, env: SimforgeEnv, *, seed: int, task: str | None,
                     faults: str | None, policy_seed: int) -> EpisodeOutcome:
        from simforge.runs.episode import finish_outcome

        server = self._servers.get(env.scenario.id)
        if server is None:
            server = self._servers[env.scenario.id] = _Server(env, self.time_scale)
        manager = server.app.state.manager
        sid = f"h-{secrets.token_hex(8)}"
        served = server.run(lambda: manager.create(session_id=sid, task=task, seed=seed,
                                                   faults=faults))
        token = served.tool_token
        try:
            exit_code, timed_out, stderr = self._run_program(server, served, sid, token,
                                                             policy_seed)
            if not served.session.done:
                # the program left without ending the conversation: its last text, if it said
                # anything, is its answer (as when the user ends the conversation)
                last = served.env.last_text
                server.run(lambda: served.env.step(
                    {"final_answer": last if last is not None else NOOP_ANSWER}))
            session = served.session
            outcome = finish_outcome(served.env, self.name, seed, session.terminated,
                                     session.truncated)
        finally:
            server.run(lambda: manager.sessions.pop(sid, None))
        outcome.trajectory = outcome.trajectory.model_copy(update={"metadata": {
            **outcome.trajectory.metadata,
            "harness": {"exit_code": exit_code, "timed_out": timed_out,
                        "stderr_tail": stderr[-2000:]},
        }})
        return outcome

    def _run_program(self, server: _Server, served: Any, sid: str, token: str,
                     policy_seed: int) -> tuple[int | None, bool, str]:
        task = served.env.task
        with tempfile.TemporaryDirectory(prefix="simforge-harness-") as tmp:
            tools_file = os.path.join(tmp, "tools.json")
            with open(tools_file, "w", encoding="utf-8") as f:
                json.dump(served.env.offered_tools(), f)
            policy_file = os.path.join(tmp, "policy.md")
            with open(policy_file, "w", encoding="utf-8") as f:
                f.write(served.env.loaded.policy)
            env = {
                **os.environ,
                "SIMFORGE_BASE_URL": server.base_url,
                "SIMFORGE_SESSION": sid,
                "SIMFORGE_TOOL_TOKEN": token,
                "SIMFORGE_TOOLS_URL": f"{server.base_url}/s/{sid}/tools",
                "SIMFORGE_FINISH_URL": f"{server.base_url}/s/{sid}/finish",
                "SIMFORGE_MESSAGES_URL": f"{server.base_url}/s/{sid}/messages",
                "SIMFORGE_POLICY_FILE": policy_file,
                "SIMFORGE_TASK": task.instruction,
                "SIMFORGE_TASK_ID": task.id,
                "SIMFORGE_SEED": str(policy_seed),
                "SIMFORGE_TOOLS_FILE": tools_file,
            }
            env.pop("SIMFORGE_TOKEN", None)  # never hand a control-plane token down
            stderr_path = os.path.join(tmp, "stderr")
            with open(stderr_path, "wb") as err:
                proc = subprocess.Popen(self.command, env=env, stdout=subprocess.DEVNULL,
                                        stderr=err, start_new_session=True)
                timed_out = not self._wait(proc, served)
            with open(stderr_path, "rb") as f:
                stderr = f.read().decode(errors="replace")
        return proc.returncode, timed_out, stderr

    def _wait(self, proc: subprocess.Popen[bytes], served: Any) -> bool:
        """Until the program exits, or finished the session (then a short grace to exit), or
        the timeout; a program still running is killed with its process group."""
        deadline = time.monotonic() + self.timeout
        finished_at: float | None = None
        while proc.poll() is None:
            now = time.monotonic()
            if finished_at is None and served.session.done:
                finished_at = now
            if now > deadline or (finished_at is not None and now - finished_at > 5):
                _kill_group(proc)
                return finished_at is not None
            time.sleep(0.01)
        return True

    def close(self) -> None:
        for server in self._servers.values():
            server.close()
        self._servers.clear()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
