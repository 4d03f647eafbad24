"""The terminal and HTML reports: complete, self-contained, and rendered by a real browser."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from simforge.report.html import render_html, write_html
from simforge.report.metrics import summarize
from simforge.report.terminal import render
from simforge.runs.matrix import RunConfig
from simforge.runs.runner import execute, prepare
from simforge.runs.store import RunStore

ROOT = Path(__file__).resolve().parents[2]
MINI = str(ROOT / "tests" / "fixtures" / "scenarios" / "mini.yaml")


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    store = RunStore(f"sqlite:///{tmp_path_factory.mktemp('report') / 'runs.db'}")
    config = RunConfig(scenarios=[MINI], policy="random", profiles=["flaky-network"], seeds=6,
                       trials=3).with_baseline()
    prepared = prepare(store, config)
    execute(store, prepared, workers=0)
    episodes = store.episodes(prepared.run_id)
    return store.run(prepared.run_id), episodes, summarize(episodes, run_id=prepared.run_id)


def test_the_terminal_report_shows_every_section(stored):
    run, _, summary = stored
    console = Console(record=True, width=80)
    console.print(render(summary, run))
    text = console.export_text()
    for heading in ("pass rate", "pass^k", "by fault profile", "by fault kind",
                    "by scenario, task and profile", "distributions", "flaky-network",
                    "flip rate", "noise floor", "detectable", "safety"):
        assert heading in text, heading
    assert max(len(line) for line in text.splitlines()) <= 80


def test_the_html_report_is_self_contained_with_its_plots(stored):
    run, episodes, summary = stored
    html = render_html(summary, run, episodes)
    assert html.count("<svg") == 7  # profile bars, pass^k, heatmap, four histograms
    assert "pass^k by fault profile" in html and "robustness: scenario x fault kind" in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "no external resources"
    assert "<script" not in html
    assert run["id"] in html


def test_report_text_is_escaped(stored):
    run, episodes, summary = stored
    hostile = dict(run, policy="<script>alert(1)</script>")
    assert "<script>alert" not in render_html(summary, hostile, episodes)


@pytest.mark.slow
def test_headless_chromium_renders_the_report(stored, tmp_path):
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium)")
    run, episodes, summary = stored
    html = write_html(tmp_path / "report.html", summary, run, episodes)
    png = tmp_path / "report.png"
    result = subprocess.run(
        [str(ROOT / "scripts" / "screenshot_report.sh"), str(html), str(png), "1280x2400"],
        capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a page of plots, not blank


def _episode(task, profile, seed, passed, steps=3):
    return {"scenario": "s/x-v1", "task": task, "profile": profile, "seed": seed, "trial": 0,
            "passed": passed, "reward": 1.0 if passed else 0.0, "invalid_reason": None,
            "failed": [], "faults": [], "verdicts": [], "calls": [], "steps": steps,
            "sim_time": 5.0, "wall_s": 0.01}


def test_the_html_report_lists_tasks_worst_first_and_keeps_one_colour_per_profile():
    episodes = [
        *[_episode("easy", p, s, True) for p in ("none", "flaky") for s in range(3)],
        *[_episode("hard", p, s, s == 0) for p in ("none", "flaky") for s in range(3)],
    ]
    summary = summarize(episodes, run_id="r")
    html = render_html(summary, {"id": "r"}, episodes)
    tasks = html[html.index("Tasks (worst first)"):]
    assert tasks.index(">hard<") < tasks.index(">easy<")
    bars, curves = html.split("<svg")[1:3]
    pass_rate_fills = re.findall(r'<rect x="[^"]+" y="[^"]+" width="[^"]+" height="[^"]+" '
                                 r'fill="(#[0-9a-f]{6})"/>', bars)
    legend = dict(re.findall(r'fill="(#[0-9a-f]{6})"/><text[^>]*>([^<]+)</text>', curves))
    by_name = {name: colour for colour, name in legend.items()}
    assert pass_rate_fills == [by_name["none"], by_name["flaky"]]


def test_the_steps_histogram_has_whole_numbered_bins():
    episodes = [_episode("t", "none", s, True, steps=n) for s, n in enumerate([1, 2, 2, 3, 5])]
    html = render_html(summarize(episodes, run_id="r"), {"id": "r"}, episodes)
    steps = next(part for part in html.split("<svg") if "steps per episode" in part)
    ticks = re.findall(r'text-anchor="middle"[^>]*>([0-9.]+)</text>', steps)
    assert ticks and all(float(t).is_integer() for t in ticks), ticks


def test_the_terminal_tasks_table_says_how_many_rows_it_left_out():
    from simforge.report.terminal import tasks_table

    episodes = [_episode(f"t{i:02d}", "none", 0, i % 2 == 0) for i in range(35)]
    console = Console(record=True, width=160)
    console.print(tasks_table(summarize(episodes, run_id="r"), limit=30))
    text = console.export_text()
    assert "5 more rows" in text
    assert text.index("t01") < text.index("t00"), "worst first"


def test_pass_hat_k_with_one_attempt_per_task_is_a_sentence_not_a_lone_point():
    episodes = [_episode("t", "none", 0, True), _episode("u", "none", 0, False)]
    html = render_html(summarize(episodes, run_id="r"), {"id": "r"}, episodes)
    curves = next(part for part in html.split("<svg")[1:] if "pass^k by fault profile" in part)
    assert "needs two or more attempts" in curves and "<polyline" not in curves


def test_equal_pass_hat_k_curves_stay_visible_by_their_dashes():
    episodes = [_episode(t, p, s, True) for t in ("a", "b") for p in ("none", "flaky", "slow")
                for s in range(3)]
    html = render_html(summarize(episodes, run_id="r"), {"id": "r"}, episodes)
    curves = next(part for part in html.split("<svg")[1:] if "pass^k by fault profile" in part)
    dashes = re.findall(r'<polyline[^>]*stroke-dasharray="([^"]+)"', curves)
    assert len(dashes) == 4 and len(set(dashes)) == 4  # all, none, flaky, slow
