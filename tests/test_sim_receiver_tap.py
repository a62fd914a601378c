"""The simulator's capture beside the receiver (BulkConfig.tap = "receiver"): the receiver's ACKs as
they leave it and the data as it arrives, what tcpdump on the receiving host shows. The analyzer's
odd vantage is scored on such captures (`python -m stallscope.analyzers.corpus --tap receiver`)."""

from __future__ import annotations

import json
from pathlib import Path

import dpkt
import pytest

from stallscope.simulate.run_bulk import BulkConfig, run_bulk


def _frames(pcap: Path) -> list[tuple[int, str, int, int, int]]:
    """(ts ns, source, seq, payload length, ack) per frame."""
    return [f[:5] for f in _frames_with_ids(pcap)]


def _frames_with_ids(pcap: Path) -> list[tuple[int, str, int, int, int, int]]:
    """(ts ns, source, seq, payload length, ack, IPv4 id) per frame."""
    out = []
    with open(pcap, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            tcp = ip.data
            src = ".".join(str(b) for b in ip.src)
            out.append((int(ts * 1_000_000_000), src, tcp.seq, len(tcp.data), tcp.ack, ip.id))
    return out


def _run(tmp_path: Path, tap: str, **impair) -> tuple[list, dict]:
    cfg = BulkConfig(personality="bsd44", link="ethernet10", bytes=64 * 1024, write=8192, seed=5, tap=tap)
    pcap = tmp_path / f"{tap}.pcap"
    run_bulk(cfg, pcap, impairments=impair or None)
    return _frames(pcap), json.loads(Path(f"{pcap}.truth.json").read_text())


def test_the_receivers_tap_sees_data_after_the_link_and_acks_as_they_leave(tmp_path: Path) -> None:
    at_sender, truth_s = _run(tmp_path, "sender")
    at_receiver, truth_r = _run(tmp_path, "receiver")
    # The same run: the truth's stalls do not depend on where the capture was taken.
    assert truth_s["stalls"] == truth_r["stalls"]
    assert "tap" not in truth_s["parameters"] and truth_r["parameters"]["tap"] == "receiver"
    sent = {(seq, n): ts for ts, src, seq, n, _ in at_sender if src == "10.0.0.1" and n}
    arrived = {(seq, n): ts for ts, src, seq, n, _ in at_receiver if src == "10.0.0.1" and n}
    assert sent.keys() == arrived.keys()
    # Each data segment reaches the receiver at least its serialization at 10 Mbit/s after it left.
    assert all(arrived[k] - sent[k] >= k[1] * 8 * 100 for k in sent)
    acks_s = {ack: ts for ts, src, _, n, ack in at_sender if src == "10.0.0.2" and not n}
    acks_r = {ack: ts for ts, src, _, n, ack in at_receiver if src == "10.0.0.2" and not n}
    # ...and each ACK reaches the sender after it left the receiver.
    assert acks_s.keys() == acks_r.keys() and all(acks_s[a] > acks_r[a] for a in acks_s)


def test_a_segment_lost_on_the_path_is_missing_only_at_the_receivers_tap(tmp_path: Path) -> None:
    at_sender, _ = _run(tmp_path, "sender", drop_nth=[20])
    at_receiver, _ = _run(tmp_path, "receiver", drop_nth=[20])
    data_s = [(seq, n) for _, src, seq, n, _ in at_sender if src == "10.0.0.1" and n]
    data_r = [(seq, n) for _, src, seq, n, _ in at_receiver if src == "10.0.0.1" and n]
    assert len(data_s) == len(data_r) + 1  # the lost one and its resend at the sender; the resend only here
    assert len(set(data_s)) == len(data_r) == len(set(data_r))


def test_each_host_numbers_its_packets_so_a_loss_leaves_a_gap_in_its_ids_at_the_receiver(tmp_path: Path) -> None:
    cfg = BulkConfig(personality="bsd44", link="ethernet10", bytes=64 * 1024, write=8192, seed=5)
    ids = {}
    for tap in ("sender", "receiver"):
        pcap = tmp_path / f"ids-{tap}.pcap"
        run_bulk(BulkConfig(**{**cfg.__dict__, "tap": tap}), pcap, impairments={"drop_nth": [20]})
        ids[tap] = {h: [f[5] for f in _frames_with_ids(pcap) if f[1] == h] for h in ("10.0.0.1", "10.0.0.2")}
    for host in ("10.0.0.1", "10.0.0.2"):
        steps = [(b - a) % 65536 for a, b in zip(ids["sender"][host], ids["sender"][host][1:])]
        assert steps == [1] * len(steps), host  # every packet the host sent, one id each
    # The receiver's tap misses the lost segment's id alone; its own ACKs count without a gap.
    rx = ids["receiver"]["10.0.0.1"]
    steps = [(b - a) % 65536 for a, b in zip(rx, rx[1:])]
    assert sorted(steps) == [1] * (len(steps) - 1) + [2]
    assert set(rx) < set(ids["sender"]["10.0.0.1"])
    assert ids["receiver"]["10.0.0.2"] == ids["sender"]["10.0.0.2"]


def test_an_unknown_tap_is_refused() -> None:
    with pytest.raises(ValueError, match="tap"):
        run_bulk(BulkConfig(personality="bsd44", link="ethernet10", bytes=8192, tap="middle"))
