"""The comparison with the reference simulator (issue 13): a trace refitted into a simulator
configuration reproduces itself, a stack that holds what the reference does not is reported as
deviating, and a what-if predicts the change its fix makes. Traces come from the simulator, so the
true configuration is known."""

from __future__ import annotations

import pytest

from stallscope.analyzers.analyze import analyze_one
from stallscope.analyzers.comparison import compare_file
from stallscope.analyzers.comparison.whatif import parse
from stallscope.simulate.run_bulk import BulkConfig, run_bulk


def _trace(tmp_path, name: str, **cfg):
    pcap = tmp_path / f"{name}.pcap"
    run_bulk(BulkConfig(**cfg), pcap)
    return analyze_one(pcap)


def test_a_moldeklev_deadlock_is_fitted_and_reproduced(tmp_path):
    """SunOS 4.1 over ATM with S = 16 KB < R = 32 KB (Moldeklev appendix A): the fit reads S, R,
    the MSS and the stack from the trace, and its run has the trace's goodput and stalls."""
    file = _trace(tmp_path, "moldeklev", personality="sunos41", link="atm140", sndbuf=16384, rcvbuf=32768,
                  bytes=2_000_000)
    ref = compare_file(file, what_if="")[0]
    fit = ref.fit
    assert fit.kind == "bulk"
    assert fit.value("personality") == "sunos41"
    assert (fit.value("sndbuf"), fit.value("rcvbuf"), fit.value("mtu")) == (16384, 32768, 9244)
    assert all(v.source for v in fit.values.values())
    cmp = ref.comparison
    assert cmp.matches, cmp.verdict
    assert abs(cmp.goodput_ratio - 1) <= 0.05
    counts = cmp.to_json()["stall_counts"]["nagle_delayed_ack"]
    assert counts["both"] >= 10 and counts["trace"] == 0


def test_salamons_held_tail_deviates_from_a_modern_reference(tmp_path):
    """A Linux 2.0 sender with TCP_NODELAY whose messages equal the window holds each message's
    tail (Salamon): against a reference configured as modern Linux the trace deviates, and the
    held messages are what only the trace has; against its own stack it matches."""
    file = _trace(tmp_path, "salamon", personality="linux20", receiver_personality="linux20", link="fastethernet",
                  sndbuf=32768, rcvbuf=32768, write=32768, read=32768, bytes=32768 * 60, nagle="OFF", reply=4)
    own = compare_file(file, what_if="")[0]
    assert own.fit.value("personality") == "linux20" and own.fit.value("reply") == 4
    assert own.comparison.matches, own.comparison.verdict
    modern = compare_file(file, what_if="", reference={"personality": "linux", "receiver_personality": "linux"})[0]
    cmp = modern.comparison
    assert not cmp.matches and "suspected defect" in cmp.verdict
    assert len(cmp.slow_messages) >= 0.9 * cmp.messages_compared
    assert all(m["extra_ns"] >= 2_000_000 for m in cmp.slow_messages)
    assert cmp.goodput_ratio > 2


def test_nodelay_what_if_removes_the_nagle_stalls(tmp_path):
    """A BSD sender whose short segments wait for the receiver's 200 ms delayed ACK: the what-ifs
    the cause suggests include TCP_NODELAY, predicted faster and without those stalls."""
    file = _trace(tmp_path, "nagle", personality="sunos41", link="atm140", sndbuf=16384, rcvbuf=32768,
                  bytes=2_000_000)
    ref = compare_file(file, jobs=1)[0]
    names = [p.name for p in ref.what_ifs]
    assert "nodelay" in names and "sndbuf_3mss" in names
    nodelay = next(p for p in ref.what_ifs if p.name == "nodelay")
    assert nodelay.gain is not None and nodelay.gain > 1
    best = ref.what_ifs[0]
    assert best.gain >= nodelay.gain and "nagle_delayed_ack" not in best.time_lost_ns


def test_what_if_names_and_knobs_are_checked():
    assert [n for n, _ in parse("nodelay,sndbuf=65536")] == ["nodelay", "sndbuf=65536"]
    assert parse("rcvbuf=131072")[0][1] == {"rcvbuf": 131072}
    with pytest.raises(ValueError, match="unknown change 'warp'"):
        parse("warp")
    with pytest.raises(ValueError, match="unknown knob 'colour'"):
        parse("colour=red")
    with pytest.raises(ValueError, match="not a valid value"):
        parse("sndbuf=big")


