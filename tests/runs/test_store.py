"""The run store keeps every finished episode once, on SQLite and on PostgreSQL."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError

from simforge.config import NotFound
from simforge.runs.matrix import RunConfig, plan
from simforge.runs.store import (
    DETAIL_COLUMNS,
    EPISODES,
    FAULTS,
    STEPS,
    VERDICTS,
    RunStore,
    StoreError,
    _has_column,
    compress_trajectory,
    normalise_url,
    redact_url,
    trajectory_text,
)
from simforge.runs.worker import run_cells


@pytest.fixture
def records(mini: str) -> list[dict]:
    config = RunConfig(scenarios=[mini], policy="oracle", profiles=["flaky-network"], seeds=2)
    the_plan = plan(config.with_baseline())
    return run_cells(the_plan.cells, the_plan.refs, "oracle")


def test_an_episode_is_written_with_its_verdicts_calls_and_faults(store_url, records):
    store = RunStore(store_url)
    run_id = store.create_run({"scenarios": ["x"]}, policy="oracle", total=len(records))
    for record in records:
        assert store.add_episode(run_id, record) is True
    episodes = store.episodes(run_id)
    assert [e["key"] for e in episodes] == sorted(r["key"] for r in records)
    by_key = {r["key"]: r for r in records}
    for e in episodes:
        r = by_key[e["key"]]
        assert (e["reward"], e["passed"], e["steps"], e["sim_time"]) == (
            r["reward"], r["passed"], r["steps"], r["sim_time"])
        assert [v["name"] for v in e["verdicts"]] == [v["name"] for v in r["verdicts"]]
        assert [c["call_id"] for c in e["calls"]] == [c["call_id"] for c in r["calls"]]
        assert [f["kind"] for f in e["faults"]] == [f["kind"] for f in r["faults"]]
    assert any(e["faults"] for e in episodes), "flaky-network should fire on some call"
    store.close()


def test_a_cell_is_never_stored_twice(store_url, records):
    store = RunStore(store_url)
    run_id = store.create_run({}, policy="oracle", total=1)
    assert store.add_episode(run_id, records[0]) is True
    assert store.add_episode(run_id, records[0]) is False
    assert store.count(run_id) == 1
    other = store.create_run({}, policy="oracle", total=1)
    assert store.add_episode(other, records[0]) is True  # unique per run, not globally
    store.close()


def test_a_stored_trajectory_parses_to_the_episode_played(mini):
    """The worker stores a trajectory's JSON without the fields its recorder never set: it
    parses to the very episode that was played, faults, world changes and all."""
    from simforge.runs.episode import play_episode
    from simforge.runs.worker import _env, _policy, to_record
    from simforge.trace.episode import Episode

    the_plan = plan(RunConfig(scenarios=[mini], policy="oracle", profiles=["flaky-network"],
                              seeds=3).with_baseline())
    checked = 0
    for cell in the_plan.cells:
        outcome = play_episode(_env(the_plan.refs[cell.scenario]), _policy("oracle"),
                               seed=cell.seed, task=cell.task, faults=cell.profile)
        text = trajectory_text(None, to_record(cell, outcome, 0.0)["trajectory"])
        assert text is not None
        assert Episode.model_validate_json(text) == outcome.trajectory
        checked += bool(outcome.trajectory.simulation and outcome.trajectory.simulation.faults)
    assert checked, "flaky-network should fire in some episode"


def test_trajectories_stream_back_as_native_json(store_url, records):
    from simforge.trace.episode import Episode

    store = RunStore(store_url)
    run_id = store.create_run({}, policy="oracle", total=len(records))
    for record in records:
        store.add_episode(run_id, record)
    rows = list(store.trajectories(run_id))
    assert len(rows) == len(records)
    for row, text in rows:
        episode = Episode.model_validate_json(text)
        assert episode.simulation is not None
        assert episode.simulation.task == row["task"]
        assert row["verdicts"]
    store.close()


def test_runs_are_listed_with_their_progress_and_finished(store_url, records):
    store = RunStore(store_url)
    run_id = store.create_run({"policy": "oracle"}, policy="oracle", total=len(records))
    store.add_episode(run_id, records[0])
    (run,) = [r for r in store.runs() if r["id"] == run_id]
    assert (run["episodes"], run["total"], run["status"]) == (1, len(records), "running")
    store.finish_run(run_id)
    assert store.run(run_id)["status"] == "complete"
    with pytest.raises(NotFound, match="no run 'nope'"):
        store.run("nope")
    store.close()


def test_sqlite_runs_in_wal_mode(sqlite_url):
    store = RunStore(sqlite_url)
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    store.close()


def test_store_urls_are_normalised(tmp_path):
    assert normalise_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalise_url(str(tmp_path / "a.db")) == f"sqlite:///{tmp_path / 'a.db'}"
    assert normalise_url("sqlite:///x.db") == "sqlite:///x.db"


def test_opening_checks_the_store_instead_of_creating_it(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        RunStore(str(tmp_path / "missing.db"), create=False)
    with pytest.raises(StoreError, match=r"folder .* does not exist"):
        RunStore(str(tmp_path / "no" / "runs.db"))
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "other.db").write_bytes(b"")
    with pytest.raises(StoreError, match="not a simforge run store"):
        RunStore(str(tmp_path / "other.db"), create=False)
    RunStore(str(tmp_path / "runs.db")).close()  # a new file in an existing folder is fine
    assert RunStore(str(tmp_path / "runs.db"), create=False).runs() == []


def test_an_unreachable_store_names_itself_without_the_password():
    assert redact_url("postgresql+psycopg://u:pw@h:5432/db") == "postgresql+psycopg://u:***@h:5432/db"
    with pytest.raises(StoreError) as caught:
        RunStore("postgresql://u:pw@127.0.0.1:1/db", create=False)
    message = str(caught.value)
    assert message.startswith("cannot open the run store postgresql+psycopg://u:***@127.0.0.1:1")
    assert "pw@" not in message and "\n" not in message


def test_a_batch_with_a_stored_cell_writes_the_others(store_url, records):
    store = RunStore(store_url)
    run_id = store.create_run({}, policy="oracle", total=len(records))
    assert store.add_episodes(run_id, records[:2]) == [True, True]
    assert store.add_episodes(run_id, records[1:4]) == [False, True, True]
    assert store.count(run_id) == 4
    assert len({e["key"] for e in store.episodes(run_id)}) == 4
    store.close()


def test_a_grown_plan_and_the_trajectories_of_some_cells(store_url, records):
    """What `stress --resume --attribute` and the reports' evidence ask of a store."""
    store = RunStore(store_url)
    run_id = store.create_run({"attribute": False}, policy="oracle", total=2)
    for record in records[:2]:
        store.add_episode(run_id, record)
    store.finish_run(run_id)
    store.update_run(run_id, config={"attribute": True}, total=len(records))
    run = store.run(run_id)
    assert (run["config"], run["total"], run["status"], run["finished_at"]) == (
        {"attribute": True}, len(records), "running", None)
    wanted = [records[1]["key"], "no|such|cell|0|0"]
    found = store.trajectories_of(run_id, wanted)
    assert list(found) == [records[1]["key"]] and found[records[1]["key"]].startswith("{")
    assert store.trajectories_of(run_id, []) == {}
    store.close()


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_a_compressed_trajectory_reads_back_as_its_text(text):
    assert trajectory_text(None, compress_trajectory(text)) == text
    assert trajectory_text(None, zlib.compress(text.encode(), 1)) == text  # an older version's
    assert trajectory_text(text, None) == text  # a row written before compression
    assert trajectory_text(None, None) is None


