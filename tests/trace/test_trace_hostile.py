"""The cases of silent data loss, memory blow-ups and half-written outputs, one test each.

Every test here failed before ingestion was hardened (the figures in the docstrings are what it
did then) and passes now.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from simforge import atomic, jsonio
from simforge.cli import app
from simforge.trace.ingest import IngestResult, ingest
from simforge.trace.quarantine import Quarantine
from tests.trace.hostile import check, deep, deep_text, seed_records

TAU_BENCH = "tau-bench/historical_trajectories/gpt-4o-airline.json"
TAU2 = "tau2-bench/results/gpt-4.1_airline_default_gpt-4.1_1trials.json"
REPO = Path(__file__).parents[2]
runner = CliRunner()


def _records(shared_data: Path) -> list[dict[str, object]]:
    return orjson.loads((shared_data / TAU_BENCH).read_bytes())  # type: ignore[no-any-return]


def _run(path: Path, **kwargs: object) -> IngestResult:
    quarantine = path.with_name(path.name + ".quarantine.jsonl")
    result = ingest(path, quarantine=quarantine, keep=True, **kwargs)  # type: ignore[arg-type]
    check(result, quarantine)
    return result


def _dumps(episodes: list[object]) -> list[str]:
    return [e.model_dump_json(exclude={"source"}) for e in episodes]  # type: ignore[attr-defined]


# --- a bad neighbour ----------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["document", "jsonl", "forced"])
def test_a_damaged_first_record_costs_only_itself(
    shared_data: Path, tmp_path: Path, layout: str
) -> None:
    """Record 0 replaced by ``{"task_id": 0}``: 0 of 200 kept before (199 with --format)."""
    records = [{"task_id": 0}, *_records(shared_data)[1:]]
    if layout == "jsonl":
        path = tmp_path / "airline.jsonl"
        path.write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")
    else:
        path = tmp_path / "airline.json"
        path.write_bytes(orjson.dumps(records, option=orjson.OPT_INDENT_2))
    result = _run(path, format="tau_bench" if layout == "forced" else None)
    assert (result.records_read, result.records_kept, result.rejected) == (200, 199, 1)
    assert result.formats == {"tau_bench": 199}


@pytest.mark.parametrize("layout", ["document", "jsonl"])
def test_nan_is_read_as_null_with_a_counted_warning(
    shared_data: Path, tmp_path: Path, layout: str
) -> None:
    """One NaN (json.dump's default) in record 5: 5 kept and 194 gone, "1 rejected", before."""
    records = _records(shared_data)
    clean = tmp_path / "clean.json"
    clean.write_bytes(orjson.dumps(records))
    damaged = [dict(r) for r in records]
    damaged[5]["reward"] = float("nan")
    damaged[9]["info"] = {**damaged[9]["info"], "latency": float("inf")}  # type: ignore[dict-item]
    if layout == "jsonl":
        path = tmp_path / "nan.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in damaged) + "\n")
    else:
        path = tmp_path / "nan.json"
        path.write_text(json.dumps(damaged, indent=2))
    result = _run(path)
    assert (result.records_kept, result.rejected, result.nonfinite) == (200, 0, 2)
    assert result.collected[5].outcome.reward is None
    expected = _dumps(ingest(clean, keep=True).collected)
    got = _dumps(result.collected)
    assert [g for i, g in enumerate(got) if i not in (5, 9)] == [
        e for i, e in enumerate(expected) if i not in (5, 9)]


def test_a_byte_order_mark_on_a_document_is_skipped(shared_data: Path, tmp_path: Path) -> None:
    """A UTF-8 BOM before a JSON document: "1 rejected", nothing read, before."""
    for name in (TAU_BENCH, TAU2):
        path = tmp_path / Path(name).name
        path.write_bytes(b"\xef\xbb\xbf" + (shared_data / name).read_bytes())
        result = _run(path)
        plain = ingest(shared_data / name, keep=True)
        assert result.rejected == 0 and result.episodes == plain.episodes > 0
        assert _dumps(result.collected) == _dumps(plain.collected)


def test_garbage_lines_are_rejected_not_made_empty_episodes(tmp_path: Path) -> None:
    """``[]`` and ``{"messages": []}`` became empty episodes (248 in the fuzz) before."""
    good = [orjson.dumps(c) for c in seed_records()["openai"]]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join([b"[]", good[0], b'{"messages": []}', *good[1:], b"[]"]) + b"\n")
    result = _run(path, format="openai")
    assert (result.episodes, result.rejected) == (len(good), 3)
    assert all(e.messages for e in result.collected)
    assert all("no conversation" in r.reason for r in result.rejections)


