"""The gate's policy (stallscope.analyzers.gate.policy): every key read into typed dataclasses, and
every mistake refused with the key and what it allows, by the Python API and by `stallscope
check` (status 2, before any capture is read). docs/check.md documents every key the parser
knows."""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from stallscope.analyzers.gate.inputs import InputProblem, expand, is_capture_name
from stallscope.analyzers.gate.policy import (BASELINE_KEYS, CAUSES, RULE_KEYS, SCOPE_KEYS, TOP_KEYS, PolicyError,
                                              PortRange, load_policy, parse_policy)
from stallscope.exit_codes import ExitCode
from stallscope.vocabulary import Cause

REPO = Path(__file__).resolve().parents[1]
CLEAN = REPO / "fixtures" / "clean_bulk.pcap"
DOC = REPO / "docs" / "check.md"

FULL = """
version = 1
[rules]
forbid_causes = ["nagle_delayed_ack", "undetermined", "nagle_delayed_ack"]
max_stalled_share = 0.25
max_time_lost_ms = { burst_loss_timeout = 500, undetermined = 200 }
min_goodput_bps = 30_270_000
min_goodput_bytes = 2_000_000
max_retransmission_rate = 0.02

[[scope]]
name = "database"
ports = [5432, "6000-6010"]
addresses = ["10.20.0.0/16", "2001:db8::/32"]
forbid_causes = ["receiver_window_limited"]

[baseline]
file = "results/main.json"
stall_time_margin = 0.2
stall_time_floor_ms = 5
cause_count_margin = 1
"""


