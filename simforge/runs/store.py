"""The run store: runs, episodes, verdicts, steps (tool calls) and injected faults, as SQLModel
tables in SQLite (a file, WAL) or PostgreSQL (by URL).

Durability is per episode: each finished episode is written in one transaction (its row, its
verdicts, its calls, its faults), so a runner killed with SIGKILL loses only episodes that had
not finished. ``UNIQUE(run_id, key)`` makes a second copy of a cell impossible, so a resumed run
(or two drivers racing on one run) can never double-count. Inserts go through SQLAlchemy Core
with the tables SQLModel declares: the ORM's unit of work would cost more than the episode.

Opening a store checks it rather than guessing: a store that cannot be reached raises
:class:`StoreError` naming it (password hidden); ``create=False`` (what reading commands use)
never creates a database, and a SQLite store's folder must already exist (a mistyped path is an
error, not a new folder tree).

SQLite runs with ``journal_mode=WAL`` (readers, such as ``simforge report`` on a live run, never
block the writer) and ``synchronous=NORMAL`` (a commit survives the death of the process, which
is the failure that matters here; only an OS crash can lose the last commits).
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    Table,
    Text,
    UniqueConstraint,
    event,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel, create_engine

from simforge.config import NotFound
from simforge.runs.worker import Record

DEFAULT_STORE = "sqlite:///simforge-runs.db"
"""Relative to the working directory; ``--store`` or ``$SIMFORGE_STORE`` override it."""


class StoreError(Exception):
    """The run store cannot be opened: unreachable, missing, or not a run store. The message
    is one line and names the store without its password."""


class StoreBase(SQLModel, registry=registry()):
    """Own metadata: the store's tables never mix with a pack's entity tables."""


class RunRow(StoreBase, table=True):
    __tablename__ = "runs"

    id: str = Field(primary_key=True, max_length=64)
    created_at: float
    finished_at: float | None = None
    status: str = "running"
    policy: str
    backend: str = "local"
    total: int = 0
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class EpisodeRow(StoreBase, table=True):
    __tablename__ = "episodes"
    __table_args__ = (UniqueConstraint("run_id", "key", name="uq_episode_cell"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id", index=True, max_length=64)
    key: str
    scenario: str
    task: str
    profile: str
    seed: int
    trial: int
    policy: str
    reward: float | None = None
    passed: bool = False
    invalid_reason: str | None = Field(default=None, sa_column=Column(Text))
    steps: int = 0
    sim_time: float = 0.0
    terminated: bool = False
    truncated: bool = False
    truncation_reason: str | None = None
    failed: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    wall_s: float = 0.0
    finished_at: float = 0.0
    trajectory: str | None = Field(default=None, sa_column=Column(Text))


class VerdictRow(StoreBase, table=True):
    __tablename__ = "verdicts"

    id: int | None = Field(default=None, primary_key=True)
    episode_id: int = Field(foreign_key="episodes.id", index=True)
    name: str
    category: str
    passed: bool
    score: float
    evidence: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class StepRow(StoreBase, table=True):
    """One tool call of an episode, with its simulated start and end (latency histograms)."""

    __tablename__ = "steps"

    id: int | None = Field(default=None, primary_key=True)
    episode_id: int = Field(foreign_key="episodes.id", index=True)
    idx: int
    call_id: str
    tool: str
    ok: bool
    status: int | None = None
    started_at: float | None = None
    ended_at: float | None = None


class FaultRow(StoreBase, table=True):
    __tablename__ = "faults"

    id: int | None = Field(default=None, primary_key=True)
    episode_id: int = Field(foreign_key="episodes.id", index=True)
    kind: str
    tool: str
    call_id: str | None = None
    call_index: int
    sim_time: float
    rule: str | None = None


RUNS: Table = RunRow.__table__  # type: ignore[attr-defined]
EPISODES: Table = EpisodeRow.__table__  # type: ignore[attr-defined]
VERDICTS: Table = VerdictRow.__table__  # type: ignore[attr-defined]
STEPS: Table = StepRow.__table__  # type: ignore[attr-defined]
FAULTS: Table = FaultRow.__table__  # type: ignore[attr-defined]
_EPISODE_FIELDS = [c.name for c in EPISODES.columns if c.name != "id"]
_SUMMARY_COLUMNS = [c for c in EPISODES.columns if c.name != "trajectory"]


def normalise_url(url: str) -> str:
    """``postgresql://`` means psycopg 3 here; a bare path means a SQLite file."""
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if "://" not in url:
        return f"sqlite:///{Path(url).resolve()}"
    return url