def test_trajectories_are_stored_compressed_and_read_back_exactly(store_url, records):
    store = RunStore(store_url)
    run_id = store.create_run({}, policy="oracle", total=len(records))
    assert store.add_episodes(run_id, records) == [True] * len(records)
    with store.engine.connect() as conn:
        raw = dict(conn.execute(select(EPISODES.c.key, EPISODES.c.trajectory_z)
                                .where(EPISODES.c.trajectory.is_(None))).all())
    assert raw.keys() == {r["key"] for r in records}  # no text copy beside the compressed one
    texts = dict((row["key"], text) for row, text in store.trajectories(run_id))
    for r in records:
        assert bytes(raw[r["key"]]) == r["trajectory"]
        assert texts[r["key"]] == trajectory_text(None, r["trajectory"])
    some = store.trajectories_of(run_id, [records[0]["key"]])
    assert some == {records[0]["key"]: texts[records[0]["key"]]}
    key = records[1]["key"]  # as the version before zstd compressed it
    with store.engine.begin() as conn:
        conn.execute(update(EPISODES).where(EPISODES.c.key == key).values(
            trajectory_z=zlib.compress(texts[key].encode(), 1)))
    assert dict((row["key"], text) for row, text in store.trajectories(run_id)) == texts
    assert store.trajectories_of(run_id, [key]) == {key: texts[key]}
    store.close()


