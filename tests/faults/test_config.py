"""Fault profiles in YAML: built-ins load, and a wrong config names the file, the field and what
is allowed."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simforge.cli import app
from simforge.config import load_model
from simforge.faults import KINDS, FaultConfigError, FaultProfile, builtin_profiles, resolve_profile


def test_builtin_profiles_exist_and_are_valid():
    names = set(builtin_profiles())
    assert {
        "none",
        "flaky-network",
        "stale-replicas",
        "degraded-billing",
        "hostile-content",
    } <= names
    assert resolve_profile("none").empty


def test_unknown_kind_names_file_line_and_allowed_kinds(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: p\nrules:\n  - id: r\n    fault: {kind: latncy}\n")
    with pytest.raises(FaultConfigError) as info:
        load_model(FaultProfile, path, FaultConfigError)
    message = str(info.value)
    assert str(path) in message and "line 4" in message and "rules.0.fault" in message
    assert "'latency'" in message and "'timeout'" in message  # what is allowed


def test_bad_parameter_names_the_field(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: p\nrules:\n  - id: r\n    fault: {kind: timeout, effect: maybe}\n    probability: 2\n"
    )
    with pytest.raises(FaultConfigError) as info:
        load_model(FaultProfile, path, FaultConfigError)
    message = str(info.value)
    assert "rules.0.fault.effect" in message and "'applied' or 'dropped'" in message
    assert "line 5: rules.0.probability" in message


def test_unknown_profile_lists_known_ones():
    with pytest.raises(KeyError, match=r"unknown fault profile 'chaos'.*flaky-network"):
        resolve_profile("chaos")


runner = CliRunner()


def test_faults_list_prints_every_kind_with_parameters_and_defaults():
    result = runner.invoke(app, ["faults", "list", "--json"])
    assert result.exit_code == 0, result.output
    kinds = {k["kind"]: k for k in json.loads(result.stdout)["kinds"]}
    assert set(kinds) == set(KINDS)
    assert kinds["timeout"]["params"]["effect"] == {
        "type": "string",
        "default": "dropped",
        "allowed": ["applied", "dropped"],
    }
    assert kinds["rate_limit"]["params"]["burst"]["default"] == 5


def test_faults_show_prints_a_profile():
    result = runner.invoke(app, ["faults", "show", "flaky-network", "--json"])
    assert result.exit_code == 0, result.output
    profile = json.loads(result.stdout)
    assert profile["name"] == "flaky-network" and profile["rules"]
    result = runner.invoke(app, ["faults", "show", "chaos"])
    assert result.exit_code == 2 and "unknown fault profile" in result.output


def test_a_builtin_profile_is_parsed_alone_on_first_use(monkeypatch):
    from simforge.faults import library

    parsed: list[str] = []
    real = library.load_profile
    monkeypatch.setattr(library, "load_profile",
                        lambda path: (parsed.append(path.stem), real(path))[1])
    library._builtin.cache_clear()
    library.builtin_profiles.cache_clear()
    try:
        assert resolve_profile("flaky-network").name == "flaky-network"
        assert resolve_profile("flaky-network") is resolve_profile("flaky-network")
        assert parsed == ["flaky-network"]
        every = builtin_profiles()
        assert sorted(parsed) == sorted(every) and every["flaky-network"] is resolve_profile(
            "flaky-network")
        with pytest.raises(Exception, match=r"unknown fault profile 'nope'.*flaky-network"):
            resolve_profile("nope")
    finally:
        library._builtin.cache_clear()
        library.builtin_profiles.cache_clear()