def run(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("stallscope")
    assert exe, "stallscope is not installed"
    return subprocess.run([exe, "check", *args], capture_output=True, text=True, timeout=120)


def test_every_key_is_read_into_the_dataclasses(tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text(FULL)
    p = load_policy(tmp_path / "policy.toml")
    assert p.rules.forbid_causes == ("nagle_delayed_ack", "undetermined")  # a repeat once
    assert p.rules.max_stalled_share == 0.25 and p.rules.min_goodput_bps == 30_270_000
    assert dict(p.rules.max_time_lost_ms) == {"burst_loss_timeout": 500.0, "undetermined": 200.0}
    assert p.rules.min_goodput_bytes == 2_000_000 and p.rules.max_retransmission_rate == 0.02
    (db,) = p.scopes
    assert db.name == "database" and db.forbid_causes == ("receiver_window_limited",)
    assert db.where.ports == (PortRange(5432, 5432), PortRange(6000, 6010))
    assert db.where.addresses == (ipaddress.ip_network("10.20.0.0/16"), ipaddress.ip_network("2001:db8::/32"))
    assert db.where.matches([("10.20.3.4", 40000), ("10.1.1.1", 6005)])
    assert not db.where.matches([("10.20.3.4", 40000), ("10.1.1.1", 6011)])
    assert db.where.matches([("2001:db8::1", 5432), ("2001:db9::1", 1)])
    b = p.baseline
    assert b.file == tmp_path / "results" / "main.json"  # relative to the policy file
    assert (b.stall_time_margin, b.stall_time_floor_ms, b.cause_count_margin) == (0.2, 5.0, 1)
    assert p.needs_prediction == []


def test_the_cause_names_are_the_analysis_vocabulary() -> None:
    assert set(CAUSES) == {c.value for c in Cause} | {"undetermined"}


@pytest.mark.parametrize(("doc", "key", "allowed"), [
    ({"rule": {}}, "rule", "version, rules, scope, baseline"),
    ({"rules": {"forbid_cause": ["x"]}}, "rules.forbid_cause", ", ".join(RULE_KEYS)),
    ({"rules": {"max_stalled_share": "half"}}, "rules.max_stalled_share", "a number from 0 to 1"),
    ({"rules": {"max_stalled_share": True}}, "rules.max_stalled_share", "a number from 0 to 1"),
    ({"rules": {"max_stalled_share": 1.5}}, "rules.max_stalled_share", "a number from 0 to 1"),
    ({"rules": {"forbid_causes": ["nagle"]}}, "rules.forbid_causes[0]", ", ".join(CAUSES)),
    ({"rules": {"forbid_causes": "nagle_delayed_ack"}}, "rules.forbid_causes", ", ".join(CAUSES)),
    ({"rules": {"max_time_lost_ms": {"nagle": 1}}}, "rules.max_time_lost_ms.nagle", ", ".join(CAUSES)),
    ({"rules": {"max_time_lost_ms": {"nagle_delayed_ack": -1}}}, "rules.max_time_lost_ms.nagle_delayed_ack",
     "a number >= 0"),
    ({"rules": {"max_time_lost_ms": 5}}, "rules.max_time_lost_ms", "a table of cause = milliseconds"),
    ({"rules": {"min_goodput_bytes": 1.5}}, "rules.min_goodput_bytes", "an integer >= 0"),
    ({"rules": 3}, "rules", "a table"),
    ({"scope": {"name": "x"}}, "scope", "[[scope]] tables"),
    ({"scope": [{"name": "db", "forbid_causes": ["mss_mismatch"]}]}, "scope[0]", "ports, addresses"),
    ({"scope": [{"ports": [80]}]}, "scope[0]", ", ".join(RULE_KEYS)),
    ({"scope": [{"ports": [80, "90-x"], "forbid_causes": ["mss_mismatch"]}]}, "scope[0].ports[1]",
     'an array of ports (0-65535) or ranges ("8000-8999")'),
    ({"scope": [{"ports": [70000], "forbid_causes": ["mss_mismatch"]}]}, "scope[0].ports[0]",
     'an array of ports (0-65535) or ranges ("8000-8999")'),
    ({"scope": [{"addresses": ["10.0.0.300"], "forbid_causes": ["mss_mismatch"]}]}, "scope[0].addresses[0]",
     "an array of IPv4/IPv6 addresses or networks"),
    ({"scope": [{"ports": [1], "max_stalled_share": 0.1, "colour": "red"}]}, "scope[0].colour", ", ".join(SCOPE_KEYS)),
    ({"scope": [{"name": "a", "ports": [1], "max_stalled_share": 0.1},
                {"name": "a", "ports": [2], "max_stalled_share": 0.1}]}, "scope[1].name", "a name of its own"),
    ({"baseline": {"margin": 1}}, "baseline.margin", ", ".join(BASELINE_KEYS)),
    ({"baseline": {"cause_count_margin": -1}}, "baseline.cause_count_margin", "an integer >= 0"),
    ({"baseline": {"file": 3}}, "baseline.file", "a path to a previous"),
    ({"version": 2}, "version", "1"),
])
def test_a_bad_policy_names_the_key_and_what_it_allows(doc: dict, key: str, allowed: str) -> None:
    with pytest.raises(PolicyError) as e:
        parse_policy(doc)
    assert e.value.key == key
    assert allowed in e.value.allowed
    assert str(e.value).startswith(f"{key}: ") and "; allowed: " in str(e.value)


@pytest.mark.parametrize(("toml", "message"), [
    ('[rules]\nforbid_cause = ["nagle_delayed_ack"]\n',
     "rules.forbid_cause: unknown key; allowed: forbid_causes, max_stalled_share"),
    ('[rules]\nmax_stalled_share = "half"\n',
     "rules.max_stalled_share: expected a number, got a string ('half'); allowed: a number from 0 to 1"),
    ('[rules]\nforbid_causes = ["nagle"]\n',
     "rules.forbid_causes[0]: unknown cause 'nagle'; allowed: " + ", ".join(CAUSES)),
    ("[rules\n", "not valid TOML"),
    ("", "the policy holds no rule; allowed: [rules], [[scope]], [baseline]"),
    ('[baseline]\nfile = "nope.json"\n', "baseline.file: "),
], ids=["unknown-key", "wrong-type", "unknown-cause", "not-toml", "empty", "baseline-missing"])
def test_check_refuses_a_bad_policy_with_status_2(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "policy.toml").write_text(toml)
    r = run(str(CLEAN), "--policy", str(tmp_path / "policy.toml"))
    assert r.returncode == ExitCode.USAGE, r.stderr
    assert r.stdout == ""
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"stallscope check: {tmp_path / 'policy.toml'}: ") and message in line


def test_check_refuses_bad_usage(tmp_path: Path) -> None:
    r = run(str(CLEAN), "--forbid", "nagle")
    assert r.returncode == ExitCode.USAGE and "--forbid: unknown cause 'nagle'; allowed: ack_loss_timeout" in r.stderr
    assert run(str(CLEAN)).returncode == ExitCode.USAGE  # no policy at all
    assert run(str(CLEAN), "--forbid", "mss_mismatch", "-f", "xml").returncode == ExitCode.USAGE
    assert run(str(CLEAN), "--policy", str(tmp_path / "missing.toml")).returncode == ExitCode.USAGE
    (tmp_path / "base.json").write_text('{"schema": "stallscope.flows/2"}')
    r = run(str(CLEAN), "--baseline", str(tmp_path / "base.json"))
    assert r.returncode == ExitCode.USAGE and "allowed: stallscope.check/1, stallscope.analysis/1" in r.stderr
    (tmp_path / "base.json").write_text("not json")
    assert run(str(CLEAN), "--baseline", str(tmp_path / "base.json")).returncode == ExitCode.USAGE


def test_every_key_is_documented() -> None:
    text = DOC.read_text()
    rows = {m for m in re.findall(r"^\| `([a-z_]+)` \|", text, re.M)}
    assert set(TOP_KEYS) | set(SCOPE_KEYS) | set(BASELINE_KEYS) <= rows
    for cause in CAUSES:
        assert f"`{cause}`" in text, cause


# --- inputs -------------------------------------------------------------------------------------------


def test_directories_and_globs_expand_sorted_and_recursively(tmp_path: Path) -> None:
    for name in ("b.pcap", "a.pcapng.gz", "sub/c.cap", "sub/deeper/d.PCAP", "notes.txt", "cap.pcap3", "[1].pcap"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    got = expand([str(tmp_path)])
    assert [p.relative_to(tmp_path).as_posix() for p in got] == [
        "[1].pcap", "a.pcapng.gz", "b.pcap", "cap.pcap3", "sub/c.cap", "sub/deeper/d.PCAP"]
    assert [p.name for p in expand([str(tmp_path / "**" / "*.cap")])] == ["c.cap"]
    # A name that exists is not a pattern; a file named twice is checked once.
    assert [p.name for p in expand([str(tmp_path / "[1].pcap"), str(tmp_path / "b.pcap"),
                                    str(tmp_path / "[1].pcap")])] == ["[1].pcap", "b.pcap"]
    empty = tmp_path / "empty"
    empty.mkdir()
    problems = expand([str(tmp_path / "nope.pcap"), str(tmp_path / "*.nothing"), str(empty)])
    assert [(type(p), p.kind) for p in problems] == [(InputProblem, "no_such_file"), (InputProblem, "no_match"),
                                                     (InputProblem, "no_captures")]
    assert is_capture_name("x.pcap.gz") and is_capture_name("cap.pcap12") and not is_capture_name("x.json")


def test_goodput_against_the_reference_simulators_prediction(tmp_path: Path) -> None:
    """min_goodput_of_prediction: the connection refitted into the reference simulator predicts a
    goodput; burst_loss reproduces its reference (docs/comparison.md), so it passes at 0.8 and the
    result carries the measured share."""
    import json

    (tmp_path / "policy.toml").write_text("[rules]\nmin_goodput_of_prediction = 0.8\n")
    r = run(str(REPO / "fixtures" / "burst_loss.pcap"), "--policy", str(tmp_path / "policy.toml"), "-f", "json")
    assert r.returncode == ExitCode.OK, r.stderr
    doc = json.loads(r.stdout)
    results = [x for c in doc["captures"] for x in c["results"] if x["rule"] == "min_goodput_of_prediction"]
    assert results and all(x["status"] == "pass" for x in results)
    assert all(0.8 <= x["observed"] <= 1.25 and x["limit"] == 0.8 for x in results)
