"""The scorer (analyzers/scoring.py, `stallscope score`): the matching rule, both truth schemas,
the confusion matrix, and that a simulated pcap's timestamps share its truth's clock."""

from __future__ import annotations

import json
from pathlib import Path

import dpkt
import pytest
from typer.testing import CliRunner

from stallscope.analyzers import scoring
from stallscope.analyzers.scoring import (
    MISSED, SPURIOUS, UNDETERMINED, Interval, matches, overlaps_enough, score_capture_truth, score_ground_truth,
)
from stallscope.cli.app import app

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FWD = "10.0.0.1:40000 -> 10.0.0.2:5001"
REV = "10.0.0.2:5001 -> 10.0.0.1:40000"
MS = 1_000_000


def truth_doc(*stalls: tuple[int, int, str, str]) -> dict:
    return {"schema": "stallscope.ground_truth/1", "parameters": {}, "summary": {}, "drops": {},
            "stalls": [{"start_ns": a, "end_ns": b, "cause": c, "detail": None, "direction": d, "evidence": {},
                        "duration_ns": b - a} for a, b, c, d in stalls]}


def stall(a: int, b: int, cause: str, direction: str = FWD, dir_: int = 0) -> dict:
    return {"dir": dir_, "direction": direction, "start_ns": a, "end_ns": b, "start_frame": 1, "end_frame": 2,
            "duration_ns": b - a, "cause": cause, "detail": None, "confidence": 0.9, "evidence": {},
            "alternatives": []}


def analysis(stalls: list[dict], findings: list[dict] | None = None, path: str = "x.pcap") -> dict:
    return {"schema": "stallscope.analysis/1", "files": [{"path": path, "status": "ok", "notes": [], "connections": [
        {"stream": 0, "stalls": stalls, "findings": findings or []}]}]}


# --- the matching rule ------------------------------------------------------------------------------


def test_overlap_of_half_the_shorter_matches_and_40_percent_does_not():
    true = Interval(0, 100 * MS, "nagle_delayed_ack")
    assert overlaps_enough(true, Interval(50 * MS, 300 * MS, "x"))  # 50 of the shorter 100 ms
    assert not overlaps_enough(true, Interval(60 * MS, 300 * MS, "x"))  # 40 %
    # The shorter one decides: a 10 ms report inside a 200 ms truth is fully covered.
    assert overlaps_enough(Interval(0, 200 * MS, "x"), Interval(100 * MS, 110 * MS, "x"))
    assert overlaps_enough(Interval(0, 200 * MS, "x"), Interval(195 * MS, 205 * MS, "x"))  # 5 of 10
    assert not overlaps_enough(Interval(0, 200 * MS, "x"), Interval(196 * MS, 206 * MS, "x"))  # 4 of 10


def test_cause_direction_and_undetermined_decide_a_match():
    t = Interval(0, 100, "burst_loss_timeout", FWD)
    assert matches(t, Interval(0, 100, "burst_loss_timeout", FWD))
    assert matches(t, Interval(0, 100, "burst_loss_timeout", ""))  # one side gives no direction
    assert not matches(t, Interval(0, 100, "burst_loss_timeout", REV))
    assert not matches(t, Interval(0, 100, "single_loss_timeout", FWD))
    assert not matches(Interval(0, 100, UNDETERMINED), Interval(0, 100, UNDETERMINED))


# --- simulator truth --------------------------------------------------------------------------------


