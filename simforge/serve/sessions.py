"""Served sessions: one :class:`SimforgeEnv` per session id, with the limits a shared server needs.

The kernel stays free of HTTP and of asyncio: a served session drives its env synchronously
(one ``session.step`` per tool call, in virtual time, microseconds) and only the *answer* waits,
with ``asyncio.sleep``, for the simulated latency mapped onto wall time. Calls to one session are
serialized by its ``asyncio.Lock`` (a simpy clock cannot be advanced by two callers at once);
sessions never share a World, a clock or an RNG, so many run side by side in one process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from simforge.config import ConfigError, NotFound
from simforge.env.core import SimforgeEnv
from simforge.faults.library import builtin_profiles
from simforge.scenario.model import BudgetConfig
from simforge.scenario.plugins import PluginError
from simforge.scenario.registry import LoadedScenario, default_registry
from simforge.scenario.registry import sandbox_scenario as sandbox_scenario  # re-exported
from simforge.sim.calls import CallOutcome
from simforge.sim.session import CallRequest, Session

from .problems import Problem

DEFAULT_SESSION = "default"
clock = time.monotonic
"""The clock of idle times (a module attribute, so that tests can move it)."""
SANDBOX_RECORD = 10_000
"""Calls a sandbox session keeps in its record (the most recent ones)."""
UNBOUNDED = BudgetConfig(max_steps=2**62, max_sim_seconds=1e15)
"""Budgets of a sandbox session (the server's default one): a harness under load test makes
hundreds of thousands of calls, which no scenario budget is meant for."""


@dataclass(frozen=True)
class Limits:
    """What one server allows; every limit answers a problem, never a crash."""

    max_sessions: int = 1000
    idle_ttl: float = 900.0
    """Seconds without a request after which a session is deleted (the default one never is)."""
    max_body_bytes: int = 1 << 20
    max_pending_per_session: int = 64
    """Requests one session may have queued on its lock; beyond that, 429."""
    idempotency_window: int = 256
    """Step answers remembered per session, by request id."""
    header_timeout: float = 10.0
    """Seconds a client has to send a request's headers (from the connection opening, or from
    the request's first byte on a reused one); then 408 and the connection is closed."""
    body_timeout: float = 30.0
    """Seconds a client has to send a request's body once its headers are in."""
    keep_alive: float = 75.0
    """Seconds an idle connection is kept between requests: longer than a pooled client keeps
    one (httpx 5 s, aiohttp 15 s), so that the server never closes one as it is reused."""
    ws_closes_per_collection: int = 1000
    """WebSocket connections that close between two full collections of the garbage collector
    (:class:`~.server.Reclaim`): what a closed connection leaves for one is bounded by this."""


def with_budgets(loaded: LoadedScenario, budgets: BudgetConfig) -> LoadedScenario:
    scenario = loaded.scenario.model_copy(update={"budgets": budgets})
    return dataclasses.replace(loaded, scenario=scenario)


def new_episode_id() -> str:
    """A fresh episode id: a random UUID's 32 hex digits (the standard library's ``uuid4``)."""
    return uuid.uuid4().hex


@dataclass
class ServedSession:
    """One session's env, lock and clock mapping. ``wall_anchor``/``sim_anchor`` map the
    simulated clock onto the event loop's clock in real-time mode."""

    id: str
    env: SimforgeEnv
    time_scale: float
    sandbox: bool = False
    tool_token: str | None = None
    """What the agent's side of this session (tools, MCP, messages) needs as ``Authorization:
    Bearer <tool_token>``; ``None`` only for the server's default sandbox, which is never
    scored."""
    max_pending: int = Limits.max_pending_per_session
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    pending: int = 0
    created_at: float = field(default_factory=time.time)
    last_used: float = field(default_factory=lambda: clock())
    """When a request last named the session (its creation, to begin with): idle time counts
    from here."""
    wall_anchor: float = field(default_factory=time.monotonic)
    answers: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    episode_id: str = ""
    """The current episode's id: the one a reset asked for (OpenEnv's ``episode_id``), else a
    fresh one at every reset."""
    reclaimable: bool = False
    """Started by OpenEnv's HTTP ``/reset`` for a new episode id, not asked for by name: a
    full server lets the least recently used of these go for a newer one
    (:meth:`SessionManager.create`)."""
    connections: int = 0
    """Open connections (OpenEnv WebSockets) this session belongs to: it is deleted when they
    close, and never evicted as idle while one is open."""

    @property
    def session(self) -> Session:
        session = self.env.session
        assert session is not None
        return session

    def touch(self) -> None:
        self.last_used = clock()

    @property
    def busy(self) -> bool:
        """A request is in the session: its lock held (a step under way) or calls queued."""
        return self.pending > 0 or self.lock.locked()

    def reset(
        self, seed: int | None, options: dict[str, Any], episode_id: str | None = None,
        catalog_tools: bool = True,
    ) -> tuple[dict[str, Any], Any]:
        """``env.reset``; ``catalog_tools``: as :meth:`initial_observation`'s. The episode
        it replaces is closed (:meth:`~simforge.sim.session.Session.close`): the server owns
        its env, and a session left to the garbage collector outlives the young generations
        (``/ws`` plays many short episodes)."""
        previous = self.env.session
        info = self.env.start(seed=seed, options=options)
        if previous is not None and previous is not self.env.session:
            previous.close()
        obs = self.env.initial_observation(catalog_tools)
        self.touch()
        self.wall_anchor = time.monotonic()
        self.answers.clear()
        self.episode_id = episode_id or new_episode_id()
        return obs, info

    def initial_observation(self, catalog_tools: bool = True) -> dict[str, Any]:
        """What ``reset`` showed the agent (instruction, tools, policy), rebuilt on demand
        rather than kept: an idle session should cost only its World overlay and clock.
        ``catalog_tools=False``: the task's own catalog left out (``None``), for
        :func:`~.openenv.reset_observation`, which sends its cached JSON instead."""
        return self.env.initial_observation(catalog_tools)

    def think_for_wall_clock(self) -> float:
        """In real-time mode, the simulated seconds that passed on the wall since the last answer
        (the agent's real thinking); in virtual mode (scale 0) none."""
        if self.time_scale <= 0:
            return 0.0
        target = (time.monotonic() - self.wall_anchor) / self.time_scale
        return max(0.0, target - self.session.now)

    async def wait_until_sim_now(self) -> None:
        """Let the wall clock catch up with the simulated clock (scaled)."""
        if self.time_scale <= 0:
            return
        delay = self.wall_anchor + self.session.now * self.time_scale - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)

    async def call(self, tool: str, args: Any) -> CallOutcome | None:
        """One tool-plane call: a step of its own in simulated time; the answer waits for the
        simulated latency. ``None`` when the episode ended before the call could start."""
        if self.time_scale <= 0:
            return self.call_now(tool, args)
        if self.pending >= self.max_pending:
            raise self._too_many_pending()
        self.pending += 1
        try:
            async with self.lock:
                outcome = self._step(tool, args)
                await self.wait_until_sim_now()
                self.touch()
                return outcome
        finally:
            self.pending -= 1

    def call_now(self, tool: str, args: Any) -> CallOutcome | None:
        """:meth:`call` in virtual time (scale 0), without a coroutine: nothing in it awaits, so
        no other request can interleave with this one and the session's lock would only cost
        its acquire."""
        if self.pending >= self.max_pending:
            raise self._too_many_pending()
        return self._step(tool, args)

    def _too_many_pending(self) -> Problem:
        return Problem(
            429,
            "too_many_pending",
            f"session {self.id!r} has {self.pending} requests queued",
            headers={"Retry-After": "1"},
            retry_after=1.0,
        )

    def _step(self, tool: str, args: Any) -> CallOutcome | None:
        self.touch()
        session = self.session
        if session.done:
            raise episode_ended(self)
        outcomes = session.step([CallRequest(tool, args)], think=self.think_for_wall_clock())
        return outcomes[0] if outcomes else None

    def remember(self, request_id: str, answer: Any, window: int) -> None:
        self.answers[request_id] = answer
        while len(self.answers) > window:
            self.answers.popitem(last=False)