@pytest.mark.parametrize("falsy", ['""', "0", "false", "{}"])
@pytest.mark.parametrize("fmt", ["openai", "tau_bench", "tau2"])
def test_a_falsy_tool_calls_is_a_record_error(tmp_path: Path, falsy: str, fmt: str) -> None:
    """A falsy ``tool_calls`` silently dropped the calls and orphaned their results before."""
    record = json.loads(json.dumps(seed_records()[fmt][0]))
    messages = record["messages"] if fmt != "tau_bench" else record["traj"]
    if isinstance(record, list):
        messages = record
    calling = next(m for m in messages if m.get("tool_calls"))
    calling["tool_calls"] = json.loads(falsy)
    path = tmp_path / "falsy.jsonl"
    path.write_bytes(orjson.dumps(record) + b"\n" + orjson.dumps(seed_records()[fmt][1]) + b"\n")
    result = _run(path, format=fmt)
    assert (result.records_kept, result.rejected) == (1, 1)
    assert "tool_calls is not an array" in result.rejections[0].reason


@pytest.mark.parametrize("pretty", [True, False])
def test_a_broken_record_in_a_document_is_quarantined_at_its_true_offset(
    shared_data: Path, tmp_path: Path, pretty: bool
) -> None:
    """Before, everything after a syntax error was lost, and the offset quarantined was the
    read buffer's position."""
    records = _records(shared_data)
    texts = [json.dumps(r, indent=2).replace("\n", "\n  ") if pretty else json.dumps(r)
             for r in records]
    texts[7] = texts[7][: len(texts[7]) // 2]  # cut in the middle
    body = ("[\n  " + ",\n  ".join(texts) + "\n]\n") if pretty else "[" + ",".join(texts) + "]"
    path = tmp_path / "cut.json"
    path.write_text(body)
    result = _run(path)
    assert (result.records_kept, result.rejected) == (199, 1)
    entry = orjson.loads(path.with_name("cut.json.quarantine.jsonl").read_bytes())
    data = body.encode()
    assert data[entry["offset"]:].startswith(texts[7][:200].encode())
    assert entry["raw"].startswith(texts[7][:100])
    ids = [e.task.id for e in result.collected]
    assert ids == [str(r["task_id"]) for i, r in enumerate(records) if i != 7]


def test_a_document_broken_in_its_tasks_keeps_its_simulations(
    shared_data: Path, tmp_path: Path
) -> None:
    text = (shared_data / TAU2).read_text()
    broken = text.replace('"user_scenario"', '"user_scenario" oops', 1)
    path = tmp_path / "tau2.json"
    path.write_text(broken)
    result = _run(path)
    assert result.formats == {"tau2": 20}
    assert result.rejected == 1, "the broken member is reported, and counted"


# --- limits that hold before work is done ---------------------------------------------------

@pytest.mark.parametrize(("levels", "kind"), [(20_000, "array"), (40_000, "array"),
                                               (20_000, "object"), (200_000, "open")])
def test_deep_documents_cost_memory_linear_in_their_size(
    tmp_path: Path, levels: int, kind: str
) -> None:
    """20,000 levels (69 KB) took 1 GB, 40,000 over 3 GB, 200 KB of ``[`` exhausted memory."""
    path = tmp_path / "deep.json"
    path.write_bytes(b"[" * levels if kind == "open" else deep_text(levels, kind))
    for fmt in (None, "openai", "tau_bench"):
        tracemalloc.start()
        try:
            result = _run(path, format=fmt)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 30 * 1024 * 1024 + 20 * path.stat().st_size
        assert result.episodes == 0 and result.rejected >= 1


def test_a_record_nested_past_the_limit_is_quarantined_and_out_is_written(
    tmp_path: Path,
) -> None:
    """Past ~254 levels: ``TypeError: Recursion limit reached`` (or pydantic's serialisation
    depth) before, and --out left an empty file."""
    good = seed_records()["openai"]
    too_deep = json.loads(json.dumps(good[1]))
    messages = too_deep["messages"] if isinstance(too_deep, dict) else too_deep
    messages[-1]["meta"] = deep(300)
    as_string = json.loads(json.dumps(good[2]))
    for message in as_string["messages"] if isinstance(as_string, dict) else as_string:
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = json.dumps({"x": deep(200, "object")})
    path = tmp_path / "deep.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [good[0], too_deep, as_string]))
    out, quarantine = tmp_path / "out.jsonl", tmp_path / "q.jsonl"
    result = runner.invoke(app, ["ingest", str(path), "--out", str(out), "--quarantine",
                                 str(quarantine), "--json"])
    assert result.exit_code == 0, result.output
    assert result.exception is None
    assert json.loads(result.stdout)["rejected"] == 2
    assert len(out.read_text().splitlines()) == 1
    reasons = [json.loads(line)["reason"] for line in quarantine.read_text().splitlines()]
    assert reasons == [f"nested deeper than {jsonio.MAX_DEPTH} levels"] * 2


def test_the_depth_limit_is_one_constant_for_values_and_bytes() -> None:
    assert jsonio.MAX_DEPTH == 128
    for levels, ok in ((128, True), (129, False)):
        for kind in ("array", "object"):
            assert jsonio.exceeds_depth(deep(levels, kind)) is not ok
            if ok:
                jsonio.check_depth(deep_text(levels, kind))
                assert jsonio.loads(deep_text(levels, kind)) == deep(levels, kind)
            else:
                with pytest.raises(jsonio.DepthError):
                    jsonio.check_depth(deep_text(levels, kind))
                with pytest.raises(jsonio.DepthError):
                    jsonio.loads(deep_text(levels, kind))
    assert jsonio.exceeds_depth([2**70, deep(128)])  # measured without orjson
    jsonio.check_depth(b'{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', limit=2)
    with pytest.raises(jsonio.DepthError):
        jsonio.check_depth(b"[" * 200_000)


# --- outputs that look whole are whole ---------------------------------------------------------

_KILLER = """
import os, signal, sys
sys.path.insert(0, {root!r})
from simforge.trace.ingest import ingest
seen = []
def on_episode(episode):
    seen.append(episode)
    if len(seen) == {after}:
        os.kill(os.getpid(), signal.SIGKILL)
ingest({paths!r}, out={out!r}, quarantine={quarantine!r}, on_episode=on_episode)
"""


def test_a_killed_ingest_leaves_the_previous_output_and_nothing_that_looks_whole(
    tmp_path: Path,
) -> None:
    """ingest --out wrote in place: killed at 12, 25 or 45 s it left line-aligned JSONL that
    re-ingested with 0 rejected, and the previous output was destroyed at start."""
    lines = [orjson.dumps(c) for c in seed_records()["openai"]] * 20 + [b'{"messages": 3}']
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    out, quarantine = tmp_path / "out.jsonl", tmp_path / "q.jsonl"
    out.write_bytes(b"previous output\n")
    quarantine.write_bytes(b"previous quarantine\n")
    for after in (1, 30, 59):
        code = _KILLER.format(root=str(REPO), paths=str(source), out=str(out),
                              quarantine=str(quarantine), after=after)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
        assert done.returncode == -signal.SIGKILL, done.stderr
        assert out.read_bytes() == b"previous output\n"
        assert quarantine.read_bytes() == b"previous quarantine\n"
        assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
            "in.jsonl", "out.jsonl", "q.jsonl"]
        assert all(p.name.endswith(".tmp") for p in tmp_path.iterdir() if p.name[0] == ".")
    result = ingest(source, out=out, quarantine=quarantine)
    assert len(out.read_bytes().splitlines()) == result.episodes == 60
    assert len(quarantine.read_bytes().splitlines()) == result.rejected == 1
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp") and
                p.stat().st_mtime > time.time() - 5 and "out.jsonl" not in p.name and
                "q.jsonl" not in p.name]


