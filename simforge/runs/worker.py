"""Running cells: the same code in the parent (``--workers 0``), a pool process or a Ray task.

A worker keeps one environment per scenario and one policy per spec for its whole life (loading
a pack costs far more than an episode), and returns plain dicts: picklable, JSON-able, and the
exact rows the store writes, so the parent does no work per episode beyond the insert.

A cell that raises (a policy bug, an LLM endpoint that is down, a harness that crashed) becomes
an *invalid* record with the reason, never a zero reward blamed on the agent, and never a lost
cell: the matrix always completes.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from simforge.env.core import SimforgeEnv
from simforge.policies.base import Policy
from simforge.runs.episode import EpisodeOutcome, play_episode
from simforge.runs.matrix import Cell

Record = dict[str, Any]
"""One finished cell, as the store writes it (see :mod:`simforge.runs.store`); its
``trajectory`` is the native JSON compressed (or ``None`` without trajectories)."""

_envs: dict[str, SimforgeEnv] = {}
_policies: dict[str, Policy] = {}
_stores: dict[str, Any] = {}


def warm_env(ref: str, user: str | None = None) -> None:
    """Load ``ref``'s environment now (before forking workers that will inherit it)."""
    _env(ref, user)


def _env(ref: str, user: str | None = None) -> SimforgeEnv:
    key = ref if user is None else f"{ref}\x00{user}"
    env = _envs.get(key)
    if env is None:
        from simforge.env.pool import make

        env = _envs[key] = make(ref, user=user)
    return env


def _policy(spec: str) -> Policy:
    policy = _policies.get(spec)
    if policy is None:
        from simforge.runs.specs import build_policy

        policy = _policies[spec] = build_policy(spec)
    return policy


def run_cell(
    cell: Cell,
    ref: str,
    policy_spec: str,
    *,
    faults: str | None = None,
    trajectories: bool = True,
    user: str | None = None,
) -> Record:
    """Play one cell and return its record; never raises for a failing episode. ``faults`` is
    where the cell's profile resolves from (default: its name); ``user`` the simulated user's
    spec (default: ``$SIMFORGE_USER`` or scripted)."""
    started = time.perf_counter()
    try:
        env, policy = _env(ref, user), _policy(policy_spec)
        started = time.perf_counter()  # loading a pack once per worker is not the episode's
        outcome = play_episode(
            env,
            policy,
            seed=cell.seed,
            task=cell.task,
            faults=faults or cell.profile,
            policy_seed=cell.policy_seed,
        )
    except Exception as exc:
        _policies.pop(policy_spec, None)  # a policy that crashed mid-episode is not reused
        reason = f"runner error: {type(exc).__name__}: {exc}"[:1000]
        return failed_record(cell, policy_spec, reason, time.perf_counter() - started)
    wall_s = time.perf_counter() - started
    return to_record(cell, outcome, wall_s, policy=policy_spec, trajectories=trajectories)


def run_cells(
    cells: list[Cell],
    refs: dict[str, str],
    policy_spec: str,
    trajectories: bool = True,
    profiles: dict[str, str] | None = None,
    user: str | None = None,
) -> list[Record]:
    """Records of ``cells``; ``refs`` and ``profiles`` map scenario ids and profile names to
    what they load from (see :class:`simforge.runs.matrix.Plan`)."""
    profiles = profiles or {}
    return [
        run_cell(c, refs[c.scenario], policy_spec, faults=profiles.get(c.profile),
                 trajectories=trajectories, user=user)
        for c in cells
    ]


def store_cells(
    cells: list[Cell],
    refs: dict[str, str],
    policy_spec: str,
    trajectories: bool,
    profiles: dict[str, str] | None,
    user: str | None,
    store_url: str,
    run_id: str,
) -> list[tuple[Record, bool]]:
    """Play ``cells`` (as :func:`run_cells` does) and write them to the run ``run_id`` of the
    store at ``store_url`` in one transaction, from this process; ``(record, written)`` per
    cell, the record without its trajectory, verdicts and calls (in the store now).

    A pool worker writes what it played so that the one runner process is not every episode's
    bottleneck: the rows, their serialising and their commit cost the worker about a tenth of
    an episode, which in the runner would be a tenth of an episode per worker. The store
    (opened once per process) keeps its guarantees whoever writes: one transaction per chunk,
    ``UNIQUE(run_id, key)``, and a worker killed mid-transaction leaves nothing of it."""
    from simforge.runs.store import RunStore

    store = _stores.get(store_url)
    if store is None:
        store = _stores[store_url] = RunStore(store_url, create=False)
    records = run_cells(cells, refs, policy_spec, trajectories, profiles, user)
    written = store.add_episodes(run_id, records)
    for record in records:
        for stored in _STORED_ONLY:
            record[stored] = None
    return list(zip(records, written, strict=True))


