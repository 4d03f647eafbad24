"""Background processes: production load that competes for tool capacity, and drift that
changes the world while the agent thinks. Both draw from the session's named streams, so they
are as reproducible as everything else."""

from __future__ import annotations

import fnmatch
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from simforge.errors import UserError
from simforge.faults.rules import BackgroundLoad, Drift, Event
from simforge.tools.context import ToolContext
from simforge.tools.errors import ToolError

if TYPE_CHECKING:
    from simforge.sim.session import Session


class BackgroundError(UserError, ValueError):
    """A background process that names tools or entities the pack does not have."""


def start_background(session: Session, spec: BackgroundLoad | Drift | Event) -> simpy.Process:
    """Check the spec against the pack (so a mistake fails here, not mid-simulation), start it."""
    if isinstance(spec, Event):
        if spec.tool not in session.catalog:
            raise BackgroundError(f"event {spec.name!r}: unknown tool {spec.tool!r}")
        if spec.entity not in session.world.schemas:
            raise BackgroundError(f"event {spec.name!r}: unknown entity {spec.entity!r}")
        return session.env.process(_events(session, spec))
    if isinstance(spec, BackgroundLoad):
        tools = [
            t
            for name, t in session.tools.items()
            if any(fnmatch.fnmatchcase(name, p) for p in spec.tools)
        ]
        if not tools:
            raise BackgroundError(f"background load {spec.name!r}: no tool matches {spec.tools}")
        for name, arg in spec.args.items():
            if arg.entity is not None and arg.entity not in session.world.schemas:
                raise BackgroundError(
                    f"background load {spec.name!r}: args.{name}: unknown entity {arg.entity!r}"
                )
        return session.env.process(_load(session, spec, tools))
    if spec.entity not in session.world.schemas:
        raise BackgroundError(f"drift {spec.name!r}: unknown entity {spec.entity!r}")
    return session.env.process(_drift(session, spec))


def _load(
    session: Session, spec: BackgroundLoad, tools: list[Any]
) -> Generator[simpy.Event, Any, None]:
    rng = session.streams("background", spec.name)
    ids = {
        name: session.world.ids(arg.entity)
        for name, arg in spec.args.items()
        if arg.entity is not None
    }
    env = session.env
    if spec.start > 0:
        yield env.timeout(spec.start)
    while True:
        hour = int(env.now // 3600) % len(spec.profile)
        rate = spec.rate * spec.profile[hour]
        if rate <= 0:
            yield env.timeout(3600 - env.now % 3600)
            continue
        yield env.timeout(rng.expovariate(rate))
        if session.done:  # other actors act during the episode, not on the world it left
            return
        tool = tools[rng.randrange(len(tools))]
        args = {
            name: (rng.choice(ids[name]) if ids.get(name) else arg.value)
            for name, arg in spec.args.items()
        }
        session.pipeline.start_background(tool, args)


def _drift(session: Session, spec: Drift) -> Generator[simpy.Event, Any, None]:
    rng = session.streams("drift", spec.name)
    env = session.env
    world = session.world
    key = world.schemas[spec.entity].primary_key
    if spec.start > 0:
        yield env.timeout(spec.start)
    while True:
        yield env.timeout(rng.expovariate(1.0 / spec.every))
        if session.done:  # the episode's world is settled (late writes landed at their times)
            return
        rows = [
            r for r in world.rows(spec.entity) if all(r.get(k) == v for k, v in spec.where.items())
        ]
        if rows:
            row = rows[rng.randrange(len(rows))]
            world.update(spec.entity, str(row[key]), spec.set, now=env.now)


def _events(session: Session, spec: Event) -> Generator[simpy.Event, Any, None]:
    """Another actor's calls: each at a Poisson time, on a random matching row, recorded with
    what they changed (``session.world_events``), which the agent is not blamed for."""
    rng = session.streams("event", spec.name)
    env = session.env
    world = session.world
    tool = session.catalog[spec.tool]
    key = world.schemas[spec.entity].primary_key
    if spec.start > 0:
        yield env.timeout(spec.start)
    done = 0
    while spec.limit is None or done < spec.limit:
        yield env.timeout(rng.expovariate(1.0 / spec.every))
        if session.done:
            return
        rows = [
            r for r in world.rows(spec.entity) if all(r.get(k) == v for k, v in spec.where.items())
        ]
        if not rows:
            continue
        row = rows[rng.randrange(len(rows))]
        args = {
            name: (row.get(key if value == "$id" else value[1:])
                   if isinstance(value, str) and value.startswith("$") else value)
            for name, value in spec.args.items()
        }
        done += 1
        mark = world.log_length
        ctx = ToolContext(world, env.now, session.streams("event-handler", spec.name),
                          tool=tool.name, call_id=f"event-{spec.name}-{done}", call_index=done)
        record: dict[str, Any] = {"at": env.now, "name": spec.name, "tool": tool.name,
                                  "args": args, "ok": True}
        try:
            tool.invoke(ctx, args)
        except ToolError as exc:
            record.update(ok=False, error=exc.to_dict())
        record["changed"] = [
            {"entity": c.entity, "id": c.id, "op": c.op, "fields": sorted(c.fields)}
            for c in world.diff_from(mark)
        ]
        session.world_events.append(record)
