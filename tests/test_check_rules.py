"""The gate's rules as a pure function (stallscope.analyzers.gate.rules.evaluate) on the analyses
of fixtures/: the acceptance checks of issue 15 (a policy forbidding nagle_delayed_ack fails exactly
nagle_4k_jumbo and its receiver twin and passes the negative controls; a minimum goodput chosen
from the ATM path's mechanism fails atm_small_buffer and passes atm_epd; a baseline flags a capture
whose stall time grew), and each rule's pass, fail and skip."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import pytest

from stallscope.analyzers.analyze import FileAnalysis, analyze_one
from stallscope.analyzers.gate.baseline import Baseline, CaptureSummary, parse_baseline, summarize
from stallscope.analyzers.gate.document import CheckRun
from stallscope.analyzers.gate.policy import BaselineRule, parse_policy
from stallscope.analyzers.gate.rules import ERROR, FAIL, PASS, SKIP, evaluate, exit_status
from stallscope.exit_codes import ExitCode

FIX = Path(__file__).resolve().parents[1] / "fixtures"
NEGATIVE_CONTROLS = ["nagle_4k_jumbo_nodelay", "nagle_128k_buffer", "nagle_4k_jumbo_per_request", "atm_clean",
                     "pmtu_icmp", "burst_loss_sack", "clean_bulk"]

# The ATM path of the fixtures (fixtures/README.md): 135 Mbit/s of cells; a 9180-byte datagram and
# AAL5's 8-byte trailer fill 192 cells of 53 bytes and carry 9128 bytes of TCP payload. A transfer
# under a quarter of that loss-free ceiling "performs badly" (Kung & Morris; COLLAPSE_SHARE of
# simulate/reproductions/kung_morris.py). docs/check.md derives the same number.
ATM_CELL_RATE = 135_000_000
ATM_CEILING_BPS = ATM_CELL_RATE * 9128 / (192 * 53)
ATM_MIN_GOODPUT = 0.25 * ATM_CEILING_BPS


@lru_cache(maxsize=None)
def analysis(name: str) -> FileAnalysis:
    return analyze_one(FIX / name)


def policy(**rules) -> object:
    return parse_policy({"rules": rules})


def failed(verdict) -> list[str]:
    return [r.rule for r in verdict.results if r.status == FAIL]


# --- acceptance ------------------------------------------------------------------------------------


def test_forbidding_nagle_fails_exactly_nagle_4k_jumbo_and_its_receiver_twin() -> None:
    pol = policy(forbid_causes=["nagle_delayed_ack"])
    verdicts = {p.name: evaluate(analysis(p.name), pol) for p in sorted(FIX.glob("*.pcap"))}
    assert {n for n, v in verdicts.items() if v.verdict != PASS} == {"nagle_4k_jumbo.pcap",
                                                                     "nagle_4k_jumbo.receiver.pcap"}
    for control in NEGATIVE_CONTROLS:
        for name in (f"{control}.pcap", f"{control}.receiver.pcap"):
            assert verdicts[name].verdict == PASS, name
    fail = next(r for r in verdicts["nagle_4k_jumbo.pcap"].results if r.status == FAIL)
    assert fail.rule == "forbid_causes" and fail.stream == 0 and fail.evidence_count == 23
    assert "23 nagle_delayed_ack stalls" in fail.message
    # The failure text names each stall's frames and the releasing ACK's.
    first = fail.evidence[0]
    assert first.kind == "stall" and first.start_frame in first.frames and first.end_frame in first.frames
    assert f"frames {first.start_frame}-{first.end_frame}" in fail.failure_text()
    assert "released by ACK frame" in fail.failure_text()


def test_atm_minimum_goodput_from_the_mechanism_fails_small_buffer_and_passes_epd() -> None:
    assert 121e6 < ATM_CEILING_BPS < 121.2e6
    pol = policy(min_goodput_bps=ATM_MIN_GOODPUT)
    verdict = {n: evaluate(analysis(f"{n}.pcap"), pol).verdict
               for n in ("atm_clean", "atm_small_buffer", "atm_ppd", "atm_epd")}
    assert verdict == {"atm_clean": PASS, "atm_small_buffer": FAIL, "atm_ppd": FAIL, "atm_epd": PASS}
    # The receiver's tap of the small buffer fails too (its goodput is lower still).
    assert evaluate(analysis("atm_small_buffer.receiver.pcap"), pol).verdict == FAIL
    r = next(r for r in evaluate(analysis("atm_small_buffer.pcap"), pol).results if r.rule == "min_goodput_bps")
    assert r.observed < 0.15 * ATM_CEILING_BPS and r.limit == ATM_MIN_GOODPUT
    # What the rule lists: the timeouts that cost the goodput, with their frames.
    assert r.evidence and all(e.cause == "burst_loss_timeout" for e in r.evidence[:3])


def test_a_baseline_flags_a_capture_whose_stall_time_grew() -> None:
    before = analysis("nagle_4k_jumbo_nodelay.pcap")
    after = replace(analysis("nagle_4k_jumbo.pcap"), path="run.pcap")
    base = Baseline("previous.json", {"run.pcap": summarize(before)})
    v = evaluate(after, parse_policy({"baseline": {}}), base)
    by_rule = {r.rule: r for r in v.results}
    assert by_rule["baseline.stall_time"].status == FAIL
    assert by_rule["baseline.stall_time"].observed > 900e6 and by_rule["baseline.stall_time"].limit == 0
    assert by_rule["baseline.cause_count"].status == FAIL
    assert "nagle_delayed_ack 0 -> 23" in by_rule["baseline.cause_count"].message
    # The same capture against its own results passes; one the baseline lacks is skipped.
    same = Baseline("previous.json", {"run.pcap": summarize(after)})
    assert not failed(evaluate(after, parse_policy({"baseline": {}}), same))
    other = evaluate(replace(after, path="new.pcap"), parse_policy({"baseline": {}}), base)
    assert {r.status for r in other.results if r.rule.startswith("baseline")} == {SKIP}


def test_baseline_margins() -> None:
    fa = replace(analysis("burst_loss.pcap"), path="x/run.pcap")
    now = summarize(fa)
    assert now.causes == {"burst_loss_timeout": 3}
    lost = now.stall_time_ns

    def verdict(old_time: int, old_causes: dict, rule: BaselineRule) -> dict[str, str]:
        base = Baseline("b", {"other/run.pcap": CaptureSummary(1, old_time, old_causes)})  # matched by file name
        return {r.rule: r.status for r in evaluate(fa, parse_policy({}), base, baseline_rule=rule).results
                if r.rule.startswith("baseline")}

    # Within 10 % of the baseline: passes; beyond it (and beyond the 10 ms floor): fails.
    assert verdict(int(lost / 1.05), {"burst_loss_timeout": 3}, BaselineRule()) == {
        "baseline.stall_time": PASS, "baseline.cause_count": PASS}
    assert verdict(int(lost / 1.5), {"burst_loss_timeout": 3}, BaselineRule())["baseline.stall_time"] == FAIL
    # The floor: a growth under it passes whatever the share.
    assert verdict(lost - 5_000_000, {"burst_loss_timeout": 3},
                   BaselineRule(stall_time_margin=0.0, stall_time_floor_ms=10))["baseline.stall_time"] == PASS
    # Counts: one more stall than the baseline fails with margin 0, passes with margin 1.
    assert verdict(lost, {"burst_loss_timeout": 2}, BaselineRule())["baseline.cause_count"] == FAIL
    assert verdict(lost, {"burst_loss_timeout": 2}, BaselineRule(cause_count_margin=1))["baseline.cause_count"] == PASS
    # Fewer stalls than before never fails.
    assert verdict(lost * 2, {"burst_loss_timeout": 9}, BaselineRule()) == {
        "baseline.stall_time": PASS, "baseline.cause_count": PASS}


def test_baseline_documents_check_and_analysis_json_agree() -> None:
    fa = analysis("burst_loss.pcap")
    run = CheckRun([evaluate(fa, policy(forbid_causes=["mss_mismatch"]))])
    from_check = parse_baseline(run.to_json(), "check.json")
    from stallscope.analyzers.analyze import Analysis

    from_analysis = parse_baseline(Analysis([fa]).to_json(), "analysis.json")
    assert from_check.captures == from_analysis.captures == {fa.path: summarize(fa)}


# --- each rule ---------------------------------------------------------------------------------------


def test_max_stalled_share() -> None:
    fa = analysis("slow_reader.pcap")  # ~82 % of the connection lost to receiver_window_limited
    conn = fa.connections[0]
    share = conn.time_lost_ns / conn.duration_ns
    assert 0.5 < share < 0.95
    r = next(r for r in evaluate(fa, policy(max_stalled_share=0.5)).results if r.rule == "max_stalled_share")
    assert r.status == FAIL and r.observed == pytest.approx(share, abs=1e-6) and r.evidence_count == len(conn.stalls)
    assert not failed(evaluate(fa, policy(max_stalled_share=0.95)))
    assert not failed(evaluate(analysis("clean_bulk.pcap"), policy(max_stalled_share=0.0)))


def test_max_time_lost_per_cause() -> None:
    fa = analysis("burst_loss.pcap")  # 3 burst_loss_timeout stalls, ~780 ms lost
    v = evaluate(fa, policy(max_time_lost_ms={"burst_loss_timeout": 500, "nagle_delayed_ack": 0}))
    by_rule = {r.rule: r for r in v.results}
    assert by_rule["max_time_lost_ms.burst_loss_timeout"].status == FAIL
    assert by_rule["max_time_lost_ms.burst_loss_timeout"].evidence_count == 3
    assert by_rule["max_time_lost_ms.nagle_delayed_ack"].status == PASS
    assert not failed(evaluate(fa, policy(max_time_lost_ms={"burst_loss_timeout": 1000})))


def test_max_retransmission_rate_reads_the_data_direction() -> None:
    fa = analysis("atm_ppd.pcap")  # 563 of 1260 packets resent
    r = next(r for r in evaluate(fa, policy(max_retransmission_rate=0.1)).results
             if r.rule == "max_retransmission_rate")
    assert r.status == FAIL and 0.4 < r.observed < 0.5
    assert r.evidence and all(e.cause == "burst_loss_timeout" for e in r.evidence)
    assert not failed(evaluate(analysis("clean_bulk.pcap"), policy(max_retransmission_rate=0.0)))


def test_goodput_is_not_judged_on_short_transfers() -> None:
    """nagle_4k_jumbo_per_request: 54 connections of a few KB each; their rate is slow start's."""
    v = evaluate(analysis("nagle_4k_jumbo_per_request.pcap"), policy(min_goodput_bps=1e9))
    goodput = [r for r in v.results if r.rule == "min_goodput_bps"]
    assert len(goodput) == 54 and {r.status for r in goodput} == {SKIP}
    assert "min_goodput_bytes" in goodput[0].message
    # With the qualifier lowered, they are judged (and fail a 1 Gbit/s minimum).
    v = evaluate(analysis("nagle_4k_jumbo_per_request.pcap"), policy(min_goodput_bps=1e9, min_goodput_bytes=0))
    assert sum(r.status == FAIL for r in v.results) == 53  # the last one sent one data packet: no goodput