def test_an_episode_that_cannot_be_written_is_absent_whole(store_url, records):
    """A batch is one transaction: when one of its episodes breaks a constraint (here an
    episode without its scenario), nothing of that episode is left behind, and the batch's
    other episodes are still stored, each whole."""
    broken = {**records[2], "scenario": None}
    batch = [*records[:2], broken, records[3]]
    store = RunStore(store_url)
    run_id = store.create_run({}, policy="oracle", total=len(batch))
    with pytest.raises(IntegrityError):
        store.add_episodes(run_id, batch)
    stored = {e["key"]: e for e in store.episodes(run_id)}
    assert broken["key"] not in stored
    for r in records[:2]:
        e = stored[r["key"]]
        assert len(e["verdicts"]) == len(r["verdicts"]) and len(e["calls"]) == len(r["calls"])
        assert len(e["faults"]) == len(r["faults"])
    with store.engine.connect() as conn:
        for table in (VERDICTS, STEPS, FAULTS):
            orphans = conn.execute(select(func.count()).select_from(table).where(
                table.c.episode_id.not_in(select(EPISODES.c.id)))).scalar_one()
            assert orphans == 0, table.name
    assert store.add_episodes(run_id, [records[3]]) == [True]  # nothing half-written blocks it
    store.close()


def _as_an_old_store(url: str) -> None:
    """The store at ``url`` as simforge wrote it before ``trajectory_z`` and before an
    episode's row held its details: text trajectories, verdicts, calls and faults as rows of
    their own tables, and none of those columns."""
    store = RunStore(url)
    columns = [EPISODES.c.id, EPISODES.c.trajectory_z, *(EPISODES.c[n] for n in DETAIL_COLUMNS)]
    with store.engine.begin() as conn:
        rows = conn.execute(select(*columns).order_by(EPISODES.c.id)).all()
        for episode_id, packed, verdicts, faults, calls in rows:
            conn.execute(update(EPISODES).where(EPISODES.c.id == episode_id).values(
                trajectory=trajectory_text(None, packed)))
            for table, items in ((VERDICTS, verdicts), (FAULTS, faults), (STEPS, calls)):
                for i, item in enumerate(items):
                    extra = {"idx": i} if table is STEPS else {}
                    conn.execute(insert(table).values(episode_id=episode_id, **extra, **item))
        for name in ("trajectory_z", *DETAIL_COLUMNS):
            conn.exec_driver_sql(f"ALTER TABLE {EPISODES.name} DROP COLUMN {name}")
    store.close()


def _same(episodes: list[dict]) -> list[dict]:
    """Episodes without what differs between two runs of them (ids, times)."""
    return [{k: v for k, v in e.items() if k not in ("id", "run_id", "wall_s", "finished_at")}
            for e in episodes]