def test_ground_truth_counts_precision_recall_and_confusion():
    truth = truth_doc(
        (0, 200 * MS, "nagle_delayed_ack", FWD),            # matched
        (300 * MS, 500 * MS, "nagle_delayed_ack", FWD),     # reported as window_update_deadlock
        (600 * MS, 800 * MS, "burst_loss_timeout", FWD),    # reported with 40 % overlap: missed
        (900 * MS, 1000 * MS, "send_buffer_limited", FWD),  # undetermined
    )
    doc = analysis([
        stall(10 * MS, 190 * MS, "nagle_delayed_ack"),
        stall(300 * MS, 500 * MS, "window_update_deadlock"),
        stall(720 * MS, 920 * MS, "burst_loss_timeout"),  # 80 of 200 ms: 40 %
        stall(900 * MS, 1000 * MS, UNDETERMINED),
        stall(2000 * MS, 2100 * MS, "nagle_delayed_ack"),   # nothing true there: spurious
    ])
    score = score_ground_truth(doc, truth)
    c = score.confusion
    assert c.get("nagle_delayed_ack", "nagle_delayed_ack") == 1
    assert c.get("nagle_delayed_ack", "window_update_deadlock") == 1
    assert c.get("burst_loss_timeout", MISSED) == 1
    assert c.get(SPURIOUS, "burst_loss_timeout") == 1  # the 40 % report, left over
    assert c.get("send_buffer_limited", UNDETERMINED) == 1
    assert c.get(SPURIOUS, "nagle_delayed_ack") == 1
    per = score.per_cause()
    assert per["nagle_delayed_ack"] == {"true": 2, "reported": 2, "matched": 1, "precision": 0.5, "recall": 0.5}
    assert per["burst_loss_timeout"]["recall"] == 0.0 and per["burst_loss_timeout"]["precision"] == 0.0
    assert per["window_update_deadlock"]["recall"] is None  # nothing true to find
    totals = score.totals()
    assert totals == {"true": 4, "reported": 5, "matched": 1, "misattributed": 1, "undetermined": 1, "missed": 1,
                      "spurious": 2, "precision": 0.25, "recall": 0.25}
    j = score.to_json()["confusion"]
    assert j["rows"] == ["burst_loss_timeout", "nagle_delayed_ack", "send_buffer_limited", SPURIOUS]
    assert j["columns"][-2:] == [UNDETERMINED, MISSED]
    assert j["matrix"][SPURIOUS]["nagle_delayed_ack"] == 1


def test_each_stall_matches_once_and_the_larger_overlap_wins():
    truth = truth_doc((0, 100 * MS, "nagle_delayed_ack", FWD), (100 * MS, 200 * MS, "nagle_delayed_ack", FWD))
    # One long report over both true stalls can match only one of them.
    score = score_ground_truth(analysis([stall(40 * MS, 200 * MS, "nagle_delayed_ack")]), truth)
    assert score.totals()["matched"] == 1 and score.totals()["missed"] == 1
    # The match goes to the second (100 ms of overlap against 60).
    fates = [p["verdict"] for p in score.pairs]
    assert fates == ["missed", "matched"]
    # A right cause is preferred over a larger overlap with a wrong one.
    truth = truth_doc((0, 100 * MS, "sender_sws", FWD))
    score = score_ground_truth(analysis([stall(0, 100 * MS, "nagle_delayed_ack"),
                                         stall(40 * MS, 100 * MS, "sender_sws")]), truth)
    assert score.confusion.get("sender_sws", "sender_sws") == 1
    assert score.confusion.get(SPURIOUS, "nagle_delayed_ack") == 1


def test_direction_mismatch_is_a_miss_and_a_spurious_report():
    truth = truth_doc((0, 100 * MS, "nagle_delayed_ack", FWD))
    score = score_ground_truth(analysis([stall(0, 100 * MS, "nagle_delayed_ack", REV, 1)]), truth)
    assert score.confusion.get("nagle_delayed_ack", MISSED) == 1
    assert score.confusion.get(SPURIOUS, "nagle_delayed_ack") == 1


def test_offset_is_subtracted_from_reported_times():
    truth = truth_doc((0, 100 * MS, "nagle_delayed_ack", FWD))
    doc = analysis([stall(5_000 * MS, 5_100 * MS, "nagle_delayed_ack")])
    assert score_ground_truth(doc, truth).totals()["matched"] == 0
    assert score_ground_truth(doc, truth, offset_ns=5_000 * MS).totals()["matched"] == 1


def test_the_simulators_pcap_shares_its_truths_clock(tmp_path):
    """run_bulk writes pcap timestamps = simulator time (epoch 0), the clock of the truth's stalls:
    each true stall starts and ends within 1 ms of a data segment the sender sent, and no data
    leaves the sender inside it (so reported times need no offset)."""
    from stallscope.simulate.run_bulk import BulkConfig, run_bulk

    pcap = tmp_path / "t.pcap"
    run_bulk(BulkConfig(personality="sunos41", link="atm140", sndbuf=16384, rcvbuf=24576, cost="sun_ipx",
                        bytes=1024 * 1024, seed=3), pcap=pcap)
    truth = json.loads((tmp_path / "t.pcap.truth.json").read_text())
    assert len(truth["stalls"]) >= 5
    sends = []
    with open(pcap, "rb") as f:
        reader = dpkt.pcap.Reader(f)
        for ts, buf in reader:
            ip = dpkt.ethernet.Ethernet(buf).data
            if ip.src == bytes([10, 0, 0, 1]) and len(ip.data.data) > 0:
                sends.append(int(ts * 1_000_000_000))
    assert sends[0] < 10 * MS  # the clock starts at 0, not at an epoch
    # A stall runs from one send of new data to the next; the tap sees each send after the host's
    # output cost (under 1 ms here), on the same clock.
    for s in truth["stalls"]:
        assert any(s["start_ns"] <= t <= s["start_ns"] + MS for t in sends)
        assert 0 <= min(t for t in sends if t >= s["end_ns"]) - s["end_ns"] < MS
        assert not any(s["start_ns"] + MS < t < s["end_ns"] for t in sends)


