"""Fuzzing ingestion with hostile files: the committed corpus, generated cases, truncations at
every structural boundary of a record, through the API and the CLI.

Every case asserts no traceback, bounded memory for the corpus (time is bounded by the campaign),
``kept + rejected == read``, a quarantine entry per rejection, and that every intact record
survives its neighbours. The slow campaign (``tests/trace/campaign.py``) runs thousands.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from simforge.cli import app
from simforge.trace.ingest import ingest
from tests.trace.campaign import truncation_cases
from tests.trace.hostile import (
    CONVERSATION_FORMATS,
    Case,
    check,
    hostile_corpus,
    make_case,
    real_records,
    run_case,
    seed_records,
)

REPO = Path(__file__).parents[2]
SEEDS = seed_records()
runner = CliRunner()

CORPUS: dict[str, tuple[int, int, int]] = {
    # file: (kept, rejected, NaN/Infinity read as null)
    "bad_first_record.json": (3, 1, 0),
    "bad_first_record.jsonl": (3, 1, 0),
    "bom_document.json": (3, 0, 0),
    "bom_lines.jsonl": (3, 0, 0),
    "brackets_200k.json.gz": (0, 1, 0),
    "brackets_20m.json.gz": (0, 1, 0),
    "deep_2000.json": (0, 1, 0),
    "deep_args_string.jsonl": (2, 1, 0),
    "deep_record.jsonl": (2, 1, 0),
    "falsy_tool_calls.jsonl": (1, 3, 0),
    "garbage_lines.jsonl": (3, 5, 0),
    "huge_integers.jsonl": (3, 0, 0),
    "infinity_lines.jsonl": (3, 0, 3),
    "nan_document.json": (3, 0, 2),
    "objects_4m.json.gz": (0, 1, 0),
    "tau2_broken_tasks.json": (3, 1, 0),
    "trailing_garbage.json": (3, 1, 0),
    "truncated_compact.json": (2, 1, 0),
    "truncated_pretty.json": (2, 1, 0),
}


def test_the_corpus_is_what_its_generator_writes() -> None:
    assert sorted(p.name for p in hostile_corpus()) == sorted(CORPUS)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_hostile_corpus_through_the_api(name: str, tmp_path: Path) -> None:
    path = REPO / "tests" / "fixtures" / "hostile" / name
    kept, rejected, nonfinite = CORPUS[name]
    for fmt in (None, *CONVERSATION_FORMATS):
        quarantine = tmp_path / f"{fmt}.q.jsonl"
        tracemalloc.start()
        try:
            result = ingest(path, format=fmt, quarantine=quarantine)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 64 * 1024 * 1024, (fmt, peak)
        check(result, quarantine)
        if fmt is None:
            assert (result.records_kept, result.rejected, result.nonfinite) == (
                kept, rejected, nonfinite), result.rejections


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_hostile_corpus_through_the_cli(name: str, tmp_path: Path) -> None:
    path = REPO / "tests" / "fixtures" / "hostile" / name
    out, quarantine = tmp_path / "out.jsonl", tmp_path / "q.jsonl"
    result = runner.invoke(app, ["ingest", str(path), "--json", "--out", str(out),
                                 "--quarantine", str(quarantine)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    summary = json.loads(result.stdout)
    kept, rejected, _ = CORPUS[name]
    assert summary["rejected"] == rejected
    written = out.read_bytes().splitlines() if out.exists() else []
    assert len(written) == summary["episodes"]
    assert ingest(out).rejected == 0 if written else True


def _truncations() -> list[Case]:
    return truncation_cases(SEEDS, every=3)


@pytest.mark.parametrize("index", range(0, len(_truncations())))
def test_a_record_cut_at_a_structural_boundary_costs_only_itself(
    index: int, tmp_path: Path
) -> None:
    case = _truncations()[index]
    result, lost = run_case(case, tmp_path)
    assert lost == 0, case.data[:300]
    assert result.records_read >= 3 or case.name.endswith(".jsonl")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False), st.integers(0, 10**6))
def test_generated_hostile_files_never_lose_an_intact_record(
    rng: random.Random, number: int
) -> None:
    import tempfile

    case = make_case(rng, SEEDS, number)
    with tempfile.TemporaryDirectory() as folder:
        result, lost = run_case(case, Path(folder))
    if not case.guesswork:
        assert lost == 0, (case.name, case.fmt, case.forced, case.data[:400])
    if case.name.endswith(".jsonl") and case.forced:
        # JSON Lines records end at "\n" alone: a lone "\r" that damage left inside a record
        # is part of it (``bytes.splitlines`` would split there too)
        assert result.records_read == sum(1 for line in case.data.split(b"\n")
                                          if line.strip())


def test_a_lone_carriage_return_inside_a_jsonl_record_does_not_split_it(tmp_path: Path) -> None:
    """Found by the property above: damage that leaves a bare ``\\r`` in a record. JSON Lines
    ends a record at ``\\n`` only, so the record is one (rejected) record and its neighbours
    are kept."""
    good = json.dumps({"messages": [{"role": "user", "content": "Where is order 77?"},
                                    {"role": "assistant", "content": "It shipped."}]})
    broken = good[:40] + "\xf0\r" + good[41:]
    path = tmp_path / "cr.jsonl"
    path.write_bytes("\n".join([good, broken, good]).encode("utf-8", "surrogateescape"))
    result = ingest(path, format="openai", quarantine=tmp_path / "q.jsonl")
    check(result, tmp_path / "q.jsonl")
    assert (result.records_read, result.records_kept, result.rejected) == (3, 2, 1)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_generated_hostile_files_through_the_cli(rng: random.Random) -> None:
    import tempfile

    case = make_case(rng, SEEDS, 0)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / case.name
        path.write_bytes(case.data)
        out = Path(folder) / "out.jsonl"
        args = ["ingest", str(path), "--json", "--out", str(out)]
        if case.forced:
            args += ["--format", case.fmt]
        result = runner.invoke(app, args)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert result.exit_code in (0, 1), result.output
        summary = json.loads(result.stdout)
        written = out.read_bytes().splitlines() if out.exists() else []
        assert len(written) == summary["episodes"]


def test_real_records_cut_at_boundaries(shared_data: Path, tmp_path: Path) -> None:
    real = real_records(shared_data)
    cases = truncation_cases(real, every=20)
    assert len(cases) > 60
    for case in cases:
        _result, lost = run_case(case, tmp_path)
        assert lost == 0, case.name


@pytest.mark.slow
def test_the_campaign(tmp_path: Path) -> None:
    """Thousands of corrupted files (and the real records cut at every boundary): 0
    tracebacks, 0 hangs over 30 s, peak memory under 300 MB on inputs under 1 MB, 0 intact
    records lost, 0 valid-looking partial outputs of a killed ``ingest --out``."""
    done = subprocess.run([sys.executable, "-m", "tests.trace.campaign", "--cases", "2500",
                           "--kills", "4"], cwd=REPO, capture_output=True, text=True,
                          timeout=900, env=_env())
    assert done.returncode == 0, done.stderr[-3000:]
    figures: dict[str, Any] = json.loads(done.stdout)
    assert figures["files"] >= 2500
    assert figures["tracebacks"] == 0, figures["examples"]
    assert figures["hangs"] == 0 and figures["slowest_s"] < 30
    assert figures["largest_input_bytes"] < 1024 * 1024
    assert figures["peak_rss_mb"] < 300
    assert figures["intact_lost"] == 0, figures["examples"]
    # compact documents whose first record is damaged: resynchronising is a guess there
    assert figures["guesswork_lost"] <= 0.1 * max(1, figures["guesswork_intact"])
    assert figures["records_kept"] + figures["rejected"] == figures["records_read"]
    assert figures["kill_runs"] == 4 and figures["partial_outputs"] == 0


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env
