"""A run from plan to store: create (or resume) the run, execute the missing cells on a backend,
each chunk of episodes committed as it finishes.

The store is the only source of truth about what is done: resuming asks it which cells exist
and runs the rest, so a run interrupted any number of times (Ctrl-C, SIGKILL, a lost Ray
cluster) completes to exactly its plan, each cell once. Resuming with ``attribute`` adds the
fault-kind ablations to a run that had none (its plan grows; what is stored stays).

A new run records the grading version of each scenario (``graded_by``); resuming one whose
scenarios have changed since says so (``Prepared.warnings``), since its episodes are then graded
by two versions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from simforge.errors import UsageError
from simforge.runs.local import run_local, store_local
from simforge.runs.matrix import Plan, RunConfig, plan
from simforge.runs.store import RunStore
from simforge.runs.worker import Record

Backend = Literal["local", "ray"]


@dataclass
class Prepared:
    """A run ready to execute: its id, its plan and the cells still missing."""

    run_id: str
    config: RunConfig
    plan: Plan
    todo: list[str]
    done: int
    warnings: list[str] = field(default_factory=list)


def prepare(
    store: RunStore,
    config: RunConfig | None = None,
    *,
    resume: str | None = None,
    backend: Backend = "local",
    attribute: bool = False,
) -> Prepared:
    """A new run for ``config``, or the run ``resume`` with its stored config (with
    ``attribute``, grown by the fault-kind ablations). Fails before any episode runs when a
    scenario, task, profile or policy is unknown."""
    from simforge.runs.regrade import grading_versions, version_changes
    from simforge.runs.specs import build_policy

    grow = False
    if resume is not None:
        stored = store.run(resume)
        config = RunConfig.model_validate(stored["config"])
        if config.regrade_of is not None:
            raise UsageError(f"run {resume!r} re-grades run {config.regrade_of!r}; it has no "
                             "episodes of its own to play (run simforge regrade again)")
        grow = attribute and not config.attribute
        if grow:
            config = config.model_copy(update={"attribute": True})
    if config is None:
        raise UsageError("a new run needs a config")
    the_plan = plan(config)
    versions = grading_versions(the_plan.refs)
    warnings = []
    closer = getattr(build_policy(config.policy), "close", None)  # fail fast on a bad spec
    if callable(closer):
        closer()
    if config.user is not None:
        from simforge.users.specs import build_user

        build_user(config.user)  # and on a bad user spec
    if resume is not None:
        run_id = resume
        done = store.done_keys(run_id)
        changed = version_changes(config.graded_by, versions)
        if changed:
            warnings.append("the scenarios changed since this run started, so its episodes are "
                            "graded by two versions (simforge regrade puts them on one): "
                            + "; ".join(changed))
        if grow:
            store.update_run(run_id, config=config.model_dump(), total=len(the_plan))
    else:
        config = config.model_copy(update={"graded_by": versions})
        run_id = store.create_run(
            config.model_dump(), policy=config.policy, total=len(the_plan), backend=backend
        )
        done = set()
    todo = [c.key for c in the_plan.cells if c.key not in done]
    return Prepared(run_id, config, the_plan, todo, len(the_plan) - len(todo), warnings)


def execute(
    store: RunStore,
    prepared: Prepared,
    *,
    backend: Backend = "local",
    workers: int = 1,
    ray_address: str | None = None,
    trajectories: bool = True,
    on_record: Callable[[Record, bool], None] | None = None,
) -> int:
    """Run the missing cells; each batch that comes back (a worker's chunk) is committed in one
    transaction before ``on_record(record, written)`` sees its records (without their
    trajectories, verdicts and calls, ``None``, when a pool worker wrote them: read them from
    the store). Returns how many episodes were written.

    Local pool workers write their own chunks (:func:`simforge.runs.local.store_local`); the
    in-process runner and Ray's driver write what comes back (a Ray worker may not reach a
    SQLite file)."""
    wanted = set(prepared.todo)
    cells = [c for c in prepared.plan.cells if c.key in wanted]
    plan, policy, user = prepared.plan, prepared.config.policy, prepared.config.user
    batches: Iterator[list[tuple[Record, bool]]]
    if backend == "ray":
        from simforge.runs.ray_backend import run_ray

        records = run_ray(
            cells, plan.refs, policy, address=ray_address, num_cpus=workers or None,
            trajectories=trajectories, profiles=plan.profiles, user=user,
        )
        batches = _written(store, prepared.run_id, records)
    elif workers <= 0:
        records = run_local(cells, plan.refs, policy, workers=0, trajectories=trajectories,
                            profiles=plan.profiles, user=user)
        batches = _written(store, prepared.run_id, records)
    else:
        store.upgrade()  # once, here, rather than racing in every worker
        batches = store_local(
            cells, plan.refs, policy, (store.url, prepared.run_id), workers=workers,
            trajectories=trajectories, profiles=plan.profiles, user=user,
        )
    written = 0
    for batch in batches:
        for record, fresh in batch:
            written += fresh
            if on_record is not None:
                on_record(record, fresh)
    if store.count(prepared.run_id) >= len(prepared.plan):
        store.finish_run(prepared.run_id)
    return written


def _written(
    store: RunStore, run_id: str, batches: Iterable[list[Record]]
) -> Iterator[list[tuple[Record, bool]]]:
    """Each batch written in one transaction, then ``(record, written)`` per record."""
    for batch in batches:
        yield list(zip(batch, store.add_episodes(run_id, batch), strict=True))