_STORED_ONLY = ("trajectory", "verdicts", "calls")
"""What a pool worker's records leave out on their way back to the runner (they are in the
store): the verdicts were nine tenths of a chunk's pickle, and the runner unpickling them a
fifth of its CPU an episode, which two workers share two cores with."""


def to_record(
    cell: Cell,
    outcome: EpisodeOutcome,
    wall_s: float,
    *,
    policy: str | None = None,
    trajectories: bool = True,
) -> Record:
    """The record of a played cell; ``policy`` is the spec it was built from (``llm:MODEL``
    says more than the class name ``llm``). Its trajectory is compressed here, in the worker
    that played it, as the store keeps it (:func:`simforge.runs.store.trajectory_text` reads
    it back): the runner's one writing process then neither compresses it nor receives four
    times its size.

    The trajectory's JSON leaves out the fields its recorder never set (``exclude_unset``),
    not every field equal to its default (``exclude_defaults``, what ``export`` writes): the
    same episode when parsed, for 5% more text, where comparing each field with a default
    built for the purpose took pydantic as long again as the serialising (0.09 ms against
    0.05 an Acme episode, about 3% of playing it)."""
    from simforge.runs.store import compress_trajectory

    result, trajectory = outcome.result, outcome.trajectory
    sim = trajectory.simulation
    assert sim is not None
    return {
        **cell.to_dict(),
        "key": cell.key,
        "policy": policy or result.policy,
        "reward": result.reward,
        "passed": bool(result.passed and result.reward is not None),
        "invalid_reason": result.invalid_reason,
        "steps": result.steps,
        "sim_time": result.sim_time,
        "terminated": result.terminated,
        "truncated": result.truncated,
        "truncation_reason": sim.truncation_reason,
        "failed": list(result.failed),
        "wall_s": wall_s,
        "verdicts": result.verdicts,
        "faults": [
            {
                "kind": f.kind,
                "tool": f.tool,
                "call_id": f.call_id,
                "call_index": f.call_index,
                "sim_time": f.sim_time,
                "rule": f.rule,
            }
            for f in sim.faults
        ],
        "calls": [
            {
                "call_id": c.call_id,
                "tool": c.tool,
                "ok": c.error is None,
                "status": (c.metadata.get("error") or {}).get("status"),
                "started_at": c.started_at,
                "ended_at": c.ended_at,
            }
            for c in trajectory.tool_calls
        ],
        "trajectory": compress_trajectory(trajectory.model_dump_json(exclude_unset=True))
        if trajectories else None,
    }


def failed_record(cell: Cell, policy: str, reason: str, wall_s: float) -> Record:
    return {
        **cell.to_dict(),
        "key": cell.key,
        "policy": policy,
        "reward": None,
        "passed": False,
        "invalid_reason": reason,
        "steps": 0,
        "sim_time": 0.0,
        "terminated": False,
        "truncated": False,
        "truncation_reason": None,
        "failed": [],
        "wall_s": wall_s,
        "verdicts": [],
        "faults": [],
        "calls": [],
        "trajectory": None,
    }


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return True  # no /proc (macOS): os.kill's answer stands


def watch_runner(runner: int, interval: float = 0.5) -> None:
    """Exit this worker when the runner that owns the pool is gone (killed with SIGKILL).

    The parent process is no guide: a forkserver worker's parent is the fork server, and the
    fork server itself waits for its workers to close a pipe before it exits, so without this
    the workers, the fork server and the resource tracker would all outlive the runner."""

    def watch() -> None:
        while True:
            time.sleep(interval)
            if not alive(runner):
                os._exit(1)

    threading.Thread(target=watch, name="simforge-runner-watch", daemon=True).start()