def test_a_failed_ingest_or_export_keeps_the_previous_outputs(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(orjson.dumps(c) for c in seed_records()["openai"]) + b"\n")
    out, quarantine = tmp_path / "out.jsonl", tmp_path / "q.jsonl"
    out.write_bytes(b"previous\n")
    quarantine.write_bytes(b"previous\n")

    def boom(_episode: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ingest(source, out=out, quarantine=quarantine, on_episode=boom)
    assert out.read_bytes() == quarantine.read_bytes() == b"previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl", "q.jsonl"]

    exported = tmp_path / "export.jsonl"
    exported.write_bytes(b"previous\n")
    result = runner.invoke(app, ["export-episodes", str(source), "--out", str(exported),
                                 "--format", "tau2", "--strict"])
    assert result.exit_code == 2
    assert exported.read_bytes() == b"previous\n"

    ingest(source, out=out, quarantine=quarantine)
    assert len(out.read_bytes().splitlines()) == 3
    assert not quarantine.exists(), "a clean run leaves no stale quarantine behind"


def test_runs_exports_and_reports_are_written_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from simforge.report import html as report_html
    from simforge.runs import export

    target = tmp_path / "run.openai.jsonl"
    target.write_bytes(b"previous\n")

    def items() -> object:
        yield {"id": 1}
        raise RuntimeError("killed half way")

    with pytest.raises(RuntimeError):
        export._jsonl(target, items())  # type: ignore[arg-type]
    assert target.read_bytes() == b"previous\n"
    assert export._jsonl(target, iter([{"id": 1}, {"id": 2}])) == 2
    assert len(target.read_bytes().splitlines()) == 2

    folder = tmp_path / "run.hf"
    folder.mkdir()
    (folder / "old.arrow").write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic.replacing(folder) as tmp:
        tmp.mkdir()
        (tmp / "data.arrow").write_bytes(b"half")
        raise RuntimeError("killed half way")
    assert [p.name for p in folder.iterdir()] == ["old.arrow"]
    with atomic.replacing(folder) as tmp:
        tmp.mkdir()
        (tmp / "data.arrow").write_bytes(b"new")
    assert [p.name for p in folder.iterdir()] == ["data.arrow"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.hf", "run.openai.jsonl"]

    html = tmp_path / "report.html"
    html.write_text("previous")
    monkeypatch.setattr(report_html, "render_html", lambda *_args: "<html>" + "x" * 10_000)
    real_write = atomic.AtomicFile.write

    def failing(self: atomic.AtomicFile, data: bytes) -> int:
        real_write(self, data[:10])
        raise OSError("disk full")

    monkeypatch.setattr(atomic.AtomicFile, "write", failing)
    with pytest.raises(OSError):
        report_html.write_html(html, {}, None, [])
    assert html.read_text() == "previous"
    monkeypatch.setattr(atomic.AtomicFile, "write", real_write)
    report_html.write_html(html, {}, None, [])
    assert html.read_text().startswith("<html>x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "run.hf",
                                                          "run.openai.jsonl"]


def test_a_killed_atomic_writer_leaves_the_previous_file(tmp_path: Path) -> None:
    target = tmp_path / "data.jsonl"
    target.write_bytes(b"previous\n")
    code = (f"import os, signal, sys; sys.path.insert(0, {str(REPO)!r})\n"
            "from simforge.atomic import AtomicFile\n"
            f"f = AtomicFile({str(target)!r})\n"
            "f.write(b'{\"half\": 1}\\n' * 1000); f.file.flush()\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert target.read_bytes() == b"previous\n"
    leftovers = [p for p in tmp_path.iterdir() if p != target]
    assert leftovers and all(p.name.startswith(".data.jsonl.") and p.name.endswith(".tmp")
                             for p in leftovers)
    mode = os.stat(atomic.write_bytes(tmp_path / "new.txt", b"x")).st_mode & 0o777
    assert mode == 0o666 & ~_umask()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def test_a_quarantine_is_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_bytes(b"previous\n")
    sink = Quarantine(path)
    sink.write(None, "bad", "raw")
    assert path.read_bytes() == b"previous\n", "nothing replaced before the run completes"
    sink.discard()
    assert path.read_bytes() == b"previous\n"
    with Quarantine(path) as sink:
        sink.write(None, "bad", "raw")
    assert json.loads(path.read_text())["reason"] == "bad"


JSON_VALUES = st.recursive(
    st.none() | st.integers(-5, 5) | st.text(alphabet="[]{}a\"\\", max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.text(alphabet="[{a", max_size=2), inner, max_size=3),
    max_leaves=20,
)


@given(value=JSON_VALUES, limit=st.integers(min_value=1, max_value=6),
       as_text=st.booleans())
def test_loads_refuses_exactly_the_values_nested_past_the_limit(value, limit, as_text) -> None:
    """``loads`` skips the depth walk when the text has too few brackets to be that deep
    (strings full of brackets included): it must still refuse exactly what is too deep."""
    raw = json.dumps(value)
    data = raw if as_text else raw.encode()
    if jsonio.exceeds_depth(value, limit):
        with pytest.raises(jsonio.DepthError):
            jsonio.loads(data, limit=limit)
    else:
        assert jsonio.loads(data, limit=limit) == value