def test_an_episodes_details_read_back_alike_from_its_row_and_from_older_rows(
        store_url, mini, harsh_profile):
    """A run resumed in a store written by an older version holds episodes of both kinds
    (details in rows of their own, details in the episode's row): every reader gets from it
    what it gets from the same run written whole by this version, and the report's figures are
    the same."""
    from simforge.report.stored import load_run
    from simforge.runs.runner import execute, prepare

    config = RunConfig(scenarios=[mini], policy="oracle", seeds=3,
                       profiles=[harsh_profile]).with_baseline()
    store = RunStore(store_url)
    whole = prepare(store, config)
    execute(store, whole, workers=0)
    half = prepare(store, config)
    half.todo = half.todo[: len(half.todo) // 2]
    execute(store, half, workers=0)
    store.close()
    _as_an_old_store(store_url)

    store = RunStore(store_url, create=False)
    old = store.episodes(half.run_id)
    assert len(old) == len(half.todo) and all(e["verdicts"] for e in old)
    resumed = prepare(store, resume=half.run_id)
    assert len(resumed.todo) == len(resumed.plan) - len(old)
    execute(store, resumed, workers=0)  # the first write adds the columns
    assert _has_column(store.engine, EPISODES.name, "verdicts")
    expected, mixed = store.episodes(whole.run_id), store.episodes(half.run_id)
    assert _same(mixed) == _same(expected)
    assert any(e["faults"] for e in old) and any(e["calls"] for e in old)
    assert _same(store.episodes(half.run_id, details=False)) == _same(
        store.episodes(whole.run_id, details=False))
    assert ([_same([row])[0] for row, _ in store.trajectories(half.run_id)]
            == [_same([row])[0] for row, _ in store.trajectories(whole.run_id)])
    runs = [load_run(store, run_id) for run_id in (whole.run_id, half.run_id)]
    timed = ("run_id", "wall_s")  # the summary's, as they differ between two runs
    assert {k: v for k, v in runs[0][3].items() if k not in timed} == {
        k: v for k, v in runs[1][3].items() if k not in timed}
    store.close()


def test_a_store_written_before_compression_is_read_and_upgraded_on_first_write(
        store_url, mini, tmp_path):
    from simforge.runs.export import export_runs
    from simforge.runs.regrade import regrade
    from simforge.runs.runner import execute, prepare

    store = RunStore(store_url)
    prepared = prepare(store, RunConfig(scenarios=[mini], policy="oracle", seeds=2,
                                        profiles=["flaky-network"]).with_baseline())
    execute(store, prepared, workers=0)
    old_run = prepared.run_id
    expected = dict((row["key"], text) for row, text in store.trajectories(old_run))
    export_runs(store, [old_run], "native", tmp_path / "new.jsonl")
    store.close()
    _as_an_old_store(store_url)

    reader = RunStore(store_url, create=False)  # reading changes nothing
    assert dict((row["key"], text) for row, text in reader.trajectories(old_run)) == expected
    export_runs(reader, [old_run], "native", tmp_path / "old.jsonl")
    assert (tmp_path / "old.jsonl").read_bytes() == (tmp_path / "new.jsonl").read_bytes()
    assert not _has_column(reader.engine, EPISODES.name, "trajectory_z")

    writer = RunStore(store_url, create=False)
    again = regrade(writer, old_run)  # reads the text trajectories, writes compressed ones
    assert again.episodes == len(expected) and again.not_replayed == {}
    assert _has_column(writer.engine, EPISODES.name, "trajectory_z")
    for run_id in (old_run, again.run_id):  # both kinds of row, through either store object
        for store_ in (writer, reader):
            found = dict((row["key"], text) for row, text in store_.trajectories(run_id))
            assert found == expected, run_id
            assert store_.trajectories_of(run_id, list(expected)) == expected
    reader.close()
    writer.close()