def test_forbidden_connection_finding() -> None:
    v = evaluate(analysis("mss_mismatch.pcap"), policy(forbid_causes=["mss_mismatch"]))
    r = next(r for r in v.results if r.status == FAIL)
    assert r.evidence[0].kind == "finding" and "connection finding" in r.failure_text()


def test_a_scope_applies_to_the_connections_it_matches_only() -> None:
    fa = analysis("nagle_4k_jumbo.pcap")  # 10.77.0.2 -> 10.77.0.1:5001
    for where, matches in (({"ports": [5001]}, True), ({"ports": ["5000-5002"]}, True), ({"ports": [80]}, False),
                           ({"addresses": ["10.77.0.0/24"]}, True), ({"addresses": ["10.77.0.1"]}, True),
                           ({"addresses": ["192.0.2.0/24"]}, False), ({"addresses": ["::/0"]}, False),
                           ({"ports": [5001], "addresses": ["192.0.2.1"]}, False)):
        pol = parse_policy({"scope": [{"name": "server", **where, "forbid_causes": ["nagle_delayed_ack"]}]})
        v = evaluate(fa, pol)
        scoped = [r for r in v.results if r.scope == "server"]
        assert bool(scoped) == matches, where
        if matches:
            assert scoped[0].status == FAIL and scoped[0].name.endswith("server: forbid_causes")