def authorize(served: ServedSession, authorization: str | bytes | None) -> None:
    """A request on the agent's side of ``served`` must carry its tool token: a stranger's
    call would otherwise land in somebody's scored trajectory."""
    token = served.tool_token
    if token is None:
        return
    if isinstance(authorization, bytes):
        authorization = authorization.decode("latin-1")
    scheme, _, value = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not secrets.compare_digest(
        value.strip().encode(), token.encode()
    ):
        raise Problem(
            401,
            "unauthorized",
            f"session {served.id!r} needs its tool token: Authorization: Bearer <tool_token> "
            "(given when the session was created)",
            errors=[{"field": "header.authorization", "expected": "Bearer <tool_token>"}],
            headers={"WWW-Authenticate": 'Bearer realm="simforge-session"'},
        )


def check_fault_name(faults: str | None, loaded: LoadedScenario) -> None:
    """A client names a fault profile of the server's library (the scenario's and the pack's
    own, the built-in ones), never a file: a path would read the server's disk, and whether it
    exists or holds a profile would show in the answer. So every string that is not such a name
    gets the same 422, whatever it is."""
    if faults is None or faults == "none":
        return
    names = {profile.name for profile in loaded.profiles} | set(builtin_profiles())
    if faults not in names:
        known = sorted({"none", *names})
        raise Problem(
            422,
            "unknown_fault_profile",
            f"unknown fault profile {faults!r}; known: {known}",
            errors=[{"field": "body.faults", "expected": f"one of {known}"}],
        )


