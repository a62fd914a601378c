"""`stallscope simulate bulk` and `stallscope reproduce`: documented JSON, pcap + truth files, exit codes."""

import json

import dpkt
from typer.testing import CliRunner

from stallscope.cli.app import app
from stallscope.exit_codes import ExitCode
from stallscope.simulate.run_bulk import BulkConfig, run_bulk

runner = CliRunner()


def test_bulk_json_matches_the_run_and_names_the_stall_cause():
    res = runner.invoke(app, ["simulate", "bulk", "--sndbuf", "8192", "--rcvbuf", "16384", "--bytes", "100000",
                              "--format", "json", "--seed", "4"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    direct = run_bulk(BulkConfig(sndbuf=8192, rcvbuf=16384, bytes=100_000, seed=4))
    assert doc["goodput_mbit_s"] == round(direct.goodput_mbit_s, 4)
    assert doc["duration_s"] == round(direct.duration_s, 6)
    assert doc["goodput_mbit_s"] < 1  # Moldeklev's S=8k R=16k copy-rule deadlock
    assert {s["cause"] for s in doc["stalls"]} == {"nagle_delayed_ack"}
    assert {s["detail"] for s in doc["stalls"]} == {"copy_rule"}


def test_bulk_pcap_and_ground_truth_beside_it(tmp_path):
    pcap = tmp_path / "run.pcap"
    res = runner.invoke(app, ["simulate", "bulk", "--sndbuf", "4096", "--rcvbuf", "16384", "--bytes", "40000",
                              "--pcap", str(pcap), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    with open(pcap, "rb") as f:
        packets = list(dpkt.pcap.Reader(f))
    assert len(packets) == doc["packets"]
    truth = json.loads((tmp_path / "run.pcap.truth.json").read_text())
    assert truth["stalls"] == doc["stalls"] and truth["stalls"]
    assert {s["cause"] for s in truth["stalls"]} == {"window_update_deadlock"}


def test_bulk_rejects_unknown_personality_with_usage_code():
    res = runner.invoke(app, ["simulate", "bulk", "--personality", "vms", "--bytes", "1000"])
    assert res.exit_code == ExitCode.USAGE
    assert "unknown personality" in res.output


def test_bulk_congestion_picks_the_sender_s_and_refuses_cubic_on_bsd():
    args = ["simulate", "bulk", "--personality", "linux", "--link", "fastethernet", "--bytes", "600000",
            "--loss", "0.02", "--format", "json", "--seed", "3"]
    docs = {}
    for cc in ("reno", "cubic"):
        res = runner.invoke(app, args + ["--congestion", cc])
        assert res.exit_code == 0, res.output
        docs[cc] = json.loads(res.output)
        direct = run_bulk(BulkConfig(personality="linux", link="fastethernet", bytes=600_000, seed=3, congestion=cc),
                          impairments={"loss": 0.02})
        assert docs[cc]["duration_s"] == round(direct.duration_s, 6)
    assert docs["reno"]["duration_s"] != docs["cubic"]["duration_s"]
    res = runner.invoke(app, ["simulate", "bulk", "--personality", "bsd44", "--congestion", "cubic", "--bytes", "1000"])
    assert res.exit_code == ExitCode.USAGE
    assert "not available on bsd44" in res.output


def test_reproduce_list_and_verdict_exit_codes():
    listed = runner.invoke(app, ["reproduce", "--list", "--format", "json"])
    names = {r["name"] for r in json.loads(listed.output)["rows"]}
    assert {"moldeklev-table1", "moldeklev-table2", "moldeklev-appendix-a", "salamon"} <= names
    ok = runner.invoke(app, ["reproduce", "moldeklev-appendix-a", "--format", "json"])
    assert ok.exit_code == ExitCode.OK and json.loads(ok.output)["passed"] is True
    unknown = runner.invoke(app, ["reproduce", "no-such-paper"])
    assert unknown.exit_code == ExitCode.USAGE


def test_reproduce_outside_tolerance_exits_verdict_failed(monkeypatch):
    from types import SimpleNamespace

    from stallscope.simulate.reproductions import REPRODUCTIONS, ReproductionResult

    failed = ReproductionResult("fake", "a reproduction that misses", [{"quantity": "x", "ok": False}], False, "0/1")
    monkeypatch.setitem(REPRODUCTIONS, "fake", SimpleNamespace(name="fake", title="t", run=lambda: failed))
    res = runner.invoke(app, ["reproduce", "fake"])
    assert res.exit_code == ExitCode.VERDICT_FAILED
    assert "FAIL: 0/1" in res.output


def test_bulk_path_options_inject_impairments_and_record_them():
    """--pmtu/--pmtu-mode and --mtu-probing reach the simulator: a Linux sender behind a black hole
    gives up without probing and recovers with it; the truth's parameters list the impairments."""
    base = ["simulate", "bulk", "--personality", "linux", "--link", "gige", "--mtu", "9000", "--bytes", "300000",
            "--pmtu", "1500", "--pmtu-mode", "blackhole", "-f", "json"]
    off = json.loads(runner.invoke(app, base).stdout)
    on = json.loads(runner.invoke(app, base + ["--mtu-probing", "1"]).stdout)
    assert not off["completed"] and on["completed"]
    assert set(on["stall_summary"]) == {"pmtu_blackhole"}
    assert on["parameters"]["impairments"] == {"pmtu_mode": "blackhole", "pmtu_mtu": 1500}
    lossy = json.loads(runner.invoke(app, ["simulate", "bulk", "--bytes", "200000", "--drop-nth", "20",
                                           "--loss-data-only", "-f", "json"]).stdout)
    assert lossy["retransmits"] >= 1 and lossy["parameters"]["impairments"]["drop_nth"] == [20]


def test_bulk_half_an_atm_switch_is_a_usage_error():
    res = runner.invoke(app, ["simulate", "bulk", "--atm-switch-buffer", "4096", "--bytes", "1000"])
    assert res.exit_code == ExitCode.USAGE
    assert "--atm-out-rate" in res.stderr


def test_bulk_tap_receiver_writes_the_receivers_capture(tmp_path) -> None:
    args = ["simulate", "bulk", "--personality", "bsd44", "--link", "ethernet10", "--bytes", "65536", "--seed", "3"]
    for tap in ("sender", "receiver"):
        res = runner.invoke(app, args + ["--tap", tap, "--pcap", str(tmp_path / f"{tap}.pcap"), "-f", "json"])
        assert res.exit_code == 0, res.output
    cfg = BulkConfig(personality="bsd44", link="ethernet10", bytes=65536, seed=3, tap="receiver")
    run_bulk(cfg, tmp_path / "api.pcap")
    # The CLI's receiver capture is the API's, and differs from the sender's.
    assert (tmp_path / "receiver.pcap").read_bytes() == (tmp_path / "api.pcap").read_bytes()
    assert (tmp_path / "receiver.pcap").read_bytes() != (tmp_path / "sender.pcap").read_bytes()
    truth = json.loads((tmp_path / "receiver.pcap.truth.json").read_text())
    assert truth["parameters"]["tap"] == "receiver"
    res = runner.invoke(app, args + ["--tap", "middle"])
    assert res.exit_code != 0 and "--tap" in res.output
