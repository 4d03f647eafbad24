"""``synthesize`` is its five stages composed: each takes the typed output of the one before, and
calling them by hand writes the pack ``synthesize`` writes, byte for byte."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from simforge.synth.pipeline import (
    Corpus,
    Learned,
    SynthReport,
    Tasks,
    World,
    entities_stage,
    in_holdout,
    learn_stage,
    read_stage,
    synthesize,
    tasks_stage,
    write_stage,
)
from simforge.synth.read.traces import NothingToLearn

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_stages_by_hand_write_what_synthesize_writes(tmp_path):
    traces = [EXAMPLES / "acme-openai.jsonl", EXAMPLES / "acme-otlp.json"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = synthesize(traces, tmp_path / "whole", holdout=0.25, seed=1, name="p")

    out = tmp_path / "staged"
    report = SynthReport(out=out)
    warn = report.warnings.append
    ticks: list[tuple[str, int, int]] = []

    def tick(stage: str, done: int, total: int) -> None:
        ticks.append((stage, done, total))

    corpus = read_stage(traces, (), None, 0.25, 1, tick, report, warn)
    assert isinstance(corpus, Corpus)
    # the split: every usable episode in exactly one part, the held-out ones by their seeded draw
    assert sorted(e.id for e in corpus.train + corpus.held) == sorted(e.id for e in corpus.usable)
    assert all(in_holdout(e.id, 0.25, 1) for e in corpus.held) and corpus.held
    assert report.holdout == [e.id for e in corpus.held]

    world = entities_stage(corpus, warn)
    assert isinstance(world, World)
    assert set(world.base) == set(world.catalog.entities) and set(world.profiles)

    learned = learn_stage(corpus, world, tick, report)
    assert isinstance(learned, Learned)
    assert len(learned.descs) == len(world.profiles) and report.tools == len(learned.tool_entries)

    made = tasks_stage(corpus, world, learned, False, report, warn)
    assert isinstance(made, Tasks)
    assert report.tasks == len(made.tasks) and report.nongold_tasks == len(made.failed)

    write_stage(out, "p", 0.25, 1, False, corpus, world, learned, made, report)
    assert _files(out) == _files(tmp_path / "whole")
    assert report == SynthReport(**{**vars(whole), "out": out})
    assert {stage for stage, _, _ in ticks} >= {"walk", "learn"}


def test_the_read_stage_refuses_before_anything_is_learned_or_written(tmp_path):
    report = SynthReport(out=tmp_path / "pack")
    with pytest.raises(NothingToLearn, match=r"holdout 1\.0 keeps all"):
        read_stage([EXAMPLES / "acme-openai.jsonl"], (), None, 1.0, 0,
                   lambda *_: None, report, report.warnings.append)
    assert not (tmp_path / "pack").exists()