def test_a_naglemark_trace_is_refitted_as_request_response(tmp_path):
    """Requests from the peer answered by responses: the fit replays the trace's response lengths
    as a naglemark trial."""
    from stallscope.simulate.apps.naglemark_capture import run_naglemark_capture

    lengths = [1000 * i for i in range(1, 21)]
    pcap = tmp_path / "nm.pcap"
    run_naglemark_capture(personality="linux", link="gige", variant="MINSHALL", sockbuf=65536, app_buf=4096,
                          trial="S", lengths=lengths, seed=2, pcap=pcap)
    ref = compare_file(analyze_one(pcap), what_if="")[0]
    assert ref.fit.kind == "request_response"
    assert ref.fit.value("lengths") == lengths
    assert ref.comparison.goodput_model_bps is not None


def test_cli_compare_json_validates_and_bad_options_are_refused(tmp_path):
    """`analyze --compare -f json`: the reference section validates against the analysis schema;
    --what-if without --compare, an unknown change and a bad --reference value exit 2."""
    import json
    import subprocess
    from pathlib import Path

    import jsonschema

    repo = Path(__file__).resolve().parents[1]
    pcap = tmp_path / "t.pcap"
    run_bulk(BulkConfig(personality="linux", link="ethernet10", bytes=300_000), pcap)
    import shutil

    exe = [shutil.which("stallscope")]
    out = subprocess.run([*exe, "analyze", str(pcap), "--compare", "--what-if", "sack,sndbuf=65536", "-f", "json",
                          "--reference-pcap", str(tmp_path / "ref.pcap")], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    schema = json.loads((repo / "docs" / "schemas" / "analysis.schema.json").read_text())
    jsonschema.validate(doc, schema)
    ref = doc["files"][0]["reference"][0]
    assert ref["fit"]["values"]["personality"]["value"] == "linux"
    assert [w["name"] for w in ref["what_ifs"]] and (tmp_path / "ref.pcap").stat().st_size > 0
    for args, needle in ((["--what-if", "all"], "needs --compare"), (["--compare", "--what-if", "warp"], "warp"),
                         (["--compare", "--reference", "sndbuf=big"], "not a valid value")):
        bad = subprocess.run([*exe, "analyze", str(pcap), *args], capture_output=True, text=True, cwd=tmp_path)
        assert bad.returncode == 2 and needle in bad.stderr, (args, bad.stderr)


def test_sack_what_if_on_burst_loss_predicts_the_sack_capture():
    """Issue 13's real pair: fixtures/burst_loss (SACK off, three burst losses ending in timeouts)
    with SACK on predicts fixtures/burst_loss_sack (the same path, SACK on): no timeout, goodput
    within 30 %."""
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    ref = compare_file(analyze_one(fixtures / "burst_loss.pcap"), what_if="sack", jobs=1)[0]
    assert ref.comparison.matches, ref.comparison.verdict
    (sack,) = ref.what_ifs
    assert not any("timeout" in c for c in sack.time_lost_ns)
    real = analyze_one(fixtures / "burst_loss_sack.pcap").connections[0].data_direction
    assert real.profile["timeouts"] == 0
    assert abs(sack.goodput_bps / real.goodput_bps - 1) <= 0.30


def test_reference_capture_from_columns_is_write_pcaps_bytes(tmp_path):
    """The reference run's capture is written from the simulator's columns (fastpcap) instead of
    frame by frame with dpkt: the same bytes as write_pcap, SYN options, timestamps and SACK blocks
    included (a lossy Linux run with SACK; a SunOS run without options)."""
    from stallscope.analyzers.comparison.fastpcap import write_columns_pcap
    from stallscope.simulate.pcap_writer import write_pcap

    runs = [(BulkConfig(personality="linux", link="fastethernet", sack=True, bytes=400_000), {"loss": 0.03}),
            (BulkConfig(personality="sunos41", link="atm140", sndbuf=16384, rcvbuf=32768, bytes=200_000), None),
            (BulkConfig(personality="freebsd4", link="ethernet10", bytes=150_000, write=3000), {"loss": 0.02})]
    for i, (cfg, im) in enumerate(runs):
        res = run_bulk(cfg, impairments=im)
        cols = res.records._trace.columns()
        if i == 0:
            assert any(cols["sack"]), "the case meant to carry SACK blocks has none"
        # (Each host's TTL, as a SunOS sender of a Linux receiver would send them.)
        ttls = (60, 64) if i == 1 else (64, 64)
        write_columns_pcap(tmp_path / "fast.pcap", cols, ttls)
        write_pcap(tmp_path / "dpkt.pcap", res.records, ttls={"10.0.0.1": ttls[0], "10.0.0.2": ttls[1]})
        assert (tmp_path / "fast.pcap").read_bytes() == (tmp_path / "dpkt.pcap").read_bytes(), cfg


def test_a_long_transfer_is_calibrated_on_its_first_bytes(tmp_path, monkeypatch):
    """A transfer longer than twice CALIBRATION_BYTES is calibrated on its first bytes: every
    candidate run replays that prefix (and only its losses), the choice says so, and the fitted
    run still reproduces the whole trace."""
    from stallscope.analyzers.comparison import calibrate
    from stallscope.analyzers.comparison.calibrate import ranges, target

    monkeypatch.setattr(target, "CALIBRATION_BYTES", 200_000)
    seen = []
    real = target.candidate_score

    def spy(fit, changes, target):
        seen.append((fit.value("bytes"), (fit.value("impairments") or {}).get("drop_segments", ())))
        return real(fit, changes, target)

    # (the search's runs and the ranges' after it)
    monkeypatch.setattr(calibrate, "candidate_score", spy)
    monkeypatch.setattr(ranges, "candidate_score", spy)
    pcap = tmp_path / "long.pcap"
    run_bulk(BulkConfig(personality="freebsd4", link="ethernet10", bytes=1_000_000), pcap, impairments={"loss": 0.01})
    ref = compare_file(analyze_one(pcap), what_if="")[0]
    write = ref.fit.value("write")
    cut = -(-200_000 // write) * write  # whole writes
    assert seen and all(b == cut for b, _ in seen)
    drops = ref.fit.value("impairments")["drop_segments"]
    assert any(off >= cut for off, _ in drops) and any(off < cut for off, _ in drops)
    assert all(off < cut for _, d in seen for off, _ in d)
    assert ref.fit.value("bytes") >= 1_000_000  # the reference replays the whole transfer
    assert f"over the first {cut} bytes" in ref.fit.values["link"].source
    assert abs(ref.comparison.goodput_ratio - 1) <= 0.05, ref.comparison.verdict


def test_moldeklev_appendix_a_fits_the_host_and_predicts_the_fixes(tmp_path):
    """Moldeklev appendix A simulated with the Sun IPX host: the fit finds the host model (its
    costs bound the link) and the deadlock's mechanism, so S >= R and TCP_NODELAY predict the
    normal band of table 1 (21.2 and 19.3 Mbit/s) within 15 %, not the trace's 0.37 Mbit/s."""
    file = _trace(tmp_path, "moldeklev_a", personality="sunos41", link="atm140", sndbuf=16384, rcvbuf=32768,
                  write=8192, read=8192, cost="sun_ipx", bytes=2_000_000)
    ref = compare_file(file, what_if="s_ge_r,nodelay", jobs=1)[0]
    assert ref.fit.value("cost") == "sun_ipx" and ref.fit.value("personality") == "sunos41"
    assert ref.comparison.matches, ref.comparison.verdict
    assert set(ref.comparison.time_lost_model) == {"nagle_delayed_ack"}
    got = {p.name: p.goodput_bps / 1e6 for p in ref.what_ifs}
    assert abs(got["s_ge_r"] / 21.2 - 1) <= 0.15 and abs(got["nodelay"] / 19.3 - 1) <= 0.15, got


def test_a_pausing_writer_and_a_slow_reader_are_fitted(tmp_path):
    """The applications' pace: a writer that sleeps between writes (its idle stalls give the pause
    and the write) and a reader slower than the path (the window's right edge gives its pace) are
    replayed, so the refitted runs keep the traces' goodput."""
    from stallscope.simulate.slow_reader import reader_cost

    idle = compare_file(_trace(tmp_path, "idle", personality="freebsd4", link="ethernet10", write=16384,
                               think_ns=30_000_000, bytes=262_144), what_if="")[0]
    assert idle.fit.value("write") == 16384
    assert 20_000_000 <= idle.fit.value("think_ns") <= 36_000_000
    assert "idle periods" in idle.fit.values["think_ns"].source
    assert abs(idle.comparison.goodput_ratio - 1) <= 0.05, idle.comparison.verdict
    slow = compare_file(_trace(tmp_path, "slow", personality="linux", link="ethernet10", read=2048, rcvbuf=8192,
                               cost=reader_cost("free", 1_000_000), bytes=262_144), what_if="")[0]
    assert abs(slow.fit.value("read_rate_bps") / 1_000_000 - 1) <= 0.10
    assert "right edge" in slow.fit.values["read_rate_bps"].source
    assert abs(slow.comparison.goodput_ratio - 1) <= 0.05, slow.comparison.verdict


def test_how_the_window_opened_tells_the_old_stacks_apart(tmp_path):
    """Without RFC 1323/2018 options, slow start (one MSS before the first ACK while the window
    held more) leaves 4.4BSD and Tru64, a full first flight SunOS 4.1 and Linux 2.0."""
    from stallscope.analyzers.comparison.fit import fit_connection
    import polars as pl

    for personality, slow_start in (("bsd44", True), ("tru64", True), ("linux20", False)):
        file = _trace(tmp_path, personality, personality=personality, link="ethernet10", bytes=100_000)
        conn = file.connections[0]
        fit = fit_connection(conn, file.state.filter(pl.col("stream") == conn.stream))
        assert fit.value("slow_start") is slow_start, (personality, fit.values.get("slow_start"))
        assert fit.value("personality") in (("bsd44", "tru64") if slow_start else ("sunos41", "linux20"))


def test_the_send_buffer_asked_for_is_the_one_that_settles_on_the_plateau():
    """Linux doubles SO_SNDBUF and 4.4BSD/FreeBSD round it up to whole segments, so the value
    fitted is the one the stack turns into the measured plateau."""
    from stallscope.analyzers.comparison.fit.buffers import sndbuf_request

    assert sndbuf_request(16384, "linux", 1448)[0] == 8192
    assert sndbuf_request(33304, "freebsd4", 1448)[0] == 32768  # 23 segments of 1448
    assert sndbuf_request(8760, "bsd44", 1460)[0] == 8192  # 6 of 1460
    assert sndbuf_request(20000, "sunos41", 1460)[0] == 20480
    assert sndbuf_request(16384, "tru64", 1460)[0] == 16384


def test_a_flight_held_by_the_window_leaves_the_default_send_buffer(tmp_path):
    """When the flight reached the peer's window, it is only a floor of S: the fit takes the stack's
    default buffer (Linux 64 KB, which it doubles), and says why."""
    from stallscope.analyzers.comparison.fit import fit_connection
    import polars as pl

    file = _trace(tmp_path, "window", personality="freebsd4", link="ethernet10", rcvbuf=16384, bytes=300_000)
    conn = file.connections[0]
    fit = fit_connection(conn, file.state.filter(pl.col("stream") == conn.stream))
    assert fit.value("sndbuf") == 32768, fit.values["sndbuf"]
    assert "reached the peer's window" in fit.values["sndbuf"].source


def test_a_trace_no_run_comes_near_is_compared_without_a_crash():
    """Four packets, a timestamp 28 years after the one before it (Arkime's y2038 BGP capture): every
    candidate run of a calibration group is infinitely far (no goodput); the group changes nothing
    and the comparison says the fit is poor (it raised ValueError from the stack group's choice)."""
    from pathlib import Path

    data = Path(__file__).resolve().parent / "data" / "bgp_few_packets_y2038.pcap"
    (ref,) = compare_file(analyze_one(data), what_if="", jobs=1)
    assert ref.poor_fit
    assert ref.fit.value("personality") is not None


def test_a_capture_that_opens_on_a_zero_window_is_fitted():
    """Practical Packet Analysis' tcp_zerowindowdead: the capture begins with the peer's window at
    zero and no send-buffer plateau, so nothing tells how much room the first flight had (the fit
    once took min() of nothing there). The window-limited stall is the trace's alone."""
    from pathlib import Path

    data = Path(__file__).resolve().parent / "data" / "ppa_tcp_zerowindowdead.pcapng"
    (ref,) = compare_file(analyze_one(data), what_if="", jobs=1)
    assert "slow_start" not in ref.fit.values
    assert "receiver_window_limited" in ref.comparison.to_json()["verdict"]