def test_several_files_are_narrowed_to_the_truths_capture():
    truth = truth_doc((0, 100 * MS, "nagle_delayed_ack", FWD))
    doc = analysis([stall(0, 100 * MS, "nagle_delayed_ack")], path="/a/one.pcap")
    doc["files"].append(analysis([stall(0, 100 * MS, "sender_sws")], path="/a/two.pcap")["files"][0])
    assert score_ground_truth(doc, truth, capture_name="one.pcap").totals()["matched"] == 1
    assert score_ground_truth(doc, truth, capture_name="two.pcap").totals()["misattributed"] == 1
    with pytest.raises(scoring.ScoreError):
        score_ground_truth(doc, truth, capture_name="three.pcap")


# --- capture truth ----------------------------------------------------------------------------------

SENDER = "10.77.0.1:5001 -> 10.77.0.2:40000"
RECEIVER = "10.77.0.2:40000 -> 10.77.0.1:5001"


def capture_truth(expected: list[str]) -> dict:
    return {"schema": "stallscope.capture_truth/1", "scenario": "s", "expected_causes": expected}


def test_capture_truth_hit_miss_extra_for_the_data_sender_only():
    doc = analysis(
        [stall(0, 1, "nagle_delayed_ack", SENDER), stall(0, 1, "application_idle", SENDER),
         stall(0, 1, "sender_sws", RECEIVER, 1)],  # the other direction: not the data sender's
        findings=[{"cause": "mss_mismatch", "detail": None, "dir": 0, "direction": SENDER, "evidence": {}}],
    )
    cap = score_capture_truth(doc, capture_truth(["nagle_delayed_ack", "burst_loss_timeout"])).captures[0]
    assert cap["hit"] == ["nagle_delayed_ack"]
    assert cap["miss"] == ["burst_loss_timeout"]
    # Application idle is listed apart (reported "separately", issue 12), not as an extra cause.
    assert cap["extra"] == ["mss_mismatch"] and cap["application_idle"] is True
    assert cap["ok"] is False
    ok = score_capture_truth(doc, capture_truth(["application_idle", "mss_mismatch", "nagle_delayed_ack"]))
    assert ok.captures[0]["ok"] is True and ok.totals()["hit"] == 3


def test_negative_control_fails_on_any_report_undetermined_included():
    neg = capture_truth([])
    assert score_capture_truth(analysis([]), neg).captures[0]["ok"] is True
    assert score_capture_truth(analysis([stall(0, 1, "sender_sws", RECEIVER, 1)]), neg).captures[0]["ok"] is True
    und = score_capture_truth(analysis([stall(0, 1, UNDETERMINED, SENDER)]), neg).captures[0]
    assert und["ok"] is False and und["undetermined"] == 1 and und["extra"] == []
    # On a positive capture an undetermined stall is listed but neither a hit nor a failure.
    pos = score_capture_truth(analysis([stall(0, 1, UNDETERMINED, SENDER), stall(2, 3, "sender_sws", SENDER)]),
                              capture_truth(["sender_sws"])).captures[0]
    assert pos["ok"] is True and pos["undetermined"] == 1


def test_fixture_truth_files_load_and_score(tmp_path):
    """Every fixtures/NAME.json is a capture truth the scorer reads; an analysis reporting exactly
    the expected causes scores every capture ok, one reporting nothing misses every positive one."""
    truths = sorted(p for p in FIXTURES.glob("*.json"))
    assert len(truths) >= 19
    report = scoring.CaptureScore()
    empty = scoring.CaptureScore()
    for p in truths:
        truth = json.loads(p.read_text())
        echo = analysis([stall(0, 1, c, SENDER) for c in truth["expected_causes"]])
        report.merge(score_capture_truth(echo, truth, label=p.stem))
        empty.merge(score_capture_truth(analysis([]), truth, label=p.stem))
    assert report.totals()["ok"] == len(truths)
    negatives = report.totals()["negative_controls"]
    assert negatives == 7  # nodelay, 128k buffer, per-request, atm_clean, pmtu_icmp, burst_loss_sack, clean_bulk
    assert empty.totals()["ok"] == negatives
    assert empty.per_cause()["burst_loss_timeout"]["miss"] == 4


