"""Synthesis from the real tau2-bench traces with the tau-bench databases as the snapshot:
learned on a seeded 75% split, measured on the held-out 25% (figures in FIDELITY.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simforge.audit.fidelity import fidelity, holdout_ids, replay_gold
from simforge.synth.pipeline import synthesize

from ..conftest import shared_data_dir

RESULTS = {
    "retail": "tau2-bench/results/gpt-4.1_retail_defautl_gpt-4.1_1trials.json",
    "airline": "tau2-bench/results/gpt-4.1_airline_default_gpt-4.1_1trials.json",
}


def _synth(shared: Path, domain: str, out: Path) -> tuple[Path, dict]:
    traces = shared / RESULTS[domain]
    synthesize([traces], out, data=[shared / f"tau-bench/envs/{domain}/data"], holdout=0.25, seed=0)
    return traces, fidelity(out, [traces], only=holdout_ids(out))


@pytest.fixture(scope="module")
def retail(tmp_path_factory) -> tuple[Path, dict]:
    shared = shared_data_dir()
    if not shared.is_dir():
        pytest.skip(f"real-world traces not present at {shared}")
    out = tmp_path_factory.mktemp("synth") / "retail"
    return out, _synth(shared, "retail", out)[1]


@pytest.mark.slow
def test_retail_holdout_fidelity_and_replay_gold(retail):
    folder, result = retail
    assert result["episodes"] == 10
    assert result["reads"]["rate"] >= 0.90
    assert result["writes"]["rate"] >= 0.70
    assert result["errors"]["rate"] >= 0.50
    gold = replay_gold(folder)
    assert gold["rate"] >= 0.95, gold


@pytest.mark.slow
def test_a_retail_agent_is_given_the_traces_policy_and_user_and_an_eval_split(retail, monkeypatch):
    """The tau2 traces carry the domain's agent policy and each task's user scenario: the pack
    keeps the policy (and an LLM agent's system prompt holds it), tasks keep their user, and the
    held-out episodes are the eval split."""
    import json

    import simforge
    from simforge.policies.llm import LLMPolicy

    folder, _ = retail
    shared = shared_data_dir()
    source = json.loads((shared / RESULTS["retail"]).read_text())
    policy = source["info"]["environment_info"]["policy"]
    assert len(policy) > 6000
    assert (folder / "policy.md").read_text().strip() == policy.strip()
    held = set(holdout_ids(folder))
    evaluation = simforge.make(str(folder / "scenario.yaml"), split="eval")
    train = simforge.make(str(folder / "scenario.yaml"), split="train")
    # the 5 training episodes labelled failed are kept out of training (scenario-nongold.yaml);
    # one held-out episode changed nothing and its answer states no fact: nothing proves its work
    import yaml

    stats = yaml.safe_load((folder / "pack.yaml").read_text())["stats"]
    left_out = {u["episode"] for u in stats["unproven"]}
    assert len(held) == 10 and len(left_out & held) == 1 and not left_out - held
    held -= left_out
    assert len(evaluation.tasks) == len(held) and len(train.tasks) == 25
    nongold = simforge.make(str(folder / "scenario-nongold.yaml"))
    assert len(nongold.tasks) == 5
    assert not any(t.metadata["gold"] for t in nongold.scenario.tasks)
    scenario = evaluation.scenario
    by_id = {t.id: t for t in scenario.tasks}
    assert {by_id[t].metadata["episode_id"] for t in evaluation.tasks} == held
    assert all(t.user is not None and t.user.wants for t in scenario.tasks)
    obs, _ = evaluation.reset(seed=0)
    monkeypatch.setenv("SIMFORGE_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    agent = LLMPolicy("m")
    agent.reset(obs)
    assert policy.strip() in agent.messages[0]["content"]
    assert len(obs["tools"]) <= 128
    # the user's brief is the user simulator's, never the agent's
    brief = by_id[obs["task"]["id"]].user
    assert brief.wants not in json.dumps(obs)


@pytest.fixture(scope="module")
def airline(tmp_path_factory) -> tuple[Path, dict]:
    """One airline pack for the tests below (synthesis is the slow part)."""
    shared = shared_data_dir()
    if not shared.is_dir():
        pytest.skip(f"real-world traces not present at {shared}")
    out = tmp_path_factory.mktemp("synth") / "airline"
    return out, _synth(shared, "airline", out)[1]


@pytest.mark.slow
def test_airline_holdout_reads_writes_and_replay_gold(airline):
    folder, result = airline
    assert result["reads"]["rate"] >= 0.90
    by_tool = result["by_tool"]
    assert by_tool["search_direct_flight"]["reads"]["rate"] == 1.0
    assert by_tool["get_reservation_details"]["reads"]["rate"] == 1.0
    # flights priced by a join on (flight_number, date, cabin), the charge (new - old fares)
    # times passengers: two of three bookings and the cancellation (see FIDELITY.md for the rest)
    assert result["writes"]["exact"] >= 3
    assert by_tool["book_reservation"]["writes"]["exact"] == 2
    gold = replay_gold(folder)
    assert gold["rate"] >= 0.95, gold


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="the held-out airline writes need what no training episode shows: "
    "update_reservation_passengers is never called in training (so the pack has no such tool "
    "and the two later writes of that episode see the old passengers), no training call keeps an "
    "unchanged flight at its old fare or charges a baggage fee, and the one error is never seen "
    "in training (see FIDELITY.md)",
)
def test_airline_holdout_write_fidelity_target(airline):
    assert airline[1]["writes"]["rate"] >= 0.70


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="the only airline error (Payment amount does not add up...) is in a held-out episode; "
    "no training call fails, so neither its condition nor its text can be learned",
)
def test_airline_holdout_error_fidelity_target(airline):
    assert airline[1]["errors"]["rate"] >= 0.50


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_no_adversary_earns_more_than_the_floor_on_a_kept_synthesized_task(domain, request,
                                                                           tmp_path):
    """The audit screens synthesized tasks with the adversary suite too; of what it keeps
    (``--write-kept``), no adversary earns above the no-op, replayed here through the env API
    on the file a trainer would use."""
    import simforge
    from simforge.audit.context import AuditConfig
    from simforge.audit.kept import write_kept_scenarios
    from simforge.audit.runner import audit
    from simforge.policies.adversaries import ADVERSARIES
    from simforge.policies.scripted import NoopPolicy
    from simforge.runs.episode import run_episode
    from simforge.scenario.registry import ScenarioRegistry

    folder, _ = request.getfixturevalue(domain)
    loaded = ScenarioRegistry.load_path(folder / "scenario.yaml")
    report = audit([loaded], AuditConfig(seeds=1, fault_seeds=2),
                   checks=["solvable", "adversaries"])
    kept_file = tmp_path / "kept.yaml"
    (path, kept, total), = write_kept_scenarios(report, [loaded], kept_file)
    assert 0 < kept <= total
    env = simforge.make(str(kept_file))
    for task in env.tasks:
        floor = run_episode(env, NoopPolicy(), seed=0, task=task).reward or 0.0
        for name, make_adversary in ADVERSARIES.items():
            reward = run_episode(env, make_adversary(), seed=0, task=task).reward or 0.0
            assert reward <= floor + 1e-9, (task, name, reward)


def _payment(folder: Path) -> dict:
    import json

    tools = {
        t["spec"]["name"]: t["handler"] for t in json.loads((folder / "tools.json").read_text())
    }
    return tools["update_reservation_flights"]["effects"]["payment_history"]


@pytest.mark.slow
@pytest.mark.parametrize("split", [None, 0, 1, 2, 3, 4])
def test_airline_payment_is_learned_as_the_fare_difference_on_every_split(tmp_path, split):
    """With all episodes and on every split seed, the charge of a flight change is the fare
    difference times the passengers (one training call keeping an old fare once hid the new
    fares from it, and the payment was learned as the constant -2580)."""
    shared = shared_data_dir()
    if not shared.is_dir():
        pytest.skip(f"real-world traces not present at {shared}")
    holdout = 0.0 if split is None else 0.25
    synthesize(
        [shared / RESULTS["airline"]],
        tmp_path / "pack",
        data=[shared / "tau-bench/envs/airline/data"],
        holdout=holdout,
        seed=split or 0,
    )
    payment = repr(_payment(tmp_path / "pack"))
    assert "'c': -" not in payment and "'new', 'flights'" in payment, payment


# -- every split seed -------------------------------------------------------------------------

SNAPSHOTS = {
    "retail": "tau-bench/envs/retail/data",
    "airline": "tau-bench/envs/airline/data",
    "telecom": "tau2-bench/domains/telecom",
    "telecom-no-user": "tau2-bench/domains/telecom",
}
TRACES = {
    **RESULTS,
    "telecom": "tau2-bench/results/gpt-4.1_telecom_default_gpt-4.1_1trials.json",
    "telecom-no-user": "tau2-bench/results/gpt-4.1_telecom_no-user_gpt-4.1_1trials.json",
}
_SWEEPS: dict[str, list[dict]] = {}


def _sweep(domain: str, tmp_path_factory) -> list[dict]:
    """Five split seeds of one tau2 file, each measured on its held-out episodes (cached: the
    tests below read the same sweep)."""
    from simforge.audit.fidelity import sweep

    shared = shared_data_dir()
    if not shared.is_dir():
        pytest.skip(f"real-world traces not present at {shared}")
    if domain not in _SWEEPS:
        out = tmp_path_factory.mktemp(f"sweep-{domain}")
        _SWEEPS[domain] = sweep(
            [shared / TRACES[domain]], out, data=[shared / SNAPSHOTS[domain]], seeds=range(5)
        )
    return _SWEEPS[domain]


def _rate(bucket: dict) -> float:
    return 1.0 if not bucket["calls"] else bucket["exact"] / bucket["calls"]


def _meets(row: dict) -> bool:
    reward = row["reward"]["rate"]
    return (
        _rate(row["reads"]) >= 0.98
        and _rate(row["writes"]) >= 0.90
        and _rate(row["errors"]) >= 0.80
        and (reward is None or reward >= 0.90)
    )


@pytest.mark.slow
def test_retail_meets_every_target_on_every_split_seed(tmp_path_factory):
    rows = _sweep("retail", tmp_path_factory)
    assert all(_meets(row) for row in rows), rows
    assert all(row["reward"]["confusion"]["missed_success"] == 0 for row in rows)


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["airline", "telecom", "telecom-no-user"])
def test_the_other_domains_hold_what_they_reached_on_every_seed(domain, tmp_path_factory):
    """The figures of FIDELITY.md, as floors: what synthesis reaches on each seed, so that a
    change that loses ground shows."""
    floors = {
        "airline": {"reads": 0.90, "writes": 0.40},
        # telecom: a factored state of fields over fields (writes 0.72 -> 0.83, no-user reads
        # 0.78 -> 0.81, writes 0.79 -> 0.85 at the minimum over seeds)
        "telecom": {"reads": 0.80, "writes": 0.80},
        "telecom-no-user": {"reads": 0.80, "writes": 0.80},
    }[domain]
    rows = _sweep(domain, tmp_path_factory)
    for row in rows:
        assert _rate(row["reads"]) >= floors["reads"], row
        assert _rate(row["writes"]) >= floors["writes"], row
        assert row["reward"]["confusion"]["false_success"] == 0, row
    total = sum(r["reward"]["agree"] for r in rows), sum(r["reward"]["episodes"] for r in rows)
    assert total[0] >= 0.5 * total[1], total


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="held-out episodes need what their training split never shows: tools never called "
    "in training (update_reservation_passengers, send_certificate, search_onestop_flight), a "
    "branch never taken (an unchanged flight kept at its old fare, a fee per extra bag), an "
    "error never met (the payment check), a reservation changed since the snapshot; telecom "
    "tasks are new combinations of a dozen device faults learned from 24 to 33 episodes: "
    "fields that are disjunctions of other fields generalise, those needing a conjunction, a "
    "set of items or a state recomputed only at a reboot do not (see FIDELITY.md)",
)
@pytest.mark.parametrize("domain", ["airline", "telecom", "telecom-no-user"])
def test_the_issue_targets_on_every_seed(domain, tmp_path_factory):
    assert all(_meets(row) for row in _sweep(domain, tmp_path_factory))


@pytest.mark.slow
def test_another_agents_telecom_traffic_starts_from_its_declared_setup(tmp_path):
    """The no-user agent ran the same telecom tasks: replayed against a pack learned from the
    default file, each of its episodes starts from the setup its trace declares (the pack has
    no task of it), and its rewards are scored in the tasks the other agent solved, failures
    too (was: reads 0.63, writes 0.55, no reward measure)."""
    shared = shared_data_dir()
    if not shared.is_dir():
        pytest.skip(f"real-world traces not present at {shared}")
    out = tmp_path / "pack"
    synthesize([shared / TRACES["telecom"]], out, data=[shared / SNAPSHOTS["telecom"]])
    result = fidelity(out, [shared / TRACES["telecom-no-user"]])
    assert result["reads"]["rate"] >= 0.85 and result["writes"]["rate"] >= 0.80, result
    confusion = result["reward"]["confusion"]
    assert confusion["correct_fail"] > 0 and confusion["hit"] > 0
    assert result["reward"]["rate"] >= 0.6
