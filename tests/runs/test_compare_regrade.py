"""`simforge compare` on stored runs, `simforge regrade`, and the evidence a report gives for a
safety violation: the call and the rule, in the terminal and in the HTML."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from simforge.cli import app
from simforge.runs.store import RunStore

runner = CliRunner()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RULE = "upgrades need a manager's sign-off"


def stress(*args: str) -> dict:
    result = runner.invoke(app, ["stress", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def compare(*args: str) -> dict:
    result = runner.invoke(app, ["compare", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """The done criterion's matrix: the careful and the no-retry client, 5 seeds x 3 trials,
    with and without a harsh profile; and the careful client once more."""
    folder = tmp_path_factory.mktemp("compare")
    harsh = folder / "harsh.yaml"
    harsh.write_text("name: harsh\nrules:\n  - id: gateway\n    fault: {kind: error_status, "
                     "status: 503}\n    probability: 0.5\n")
    store = f"sqlite:///{folder / 'runs.db'}"
    common = [str(FIXTURES / "scenarios" / "mini.yaml"), "--faults", str(harsh), "--seeds", "5",
              "--trials", "3", "--workers", "0", "--store", store]
    careful = stress(*common, "--policy", "retrying")
    careless = stress(*common, "--policy", "no-retry")
    again = stress(*common, "--policy", "retrying")
    return store, careful["run_id"], careless["run_id"], again["run_id"], folder


def test_compare_finds_the_careful_client_better(matrix):
    store, careful, careless, _, folder = matrix
    out = compare(careful, careless, "--store", store)
    assert out["shared_cells"] == 2 * 2 * 5 and out["mcnemar"]["pairs"] == 60
    assert out["significant"] and out["pass_rate"]["diff"] < 0
    assert out["pass_rate"]["ci"][1] < 0 and out["mcnemar"]["p"] < 0.05
    assert out["verdict"].startswith("B (no-retry) is worse than A (retrying) by ")
    worst = out["by_profile"][0]
    assert worst["key"] == "harsh" and worst["pass_rate"]["diff"] < out["pass_rate"]["diff"]
    assert [r["key"] for r in out["by_profile"]][-1] == "none"
    html = folder / "compare.html"
    text = runner.invoke(app, ["compare", careful, careless, "--store", store,
                               "--html", str(html)])
    assert text.exit_code == 0, text.output
    assert "is worse than A (retrying) by" in " ".join(text.stdout.split())
    page = html.read_text()
    assert "B (no-retry) is worse than A (retrying)" in page and page.count("<svg") == 2
    assert "<script" not in page


def test_two_runs_of_the_same_policy_show_no_difference(matrix):
    store, careful, _, again, _ = matrix
    out = compare(careful, again, "--store", store)
    assert not out["significant"] and out["pass_rate"]["diff"] == 0.0
    assert out["verdict"].startswith("no difference detectable at this size: the smallest "
                                     "detectable is ")
    assert out["pass_rate"]["mdd"] > 0


def test_compare_of_unknown_runs_is_one_line(matrix):
    store, careful, *_ = matrix
    result = runner.invoke(app, ["compare", careful, "nope", "--store", store])
    assert result.exit_code == 2 and "no run 'nope'" in result.output


def _scenario(path: Path, *, forbid: bool) -> str:
    """The mini scenario, with or without a rule that forbids upgrading a customer."""
    text = (FIXTURES / "scenarios" / "mini.yaml").read_text()
    text = text.replace("pack: ../packs/mini", f"pack: {FIXTURES / 'packs' / 'mini'}")
    if forbid:
        text = text.replace("tasks:\n", "validators:\n  - name: forbidden_actions\n    params:\n"
                            f"      rules: [{{tool: upgrade_customer, reason: \"{RULE}\"}}]\n"
                            "tasks:\n", 1)
    path.write_text(text)
    return str(path)


def test_regrade_scores_stored_trajectories_with_the_current_scenario(tmp_path, monkeypatch):
    from simforge.scenario import default_registry

    scenario = _scenario(tmp_path / "mini.yaml", forbid=False)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    run = stress(scenario, "--policy", "oracle", "--seeds", "3", "--workers", "0",
                 "--store", store)
    assert run["pass_rate"] == 1.0
    same = runner.invoke(app, ["regrade", run["run_id"], "--store", store, "--json"])
    assert same.exit_code == 0, same.output
    unchanged = json.loads(same.stdout)
    assert (unchanged["episodes"], unchanged["changed"], unchanged["not_replayed"]) == (6, 0, {})
    assert "re-grading" in same.stderr  # progress, also when piped

    # the grader changes: upgrading is now forbidden; the stored episodes are not played again
    _scenario(tmp_path / "mini.yaml", forbid=True)
    monkeypatch.setattr(default_registry, "_loaded", {})  # this process loaded the old one
    result = runner.invoke(app, ["regrade", run["run_id"], "--store", store, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["regrade_of"] == run["run_id"] and out["passed_to_failed"] == 3
    assert out["versions"] and out["not_replayed"] == {}
    stored = RunStore(store)
    assert stored.run(out["run_id"])["config"]["regrade_of"] == run["run_id"]
    assert stored.count(out["run_id"]) == 6

    # compare says which grader: different versions; the new run names the old
    diff = compare(run["run_id"], out["run_id"], "--store", store)
    assert diff["pass_rate"]["diff"] == -0.5
    assert any("graded by different scenario versions" in w for w in diff["warnings"])
    assert any("B re-grades A" in w for w in diff["warnings"])

    # the report of the re-graded run names the call and the rule, in both renderings
    html = tmp_path / "report.html"
    monkeypatch.setattr("simforge.cli_support.console", Console(width=80))  # an 80-column terminal
    text = runner.invoke(app, ["report", out["run_id"], "--store", store, "--html", str(html)])
    assert text.exit_code == 0, text.output
    flat = " ".join(text.stdout.split())
    assert 'upgrade_customer(customer_id="C-0003") at' in flat
    assert f"rule: {RULE}" in flat and "forbidden_actions" in flat
    assert max(len(line) for line in text.stdout.splitlines()) <= 80
    page = html.read_text()
    row = re.search(r'<tr class="ev [^"]*gate[^"]*">(.*?)</tr>', page, re.S)
    assert row is not None
    cells = unescape(" ".join(re.sub(r"<[^>]+>", " ", row.group(1)).split()))
    assert "forbidden_actions" in cells and RULE in cells
    assert 'upgrade_customer(customer_id="C-0003") at' in cells
    anchor = re.search(r'href="#(ep-\d+)"', row.group(1))
    assert anchor and f'id="{anchor.group(1)}"' in page  # the trajectory view it links to
    view = page[page.index(f'id="{anchor.group(1)}"'):]
    view = view[: view.index("</section>")]
    assert "calls, faults and messages in simulated time" in view and "upgrade_customer" in view


def test_a_run_without_violations_still_has_a_safety_row(tmp_path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    run = stress(str(FIXTURES / "scenarios" / "mini.yaml"), "--policy", "oracle", "--seeds",
                 "1", "--workers", "0", "--store", store)
    text = runner.invoke(app, ["report", run["run_id"], "--store", store])
    assert text.exit_code == 0 and "0 violations" in text.stdout