# --- the command and the corpus loop ----------------------------------------------------------------


def test_score_command_json_and_table(tmp_path):
    truth = tmp_path / "t.pcap.truth.json"
    truth.write_text(json.dumps(truth_doc((0, 100 * MS, "nagle_delayed_ack", FWD),
                                          (200 * MS, 300 * MS, "sender_sws", FWD))))
    an = tmp_path / "a.json"
    an.write_text(json.dumps(analysis([stall(0, 100 * MS, "nagle_delayed_ack"),
                                       stall(200 * MS, 300 * MS, "nagle_delayed_ack")], path=str(tmp_path / "t.pcap"))))
    runner = CliRunner()
    res = runner.invoke(app, ["score", str(an), str(truth), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["schema"] == "stallscope.score/1"
    gt = doc["ground_truth"]
    assert gt["causes"]["nagle_delayed_ack"]["precision"] == 0.5
    assert gt["causes"]["sender_sws"]["recall"] == 0.0
    assert gt["confusion"]["matrix"]["sender_sws"]["nagle_delayed_ack"] == 1
    assert [s["verdict"] for s in gt["stalls"]] == ["matched", "misattributed"]
    res = runner.invoke(app, ["score", str(an), str(truth)])
    assert res.exit_code == 0 and "confusion" in res.output and "misattributed 1" in res.output
    bad = runner.invoke(app, ["score", str(an)])
    assert bad.exit_code == 2


def _echo_analyzer(pcap: Path) -> dict:
    """A perfect analyzer for tests: reports the truth beside the capture (module level: picklable)."""
    truth = json.loads(pcap.with_name(pcap.name + ".truth.json").read_text())
    return analysis([stall(s["start_ns"], s["end_ns"], s["cause"], s["direction"]) for s in truth["stalls"]],
                    path=str(pcap))


def test_score_corpus_aggregates_traces(tmp_path):
    for name, stalls in (("a", [(0, 100 * MS, "nagle_delayed_ack", FWD)]),
                         ("b", [(0, 100 * MS, "sender_sws", FWD), (300 * MS, 400 * MS, "nagle_delayed_ack", FWD)])):
        (tmp_path / f"{name}.pcap").write_bytes(b"")
        (tmp_path / f"{name}.pcap.truth.json").write_text(json.dumps(truth_doc(*stalls)))
    (tmp_path / "lonely.pcap").write_bytes(b"")  # no truth beside it: not scored
    report = scoring.score_corpus(tmp_path, analyzer=_echo_analyzer)
    doc = report.to_json()["ground_truth"]
    assert [t["trace"] for t in doc["traces"]] == ["a.pcap", "b.pcap"]
    assert doc["totals"]["true"] == 3 and doc["totals"]["precision"] == 1.0 and doc["totals"]["recall"] == 1.0
    assert doc["causes"]["nagle_delayed_ack"]["matched"] == 2

    def failing(pcap: Path) -> dict:
        raise RuntimeError("boom")

    broken = scoring.score_corpus(tmp_path, analyzer=failing)
    assert [e["trace"] for e in broken.errors] == ["a.pcap", "b.pcap"] and broken.timed is None


def test_score_command_analyzes_a_capture(tmp_path):
    """Given a capture, `score` runs the analyzer on it (analyze_file) and scores that."""
    pytest.importorskip("stallscope.analyzers.analyze")
    from stallscope.simulate.run_bulk import BulkConfig, run_bulk

    pcap = tmp_path / "idle.pcap"
    run_bulk(BulkConfig(personality="linux20", link="ethernet10", bytes=131072, write=16384, think_ns=50 * MS),
             pcap=pcap)
    truth = json.loads((tmp_path / "idle.pcap.truth.json").read_text())
    res = CliRunner().invoke(app, ["score", str(pcap), str(tmp_path / "idle.pcap.truth.json"), "-f", "json"])
    assert res.exit_code == 0, res.output
    gt = json.loads(res.output)["ground_truth"]
    assert gt["traces"][0]["trace"] == "idle.pcap"
    assert gt["totals"]["true"] == len(truth["stalls"]) > 0
    assert len(gt["stalls"]) == gt["totals"]["true"] + gt["totals"]["spurious"]