def test_a_prediction_hook_judges_goodput_against_it() -> None:
    fa = analysis("atm_epd.pcap")
    pol = policy(min_goodput_of_prediction=0.8)
    r = lambda v: next(x for x in v.results if x.rule == "min_goodput_of_prediction")  # noqa: E731
    assert r(evaluate(fa, pol)).status == SKIP  # no predictor: nothing to compare with
    assert r(evaluate(fa, pol, predictor=lambda f, c: 40e6)).status == PASS
    assert r(evaluate(fa, pol, predictor=lambda f, c: 100e6)).status == FAIL
    assert r(evaluate(fa, pol, predictor=lambda f, c: None)).status == SKIP


def test_capture_results_and_exit_status_precedence() -> None:
    ok = evaluate(analysis("nagle_4k_jumbo.pcap"), policy(forbid_causes=["nagle_delayed_ack"]))
    rejected = evaluate(FileAnalysis("junk.pcap", "rejected", {"kind": "not_a_capture", "offset": 0,
                                                               "message": "not a pcap"}, {}), policy())
    damaged = evaluate(replace(analysis("burst_loss.pcap"), status="damaged",
                               error={"kind": "truncated", "offset": 100, "message": "cut"}), policy())
    empty = evaluate(FileAnalysis("empty.pcap", "ok", None, {}), policy())
    assert [r.status for r in rejected.results] == [ERROR] and rejected.verdict == ERROR
    assert damaged.results[0].status == ERROR and "byte 100" in damaged.results[0].message
    assert [r.status for r in empty.results] == [SKIP] and empty.verdict == PASS
    assert exit_status([ok]) is ExitCode.VERDICT_FAILED
    assert exit_status([ok, damaged]) is ExitCode.INPUT_DAMAGED
    assert exit_status([damaged, ok, rejected]) is ExitCode.INPUT_REJECTED
    assert exit_status([empty]) is ExitCode.OK


def test_evaluation_is_deterministic() -> None:
    pol = policy(forbid_causes=["nagle_delayed_ack"], max_stalled_share=0.1)
    a = CheckRun([evaluate(analysis("nagle_4k_jumbo.pcap"), pol)]).to_json()
    b = CheckRun([evaluate(analyze_one(FIX / "nagle_4k_jumbo.pcap"), pol)]).to_json()
    assert a == b
