"""The user-space link emulator holds each frame for the link's delay from when it arrived, not from
when the emulator got round to reading it: the same frame, matched between the sender's and the
receiver's tap (one clock), crossed the link in its configured one-way delay. (Before the emulator
read its sockets during sub-millisecond waits, half the frames right behind another came ~1 ms late.)
Matched with dpkt, independently of the project's decoder."""

from __future__ import annotations

from pathlib import Path

import dpkt
import pytest

from stallscope.capture.scenarios.library import SCENARIOS
from stallscope.capture.scenarios.runner import run_scenario

pytestmark = [pytest.mark.root]


def _first_seen(pcap: Path) -> dict[tuple, int]:
    """When each TCP packet (source, ports, sequence, ACK, IP length and id) was first seen, ns."""
    out: dict[tuple, int] = {}
    with pcap.open("rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
                t = ip.data
                out.setdefault((ip.src, t.sport, t.dport, t.seq, t.ack, ip.len, ip.id), int(round(float(ts) * 1e9)))
    return out


def test_every_frame_crosses_the_link_in_its_configured_delay(tmp_path: Path) -> None:
    scn = SCENARIOS["nagle_4k_jumbo_nodelay"]  # no rate limit, no queue: the delay alone
    delay = scn.link.forward.delay_ns
    assert delay == scn.link.reverse.delay_ns == 1_000_000
    run_scenario(scn, tmp_path, seconds=0.3)
    at_sender, at_receiver = (_first_seen(tmp_path / f"{scn.name}{tail}.pcap") for tail in ("", ".receiver"))
    one_way = sorted(abs(at_receiver[k] - at_sender[k]) for k in at_sender.keys() & at_receiver.keys())
    assert len(one_way) >= 200
    late = [d for d in one_way if d > delay + 300_000]
    # A loaded machine may still delay a few (the emulator and both stacks share two cores).
    assert len(late) <= 0.05 * len(one_way), (len(late), len(one_way), one_way[len(one_way) // 2])
    assert one_way[len(one_way) // 2] < delay + 100_000
