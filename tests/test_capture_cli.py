"""`stallscope capture` without root: the library listing, usage errors, and the one-line
environment error (exit_codes.ENVIRONMENT) instead of a traceback."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from stallscope.capture.scenarios.library import SCENARIOS
from stallscope.cli.app import app
from stallscope.exit_codes import ExitCode


def test_list_names_every_scenario_and_marks_negative_controls():
    result = CliRunner().invoke(app, ["capture", "list", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["rows"]
    assert [r["name"] for r in rows] == list(SCENARIOS)
    by_name = {r["name"]: r for r in rows}
    assert by_name["nagle_4k_jumbo"]["expected_causes"] == "nagle_delayed_ack"
    assert by_name["nagle_4k_jumbo_nodelay"]["expected_causes"] == "(negative control)"


def test_library_pairs_faults_with_negative_controls():
    controls = [s for s in SCENARIOS.values() if s.negative_control]
    assert len(controls) >= 5
    assert {c.value for s in SCENARIOS.values() for c in s.expected} >= {
        "nagle_delayed_ack", "burst_loss_timeout", "jumbo_slot_exhaustion", "pmtu_blackhole",
        "mss_mismatch", "receiver_window_limited", "send_buffer_limited", "application_idle"}


def test_unknown_scenario_is_a_usage_error():
    result = CliRunner().invoke(app, ["capture", "scenario", "no_such_thing"])
    assert result.exit_code == ExitCode.USAGE
    assert "no scenario 'no_such_thing'" in result.output


@pytest.mark.parametrize("argv", [
    ["capture", "scenario", "clean_bulk", "--seconds", "1"],
    ["capture", "live", "-i", "lo", "-w", "x.pcap"],
])
def test_without_root_the_error_is_one_line_and_exit_code_environment(monkeypatch, tmp_path, argv):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == ExitCode.ENVIRONMENT
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "root" in lines[0] and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_files_without_rotate_is_a_usage_error():
    result = CliRunner().invoke(app, ["capture", "live", "-i", "lo", "-w", "x.pcap", "--files", "3"])
    assert result.exit_code == ExitCode.USAGE


def test_every_variant_changes_its_base_and_keeps_its_label():
    """A variant runs its base scenario with other settings (capture/scenarios/variants.py): its
    configuration differs from the base's and its expected causes are the base's. `capture list
    --variants` shows them after the library; plain `capture list` does not."""
    from stallscope.capture.scenarios.variants import VARIANTS

    assert len(VARIANTS) >= 50
    for name, v in VARIANTS.items():
        base = SCENARIOS[name.split("__")[0]]
        assert v.parameters(3.0) != base.parameters(3.0), name
        assert (v.expected, v.detail, v.workload) == (base.expected, base.detail, base.workload), name
    listed = json.loads(CliRunner().invoke(app, ["capture", "list", "--variants", "--format", "json"]).stdout)["rows"]
    assert [r["name"] for r in listed] == list(SCENARIOS) + list(VARIANTS)
    plain = json.loads(CliRunner().invoke(app, ["capture", "list", "--format", "json"]).stdout)["rows"]
    assert [r["name"] for r in plain] == list(SCENARIOS)