def episode_ended(served: ServedSession) -> Problem:
    session = served.session
    reason = "terminated" if session.terminated else (session.truncation_reason or "ended")
    return Problem(
        409,
        "episode_ended",
        f"session {served.id!r}: the episode has ended ({reason}); reset it on the control plane",
    )


class SessionManager:
    """Creates, finds, resets and deletes served sessions; evicts idle ones."""

    def __init__(
        self,
        loaded: LoadedScenario,
        *,
        time_scale: float = 1.0,
        limits: Limits = Limits(),
        user: str | None = None,
    ) -> None:
        self.loaded = loaded
        self.time_scale = time_scale
        self.limits = limits
        self.user = user
        """The user spec of every session's simulated user (``scripted``, ``llm:MODEL``)."""
        self.sessions: dict[str, ServedSession] = {}
        self._sandbox = with_budgets(loaded, UNBOUNDED)

    def create_default(
        self, *, task: str | None = None, seed: int | None = None, faults: str | None = None
    ) -> ServedSession:
        """The session the tool plane uses when a request names none: a sandbox (no budgets)."""
        return self.create(
            session_id=DEFAULT_SESSION, task=task, seed=seed, faults=faults, sandbox=True,
            operator=True,
        )

    def create(
        self,
        *,
        session_id: str | None = None,
        scenario: str | None = None,
        task: str | None = None,
        seed: int | None = None,
        faults: str | None = None,
        sandbox: bool = False,
        max_steps: int | None = None,
        max_sim_seconds: float | None = None,
        episode_id: str | None = None,
        operator: bool = False,
        reclaimable: bool = False,
    ) -> ServedSession:
        """A new session. Its ``faults`` name a profile of the server's library, unless the
        server's operator gives them (``operator``: ``simforge serve --faults`` may be a path
        on the operator's own disk).

        A full server makes room by letting go of the least recently used ``reclaimable``
        session that nothing is using (no request in it, no open connection): the episodes
        OpenEnv's HTTP ``/reset`` started under ids of their own, which a trainer that names
        every rollout leaves behind by the thousand (before, the thousandth within the idle
        TTL was refused, and every reset after it). Sessions created by name (the control
        plane, MCP, ``/ws``) are never taken: the server answers 503 as before."""
        self.evict_idle()
        if len(self.sessions) >= self.limits.max_sessions:
            self._make_room()
        if len(self.sessions) >= self.limits.max_sessions:
            raise Problem(
                503,
                "too_many_sessions",
                f"the server holds its maximum of {self.limits.max_sessions} sessions; "
                "delete one or wait for idle ones to expire",
                headers={"Retry-After": "5"},
                retry_after=5.0,
            )
        sid = session_id or secrets.token_urlsafe(12)
        if sid in self.sessions:
            raise Problem(
                409,
                "session_exists",
                f"session {sid!r} already exists",
                errors=[{"field": "body.session_id", "problem": "already exists"}],
            )
        loaded = self._scenario(scenario, sandbox)
        if not operator:
            check_fault_name(faults, loaded)
        if max_steps is not None or max_sim_seconds is not None:
            budgets = loaded.scenario.budgets.model_copy(
                update={
                    k: v
                    for k, v in (("max_steps", max_steps), ("max_sim_seconds", max_sim_seconds))
                    if v is not None
                }
            )
            loaded = with_budgets(loaded, budgets)
        try:
            # a sandbox session takes calls without end: keep only the recent part of its record
            env = SimforgeEnv(
                loaded,
                task=task,
                faults=faults,
                record_limit=SANDBOX_RECORD if sandbox else None,
                user=self.user,
            )
            served = ServedSession(
                sid,
                env,
                self.time_scale,
                sandbox=sandbox,
                max_pending=self.limits.max_pending_per_session,
                tool_token=None if sid == DEFAULT_SESSION else secrets.token_urlsafe(24),
                reclaimable=reclaimable,
            )
            served.reset(seed, {}, episode_id)
        except NotFound as exc:
            field_name = _field_of(str(exc))
            raise Problem(
                422,
                "invalid_session",
                str(exc),
                errors=[{"field": field_name, "problem": str(exc)}],
            ) from None
        self.sessions[sid] = served
        return served

    def _scenario(self, scenario: str | None, sandbox: bool) -> LoadedScenario:
        if scenario is None or scenario == self.loaded.scenario.id:
            return self._sandbox if sandbox else self.loaded
        if "/" not in scenario or scenario.endswith((".yaml", ".yml")) or scenario.startswith("."):
            # Only registered ids: a path from a remote caller would load code from disk.
            raise Problem(
                422,
                "invalid_session",
                f"scenario {scenario!r}: expected a registered scenario id (domain/name-vN)",
                errors=[{"field": "body.scenario", "expected": "a registered scenario id"}],
            )
        try:
            loaded = default_registry.get(scenario)
        except (NotFound, ConfigError, PluginError) as exc:
            raise Problem(
                422,
                "invalid_session",
                str(exc),
                errors=[{"field": "body.scenario", "problem": "unknown scenario"}],
            ) from None
        return with_budgets(loaded, UNBOUNDED) if sandbox else loaded

    def get(self, session_id: str) -> ServedSession:
        """The session, for a request that names it: that is activity (see :meth:`evict_idle`)."""
        served = self.sessions.get(session_id)
        if served is None:
            raise Problem(
                404,
                "unknown_session",
                f"no session {session_id!r}; sessions are created on the control plane",
                errors=[{"field": "session", "problem": "unknown session id"}],
            )
        served.touch()
        return served

    def reset(
        self,
        session_id: str,
        *,
        seed: int | None = None,
        task: str | None = None,
        faults: str | None = None,
        episode_id: str | None = None,
        catalog_tools: bool = True,
    ) -> tuple[ServedSession, dict[str, Any], dict[str, Any]]:
        served = self.get(session_id)
        options: dict[str, Any] = {}
        if task is not None:
            options["task"] = task
        if faults is not None:
            options["faults"] = faults
        check_fault_name(faults, served.env.loaded)
        try:
            obs, info = served.reset(seed, options, episode_id, catalog_tools)
        except NotFound as exc:
            raise Problem(
                422,
                "invalid_reset",
                str(exc),
                errors=[{"field": _field_of(str(exc)), "problem": str(exc)}],
            ) from None
        return served, obs, info

    def delete(self, session_id: str) -> None:
        self.get(session_id)
        self.discard(session_id)

    def discard(self, session_id: str) -> None:
        """The session leaves the server (deleted, evicted, its WebSocket closed), and its
        episode is closed (:meth:`~simforge.sim.session.Session.close`) unless a request is
        still in it (its lock held, calls pending), which keeps what it holds: an episode
        left to the garbage collector is a cycle that outlives the young generations and,
        under ``serve``'s thresholds, waits for a full collection (a server whose trainers
        reconnect, or whose sandboxes are deleted, grew by every episode they left). A
        request that later finds the closed episode gets the 409 of an ended one; the server
        no longer lists the session, so none finds it by id."""
        served = self.sessions.pop(session_id, None)
        if served is None or served.busy:
            return
        session = served.env.session
        if session is not None:
            session.close()

    def _make_room(self) -> None:
        """Let go of the least recently used reclaimable session nothing is using, if any."""
        spare = [s for s in self.sessions.values()
                 if s.reclaimable and not s.busy and s.connections == 0]
        if spare:
            self.discard(min(spare, key=lambda s: s.last_used).id)

    def evict_idle(self) -> int:
        """Delete the sessions idle for longer than the TTL; returns how many went.

        Idle is the time since a request last named the session: its creation, a reset, a
        call, a step, an inspection (every path finds it with :meth:`get`). So a session
        created and awaiting its first call lives the whole TTL from its creation, and one
        reset after a pause the whole TTL from the reset. Never evicted: the default session,
        one with a request in flight or queued (its lock held, calls pending), one with an open
        connection (an OpenEnv WebSocket)."""
        limit = clock() - self.limits.idle_ttl
        stale = [
            sid
            for sid, s in self.sessions.items()
            if sid != DEFAULT_SESSION and s.last_used < limit and not s.busy
            and s.connections == 0
        ]
        for sid in stale:
            self.discard(sid)
        return len(stale)

    async def reap_forever(self) -> None:
        interval = max(0.05, min(30.0, self.limits.idle_ttl / 4))
        while True:
            await asyncio.sleep(interval)
            self.evict_idle()


def _field_of(message: str) -> str:
    if "fault profile" in message:
        return "body.faults"
    if "task" in message:
        return "body.task"
    return "body.scenario"
