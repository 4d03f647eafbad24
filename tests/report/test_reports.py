"""The terminal and HTML reports: complete, self-contained, and rendered by a real browser."""

from __future__ import annotations

import re
from html import unescape
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


FORBID = "upgrades need a manager's sign-off"


@pytest.fixture(scope="module")
def unsafe(tmp_path_factory):
    """A stored run with safety violations, failures and trajectories: the mini scenario with a
    rule forbidding upgrades, played by the reference solution under flaky-network."""
    folder = tmp_path_factory.mktemp("unsafe")
    text = Path(MINI).read_text().replace(
        "pack: ../packs/mini", f"pack: {ROOT / 'tests' / 'fixtures' / 'packs' / 'mini'}")
    text = text.replace("tasks:\n", "validators:\n  - name: forbidden_actions\n    params:\n"
                        f"      rules: [{{tool: upgrade_customer, reason: \"{FORBID}\"}}]\n"
                        "tasks:\n", 1)
    scenario = folder / "unsafe.yaml"
    scenario.write_text(text)
    store = RunStore(f"sqlite:///{folder / 'runs.db'}")
    config = RunConfig(scenarios=[str(scenario)], policy="no-retry", profiles=["flaky-network"],
                       seeds=4, trials=2, attribute=True).with_baseline()
    prepared = prepare(store, config)
    execute(store, prepared, workers=0)
    from simforge.report.stored import load_run

    return (store, prepared.run_id, *load_run(store, prepared.run_id))


def test_a_safety_violation_names_the_call_and_the_rule_in_both_renderings(unsafe):
    _, _, run, episodes, trajectories, summary = unsafe
    console = Console(record=True, width=80)
    console.print(render(summary, run))
    text = " ".join(console.export_text().split())
    assert 'forbidden_actions' in text and 'upgrade_customer(customer_id="C-0003") at' in text
    assert f"rule: {FORBID}" in text
    html = render_html(summary, run, episodes, trajectories=trajectories)
    gate = re.search(r'<tr class="ev [^"]*gate[^"]*">(.*?)</tr>', html, re.S)
    assert gate is not None
    cells = unescape(" ".join(re.sub(r"<[^>]+>", " ", gate.group(1)).split()))
    assert 'upgrade_customer(customer_id="C-0003") at' in cells and FORBID in cells


@pytest.mark.slow
def test_headless_chromium_renders_the_reports(unsafe, tmp_path):
    """The run report and a comparison, in a real browser: they load without a console error,
    every plot has a size, the evidence filters hide what they should, an episode's link opens
    its trajectory view, and the screenshots are pages of plots, not blank."""
    from tests.report.browser import Browser, executable

    if executable() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium; "
                    ".ci/run installs it)")
    from simforge.report.compare import compare
    from simforge.report.html import write_compare_html

    store, run_id, run, episodes, trajectories, summary = unsafe
    page = write_html(tmp_path / "report.html", summary, run, episodes,
                      trajectories=trajectories)
    versus = write_compare_html(tmp_path / "compare.html", compare(
        [e for e in episodes if e["trial"] == 0], [e for e in episodes if e["trial"] == 1],
        a_run=run, b_run=run))
    with Browser() as browser:
        browser.open(page)
        assert browser.errors() == []
        plots = browser.js("[...document.querySelectorAll('svg')].filter(s => "
                           "s.getBoundingClientRect().width > 0).map(s => s.ariaLabel)")
        for title in ("pass rate by fault profile", "pass^k by fault profile", "robustness",
                      "tool call latency", "steps per episode", "simulated time per episode",
                      "wall time per episode"):
            assert any(p.startswith(title) for p in plots), (title, plots)
        assert browser.js("document.querySelector('svg polyline') !== null")  # pass^k curves
        rows = "[...document.querySelectorAll('tr.ev')]"
        total = browser.js(f"{rows}.length")
        gates = browser.js(f"{rows}.filter(r => r.classList.contains('gate')).length")
        assert 0 < gates < total
        browser.js("document.getElementById('fc-gate').click()")
        assert browser.js(f"{rows}.filter(r => r.offsetParent !== null).length") == gates
        browser.js("document.getElementById('fc-all').click()")
        assert browser.js(f"{rows}.filter(r => r.offsetParent !== null).length") == total
        hidden = browser.js("getComputedStyle(document.getElementById('ep-1')).display")
        assert hidden == "none"
        shot = browser.screenshot(tmp_path / "report.png")
        assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 50_000
        browser.open(page, "#ep-1")
        assert browser.errors() == []
        assert browser.js("getComputedStyle(document.getElementById('ep-1')).display") == "block"
        assert browser.js("document.querySelector('#ep-1 svg').getBoundingClientRect().height"
                          ) > 50  # the timeline
        browser.open(versus)
        assert browser.errors() == []
        assert browser.js("document.querySelectorAll('svg').length") == 2
        assert browser.screenshot(tmp_path / "compare.png")[:4] == b"\x89PNG"


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
