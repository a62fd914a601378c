"""The connection model end to end (native reader -> dissector -> tracker -> table) on captures
built here with dpkt, where every expected value follows from how the capture was built."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import dpkt
import polars as pl
import pytest

from stallscope.analyzers.connection_schema import table_schema
from stallscope.analyzers.connections import connections
from stallscope.packets.decoder import read_packets
from shared_material import PUBLIC

CLIENT, SERVER = ("10.1.0.1", 40000), ("10.1.0.2", 80)
SYN, ACK, FIN, PSH = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_FIN, dpkt.tcp.TH_PUSH
MS = 1_000_000


def _v4(text: str) -> bytes:
    return bytes(map(int, text.split(".")))


def _frame(src, dst, flags, seq, ack, payload=b"", opts=b"", win=65535) -> bytes:
    tcp = dpkt.tcp.TCP(sport=src[1], dport=dst[1], seq=seq, ack=ack, flags=flags, win=win, opts=opts, data=payload)
    tcp.off = (20 + len(opts)) // 4
    ip = dpkt.ip.IP(src=_v4(src[0]), dst=_v4(dst[0]), p=dpkt.ip.IP_PROTO_TCP, data=tcp, ttl=64)
    ip.len = 20 + len(bytes(tcp))
    eth = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    return bytes(eth)


def _write(path: Path, packets: list[tuple[int, bytes]]) -> Path:
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, nano=True)
        for ts_ns, frame in packets:
            w.writepkt(frame, ts=ts_ns / 1e9)
    return path


def _c2s(flags, seq, ack, payload=b"", **kw):
    return _frame(CLIENT, SERVER, flags, seq, ack, payload, **kw)


def _s2c(flags, seq, ack, payload=b"", **kw):
    return _frame(SERVER, CLIENT, flags, seq, ack, payload, **kw)


WS = lambda shift: b"\x01\x03\x03" + bytes([shift])  # noqa: E731  NOP + window scale


def _transfer(isn_c: int, isn_s: int, segments: int, size: int, t0: int = 0, lose: int | None = None):
    """Handshake, the server sends `segments` x `size` bytes (each acked 10 ms later), FIN/ACK.
    With `lose`, that segment is sent again right after the next one (a retransmission)."""
    m = 1 << 32
    out = [
        (t0, _c2s(SYN, isn_c, 0, opts=WS(7))),
        (t0 + 20 * MS, _s2c(SYN | ACK, isn_s, (isn_c + 1) % m, opts=WS(2))),
        (t0 + 40 * MS, _c2s(ACK, (isn_c + 1) % m, (isn_s + 1) % m)),
    ]
    t = t0 + 50 * MS
    for i in range(segments):
        seq = (isn_s + 1 + i * size) % m
        out.append((t, _s2c(ACK | PSH, seq, (isn_c + 1) % m, b"x" * size)))
        if lose is not None and i == lose + 1:
            out.append((t + MS, _s2c(ACK | PSH, (isn_s + 1 + lose * size) % m, (isn_c + 1) % m, b"x" * size)))
        out.append((t + 10 * MS, _c2s(ACK, (isn_c + 1) % m, (isn_s + 1 + (i + 1) * size) % m, win=100)))
        t += 20 * MS
    end = (isn_s + 1 + segments * size) % m
    out.append((t, _s2c(FIN | ACK, end, (isn_c + 1) % m)))
    out.append((t + 10 * MS, _c2s(FIN | ACK, (isn_c + 1) % m, (end + 1) % m)))
    return out


def test_sequence_wrap_counts_every_byte_once(tmp_path: Path) -> None:
    """ISN 2^32 - 5000 with 40 x 1000 bytes crosses the wrap; nothing may look retransmitted."""
    path = _write(tmp_path / "wrap.pcap", _transfer(123, (1 << 32) - 5000, 40, 1000))
    table, summary = connections(path)
    assert table.height == 1 and summary.error is None
    r = table.row(0, named=True)
    assert (r["resp_unique_bytes"], r["resp_retrans_packets"], r["resp_payload_bytes"]) == (40_000, 0, 40_000)
    assert r["resp_max_in_flight"] == 1000  # each segment is acked before the next
    packets, _ = read_packets(path, columns=["dir", "seq_rel", "payload_len"])
    data = packets.filter((pl.col("dir") == 1) & (pl.col("payload_len") > 0))
    assert data["seq_rel"].to_list() == [1 + i * 1000 for i in range(40)]


def test_rtt_idle_handshake_and_window_follow_the_timeline(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.pcap", _transfer(1000, 5000, 5, 500))
    r = connections(path)[0].row(0, named=True)
    assert r["start_captured"] and r["wscale_known"]
    assert r["handshake_rtt_ns"] == 40 * MS  # SYN at 0, handshake ACK at 40 ms
    # 5 data segments and the FIN, each acked 10 ms later, and the SYN/ACK (20 ms -> 40 ms).
    assert (r["resp_rtt_samples"], r["resp_rtt_min_ns"], r["resp_rtt_median_ns"]) == (7, 10 * MS, 10 * MS)
    assert (r["orig_rtt_samples"], r["orig_rtt_min_ns"]) == (1, 20 * MS)  # SYN -> SYN/ACK
    assert r["max_idle_ns"] == 20 * MS  # the handshake's gaps; data and ACKs alternate every 10 ms
    # The client's pure ACKs advertise 100 << 7 once both SYNs carried window scale.
    assert r["orig_min_window"] == 100 << 7
    assert (r["orig_wscale"], r["resp_wscale"]) == (7, 2)
    assert (r["orig_fin"], r["resp_fin"], r["orig_syn"], r["resp_syn"]) == (1, 1, 1, 1)


def test_retransmission_is_counted_and_gives_no_rtt_sample(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.pcap", _transfer(1, 2, 6, 700, lose=2))
    r = connections(path)[0].row(0, named=True)
    assert (r["resp_retrans_packets"], r["resp_retrans_bytes"]) == (1, 700)
    assert r["resp_payload_bytes"] == r["resp_unique_bytes"] + r["resp_retrans_bytes"] == 7 * 700
    # Segment 2 is resent after its ACK (a spurious resend) while segment 3 is outstanding, so
    # segment 3's ACK is ambiguous and gives no sample (Karn): 6 segments + SYN/ACK + FIN, 7 samples.
    assert r["resp_rtt_samples"] == 7


def test_port_reuse_after_fin_is_a_new_stream(tmp_path: Path) -> None:
    first = _transfer(1000, 9000, 2, 100)
    second = _transfer(777_777, 31337, 3, 100, t0=10_000 * MS)
    path = _write(tmp_path / "reuse.pcap", first + second)
    table, _ = connections(path)
    assert table["stream"].to_list() == [0, 1]
    assert table["port_reused"].to_list() == [True, False]
    assert table["resp_unique_bytes"].to_list() == [200, 300]
    assert table["packets"].to_list() == [len(first), len(second)]


@pytest.mark.peer
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_port_reuse_and_wrap_streams_agree_with_tshark(tmp_path: Path) -> None:
    """tshark's tcp.stream and tcp.seq on the reuse + wrap capture equal our stream and seq_rel."""
    path = _write(tmp_path / "both.pcap", _transfer(1, (1 << 32) - 300, 4, 100) + _transfer(5, 77, 2, 100, t0=9 * 10**9))
    out = subprocess.run(
        ["tshark", "-n", "-r", str(path), "-T", "fields", "-e", "tcp.stream", "-e", "tcp.seq"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    theirs = [(int(a), int(b)) for a, b in zip(out[::2], out[1::2])]
    packets, _ = read_packets(path, columns=["stream", "seq_rel"])
    assert list(packets.iter_rows()) == theirs


def test_missing_handshake_marks_the_first_sender_initiator(tmp_path: Path) -> None:
    pkts = _transfer(50, 60, 3, 100)[3:]  # no SYN, no SYN/ACK: the server's data comes first
    r = connections(_write(tmp_path / "mid.pcap", pkts))[0].row(0, named=True)
    assert (r["orig_addr"], r["orig_port"]) == SERVER
    assert not r["start_captured"] and not r["wscale_known"]
    assert r["handshake_rtt_ns"] is None
    assert r["orig_unique_bytes"] == 300
    assert r["resp_min_window"] == 100  # raw, scale unknown




@pytest.mark.skipif(not PUBLIC.is_dir(), reason="no public fixtures")
def test_table_invariants_on_public_fixtures() -> None:
    """Schema as documented; every TCP packet in exactly one connection; payload split exactly."""
    from stallscope.packets.errors import CaptureRejected

    checked = 0
    for path in sorted(PUBLIC.glob("*/*.pcap*")):
        try:
            table, summary = connections(path)
        except CaptureRejected:
            continue
        checked += 1
        assert dict(table.schema) == table_schema()
        assert table["packets"].sum() == summary.tcp_packets or table.height == 0
        assert table["stream"].to_list() == list(range(table.height))
        for side in ("orig", "resp"):
            assert (table[f"{side}_payload_bytes"] == table[f"{side}_unique_bytes"] + table[f"{side}_retrans_bytes"]).all()
            assert (table[f"{side}_effective_mss"] <= table[f"{side}_largest_segment"]).all()
        assert (table["orig_packets"] + table["resp_packets"] == table["packets"]).all()
        assert summary.records == summary.tcp_packets + sum(summary.not_tcp.values()) + sum(summary.not_decoded.values())
    assert checked > 10


STREAM_CASES = {
    "new ISN before any answer": [(0, _c2s(SYN, 1000, 0)), (MS, _c2s(SYN, 5000, 0)), (2 * MS, _s2c(SYN | ACK, 77, 5001))],
    "SYN far outside, no FIN": [
        (0, _c2s(SYN, 1000, 0)), (MS, _s2c(SYN | ACK, 77, 1001)), (2 * MS, _c2s(ACK, 1001, 78)),
        (3 * MS, _c2s(SYN, 1000 + (3 << 30), 0)),
    ],
    "responder reconnects after FIN": [
        (0, _c2s(SYN, 1000, 0)), (MS, _s2c(SYN | ACK, 77, 1001)), (2 * MS, _c2s(FIN | ACK, 1001, 78)),
        (3 * MS, _s2c(FIN | ACK, 78, 1002)), (4 * MS, _s2c(SYN, 9999, 0)),
    ],
    "SYN/ACK first": [(0, _s2c(SYN | ACK, 77, 1001)), (MS, _c2s(ACK, 1001, 78))],
}


@pytest.mark.peer
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
@pytest.mark.parametrize("case", sorted(STREAM_CASES))
def test_stream_split_agrees_with_tshark(tmp_path: Path, case: str) -> None:
    """tcp.stream, tcp.seq and tcp.ack from tshark equal our stream, seq_rel, ack_rel."""
    path = _write(tmp_path / "c.pcap", STREAM_CASES[case])
    out = subprocess.run(
        ["tshark", "-n", "-r", str(path), "-T", "fields", "-e", "tcp.stream", "-e", "tcp.seq", "-e", "tcp.ack"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    theirs = [tuple(int(x) for x in out[i : i + 3]) for i in range(0, len(out), 3)]
    packets, _ = read_packets(path, columns=["stream", "seq_rel", "ack_rel"])
    assert list(packets.iter_rows()) == theirs
