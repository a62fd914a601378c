"""RFC 7323 timestamps in the simulator: offered by `linux` and `freebsd4`, used only when both SYNs
carry them; every segment then holds TSval and TSecr and 12 fewer payload bytes. Compared with our
own capture of real Linux (fixtures/clean_bulk.pcap, a 1500-byte path) and read back by tshark
(the peer) from the simulator's pcap."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import dpkt
import pytest
from pcap_tcp import tcp_segments

from stallscope.simulate.run_bulk import RECEIVER_ADDR, SENDER_ADDR, BulkConfig, run_bulk
from stallscope.simulate.segment import SYN

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TS_KIND, SACK_KIND = 8, 5


def _tcp_packets(pcap: Path):
    """(source port, flags, payload length, [(option kind, data)]) for every TCP packet."""
    return [(tcp.sport, tcp.flags, n, dpkt.tcp.parse_opts(tcp.opts)) for _, tcp, n in tcp_segments(pcap)]


def _clean_bulk_like(**kw) -> BulkConfig:
    # The capture's path: 50 Mbit/s, 1 ms each way, MTU 1500 (fixtures/clean_bulk.json).
    base = dict(personality="linux", link="ethernet10", rate_bps=50_000_000, delay_ns=1_000_000, mtu=1500,
                write=65536, read=65536, bytes=2_000_000)
    return BulkConfig(**{**base, **kw})


def test_linux_offers_and_uses_timestamps_as_the_captured_kernel_did(tmp_path):
    """Compared with our capture of real Linux: the SYN's options in the same order (MSS,
    SACK-permitted, timestamp, NOP, window scale), MSS 1460 offered and 1448-byte segments sent,
    NOP NOP timestamp on every data segment."""
    real = _tcp_packets(FIXTURES / "clean_bulk.pcap")
    real_syn = next(p for p in real if p[1] & dpkt.tcp.TH_SYN and not p[1] & dpkt.tcp.TH_ACK)
    real_data = [p for p in real if p[2]]

    pcap = tmp_path / "sim.pcap"
    result = run_bulk(_clean_bulk_like(), pcap)
    assert result.completed
    sim = _tcp_packets(pcap)
    sim_syn = next(p for p in sim if p[1] & dpkt.tcp.TH_SYN and not p[1] & dpkt.tcp.TH_ACK)
    sim_data = [p for p in sim if p[2]]

    assert [k for k, _ in sim_syn[3]] == [k for k, _ in real_syn[3]] == [2, 4, 8, 1, 3]
    mss = lambda syn: next(int.from_bytes(v, "big") for k, v in syn[3] if k == 2)  # noqa: E731
    assert mss(sim_syn) == mss(real_syn) == 1460
    assert max(p[2] for p in sim_data) == max(p[2] for p in real_data) == 1448
    for data in (sim_data, real_data):
        assert all([k for k, _ in p[3]] == [1, 1, TS_KIND] for p in data)
    assert result.ground_truth.summary["maxseg"] == 1448


def test_each_end_echoes_a_timestamp_the_peer_sent_and_its_clock_runs_at_1_ms():
    """RFC 7323 section 4.3: TSecr is a TSval the peer sent (never a later one, never going back),
    and TSval follows the sender's clock (1 ms ticks for linux) without going back."""
    result = run_bulk(_clean_bulk_like())
    sent_tsvals: dict[str, list[int]] = {SENDER_ADDR: [], RECEIVER_ADDR: []}
    last_echo: dict[str, int] = {}
    for now, seg in result.records:
        assert seg.timestamp is not None
        tsval, tsecr = seg.timestamp
        mine, theirs = sent_tsvals[seg.src], sent_tsvals[seg.dst]
        if mine:
            assert tsval >= mine[-1]
        mine.append(tsval)
        if seg.flags & SYN and not seg.ack:
            assert tsecr == 0  # the first SYN has nothing to echo
            continue
        assert tsecr in theirs  # an echo of something the peer sent before
        assert tsecr >= last_echo.get(seg.src, 0)
        last_echo[seg.src] = tsecr
    span_ms = (result.records[-1][0] - result.records[0][0]) // 1_000_000
    s = sent_tsvals[SENDER_ADDR]
    assert abs((s[-1] - s[0]) - span_ms) <= 1


def test_timestamps_only_when_both_ends_offer_them():
    """linux20 predates timestamps: against it linux sends none and keeps the 1460-byte MSS."""
    result = run_bulk(_clean_bulk_like(receiver_personality="linux20"))
    assert result.completed
    assert all(seg.timestamp is None for _, seg in result.records if not seg.flags & SYN or seg.ack)
    assert max(seg.payload_len for _, seg in result.records) == 1460
    assert result.ground_truth.summary["maxseg"] == 1460


def test_forced_mss_is_what_both_offer_and_the_option_comes_out_of_it():
    """RFC 6691: the MSS option does not count TCP options; with timestamps a forced 1000 gives
    988-byte segments (and none bigger than the path)."""
    result = run_bulk(_clean_bulk_like(mss=1000))
    syn = next(seg for _, seg in result.records if seg.flags & SYN)
    assert syn.mss == 1000
    assert max(seg.payload_len for _, seg in result.records) == 988


def test_sack_blocks_beside_a_timestamp_are_at_most_three():
    """RFC 2018 section 3: beside the 12-byte timestamp option three SACK blocks fill the 40 option
    bytes (NOP NOP TS, NOP NOP SACK). Random loss leaves several holes at once (seed 2: three)."""
    result = run_bulk(_clean_bulk_like(bytes=4_000_000, seed=2), impairments={"loss": 0.03})
    with_sack = [seg for _, seg in result.records if seg.sack]
    assert with_sack, "the receiver had holes to report"
    assert max(len(seg.sack) for seg in with_sack) == 3
    assert all(seg.timestamp is not None and seg.options_len == 16 + 8 * len(seg.sack) <= 40 for seg in with_sack)


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark (the peer) is not installed")
def test_tshark_reads_the_timestamps_the_simulator_sent(tmp_path):
    """Peer check: tshark decodes the same TSval and TSecr from every simulated packet."""
    pcap = tmp_path / "sim.pcap"
    result = run_bulk(_clean_bulk_like(bytes=300_000), pcap)
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-T", "fields", "-e", "tcp.options.timestamp.tsval",
         "-e", "tcp.options.timestamp.tsecr"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    assert len(out) == len(result.records)
    assert [tuple(int(x) for x in line.split("\t")) for line in out] == [seg.timestamp for _, seg in result.records]