def redact_url(url: str) -> str:
    """``url`` fit to print: the password replaced by ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (SQLAlchemyError, ValueError):
        return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


def _sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL; ``None`` for other databases and in-memory SQLite."""
    if not url.startswith("sqlite"):
        return None
    path = url.split(":///", 1)[1] if ":///" in url else ""
    path = path.split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def _reason(exc: BaseException) -> str:
    """The first line of what the driver said (SQLAlchemy appends a paragraph and a link)."""
    cause = getattr(exc, "orig", None) or exc
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    return lines[0] if lines else type(cause).__name__


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class RunStore:
    """One database of runs. Cheap to open; safe to open again from another process."""

    def __init__(self, url: str = DEFAULT_STORE, *, create: bool = True) -> None:
        """Open the store at ``url``. With ``create`` (writing), a missing database file and
        missing tables are created; without it (reading), the store must already exist.
        :class:`StoreError` when it cannot be opened."""
        self.url = normalise_url(url)
        self.display_url = redact_url(self.url)
        path = _sqlite_path(self.url)
        if path is not None:
            if not create and not path.is_file():
                raise StoreError(f"no run store at {self.display_url}: {path} does not exist")
            if create and not path.parent.is_dir():
                raise StoreError(
                    f"cannot create the run store {self.display_url}: the folder {path.parent} "
                    "does not exist"
                )
        try:
            self.engine = _engine(self.url)
            if create:
                StoreBase.metadata.create_all(self.engine)
            elif not inspect(self.engine).has_table(RUNS.name):
                raise StoreError(
                    f"{self.display_url} is not a simforge run store (no {RUNS.name!r} table)"
                )
        except (SQLAlchemyError, ImportError, StoreError) as exc:
            engine = getattr(self, "engine", None)
            if engine is not None:
                engine.dispose()
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot open the run store {self.display_url}: {_reason(exc)}"
                             ) from exc

    def close(self) -> None:
        self.engine.dispose()

    # -- writing -------------------------------------------------------------------------------

    def create_run(
        self,
        config: dict[str, Any],
        *,
        policy: str,
        total: int,
        backend: str = "local",
        run_id: str | None = None,
    ) -> str:
        run_id = run_id or new_run_id()
        with self.engine.begin() as conn:
            conn.execute(
                insert(RUNS).values(
                    id=run_id, created_at=time.time(), status="running", policy=policy,
                    backend=backend, total=total, config=config,
                )
            )
        return run_id

    def add_episode(self, run_id: str, record: Record) -> bool:
        """Write one finished episode in one transaction; ``False`` if its cell is already there
        (a resumed or duplicated cell is never written twice)."""
        return self.add_episodes(run_id, [record])[0]

    def add_episodes(self, run_id: str, records: list[Record]) -> list[bool]:
        """Write episodes that arrived together in one transaction (one commit, which is what
        a durable write costs: an fsync on PostgreSQL). Each is whole or absent; if any cell is
        already stored, they are written one by one and the duplicates are skipped. Returns,
        per record, whether it was written."""
        if not records:
            return []
        try:
            with self.engine.begin() as conn:
                self._write(conn, run_id, records)
            return [True] * len(records)
        except IntegrityError:
            if len(records) == 1:
                if records[0]["key"] in self.done_keys(run_id):
                    return [False]
                raise
        return [self.add_episodes(run_id, [r])[0] for r in records]

    @staticmethod
    def _write(conn: Connection, run_id: str, records: list[Record]) -> None:
        verdicts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        faults: list[dict[str, Any]] = []
        now = time.time()
        for record in records:
            row = {name: record.get(name) for name in _EPISODE_FIELDS}
            row.update(run_id=run_id, finished_at=now)
            key = conn.execute(insert(EPISODES), row).inserted_primary_key
            assert key is not None
            episode_id = key[0]
            verdicts += [
                {"episode_id": episode_id, "name": v["name"], "category": v["category"],
                 "passed": v["passed"], "score": v["score"], "evidence": v.get("evidence") or {}}
                for v in record.get("verdicts") or []
            ]
            calls += [{"episode_id": episode_id, "idx": i, **c}
                      for i, c in enumerate(record.get("calls") or [])]
            faults += [{"episode_id": episode_id, **f} for f in record.get("faults") or []]
        for table, rows in ((VERDICTS, verdicts), (STEPS, calls), (FAULTS, faults)):
            if rows:
                conn.execute(insert(table), rows)

    def update_run(self, run_id: str, *, config: dict[str, Any], total: int) -> None:
        """A run whose plan grew (``stress --resume RUN --attribute``): its new config and
        size; it runs again until the new cells are stored."""
        with self.engine.begin() as conn:
            conn.execute(
                update(RUNS).where(RUNS.c.id == run_id)
                .values(config=config, total=total, status="running", finished_at=None)
            )

    def finish_run(self, run_id: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(RUNS)
                .where(RUNS.c.id == run_id)
                .values(status="complete", finished_at=time.time())
            )

    # -- reading -------------------------------------------------------------------------------

    def runs(self) -> list[dict[str, Any]]:
        table = RUNS
        counts = (
            select(EPISODES.c.run_id, func.count().label("n"))
            .group_by(EPISODES.c.run_id)
            .subquery()
        )
        query = (
            select(table, func.coalesce(counts.c.n, 0).label("episodes"))
            .outerjoin(counts, counts.c.run_id == table.c.id)
            .order_by(table.c.created_at)
        )
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def run(self, run_id: str) -> dict[str, Any]:
        table = RUNS
        with self.engine.connect() as conn:
            row = conn.execute(select(table).where(table.c.id == run_id)).first()
        if row is None:
            known = [r["id"] for r in self.runs()][-10:]
            raise NotFound(f"no run {run_id!r} in {self.display_url}; latest runs: {known}")
        return dict(row._mapping)

    def done_keys(self, run_id: str) -> set[str]:
        table = EPISODES
        with self.engine.connect() as conn:
            rows = conn.execute(select(table.c.key).where(table.c.run_id == run_id))
            return {r[0] for r in rows}

    def count(self, run_id: str) -> int:
        table = EPISODES
        with self.engine.connect() as conn:
            query = select(func.count()).where(table.c.run_id == run_id)
            return int(conn.execute(query).scalar_one())

    def episodes(self, run_id: str, *, details: bool = True) -> list[dict[str, Any]]:
        """Every stored episode of the run (without trajectories), in key order; with
        ``details``, each carries its ``verdicts``, ``faults`` and ``calls``."""
        table = EPISODES
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(*_SUMMARY_COLUMNS)
                .where(table.c.run_id == run_id)
                .order_by(table.c.key)
            )
            episodes = [dict(r._mapping) for r in rows]
            if not details:
                return episodes
            by_id = {e["id"]: e for e in episodes}
            for e in episodes:
                e["verdicts"], e["faults"], e["calls"] = [], [], []
            ids = select(table.c.id).where(table.c.run_id == run_id)
            for name, ct in (("verdicts", VERDICTS), ("faults", FAULTS), ("calls", STEPS)):
                for r in conn.execute(select(ct).where(ct.c.episode_id.in_(ids)).order_by(ct.c.id)):
                    item = dict(r._mapping)
                    by_id[item.pop("episode_id")][name].append(item)
        return episodes

    def trajectories_of(self, run_id: str, keys: Iterable[str]) -> dict[str, str]:
        """The native trajectory JSON of the run's episodes with these cell keys (those that
        have one), by key: what a report needs to show the calls behind its evidence."""
        wanted = list(dict.fromkeys(keys))
        out: dict[str, str] = {}
        table = EPISODES
        with self.engine.connect() as conn:
            for i in range(0, len(wanted), 500):
                rows = conn.execute(
                    select(table.c.key, table.c.trajectory)
                    .where(table.c.run_id == run_id, table.c.key.in_(wanted[i : i + 500]))
                )
                out.update({k: t for k, t in rows if t is not None})
        return out

    def trajectories(self, run_id: str) -> Iterator[tuple[dict[str, Any], str | None]]:
        """``(episode summary, native trajectory JSON)`` in key order, streamed."""
        table = EPISODES
        query = (
            select(*_SUMMARY_COLUMNS, table.c.trajectory)
            .where(table.c.run_id == run_id)
            .order_by(table.c.key)
        )
        verdicts = {e["id"]: e["verdicts"] for e in self.episodes(run_id)}
        with self.engine.connect() as conn:
            for r in conn.execution_options(yield_per=200).execute(query):
                row = dict(r._mapping)
                text = row.pop("trajectory")
                row["verdicts"] = verdicts.get(row["id"], [])
                yield row, text


def _engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 60})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True)
