"""The capture observer (what the scenario tests judge by) on a hand-built pcap: MSS options,
segment sizes under a 128-byte snaplen, retransmissions vs timeouts and back-off, zero windows,
ICMP fragmentation-needed, data gaps."""

from __future__ import annotations

import dpkt

from stallscope.capture.observe import observe

S, R = bytes([10, 77, 0, 1]), bytes([10, 77, 0, 2])
MS = 1_000_000


def _frame(src, dst, *, seq=0, flags=dpkt.tcp.TH_ACK, payload=0, win=1000, opts=b"") -> bytes:
    tcp = dpkt.tcp.TCP(sport=5001 if src == S else 40000, dport=40000 if src == S else 5001, seq=seq,
                       flags=flags, win=win, opts=opts, data=b"z" * payload)
    tcp.off = (20 + len(opts)) // 4
    ip = dpkt.ip.IP(src=src, dst=dst, p=6, data=tcp)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))


def _icmp_frag_needed() -> bytes:
    icmp = dpkt.icmp.ICMP(type=3, code=4, data=dpkt.icmp.ICMP.Unreach(mtu=1500, data=b"\x45" + b"\x00" * 27))
    ip = dpkt.ip.IP(src=bytes([10, 77, 0, 254]), dst=S, p=1, data=icmp)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(type=0x0800, data=ip))


def test_observer_counts_what_the_capture_shows(tmp_path):
    mss = lambda v: b"\x02\x04" + v.to_bytes(2, "big")  # noqa: E731
    t0 = 1_700_000_000 * 10**9
    packets = [
        (0, _frame(R, S, flags=dpkt.tcp.TH_SYN, opts=mss(8960))),
        (1 * MS, _frame(S, R, flags=dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, opts=mss(1460))),
        (2 * MS, _frame(S, R, seq=1, payload=1448)),
        (3 * MS, _frame(S, R, seq=1449, payload=1448)),
        (4 * MS, _frame(R, S, win=0)),  # zero window
        (5 * MS, _icmp_frag_needed()),
        (45 * MS, _frame(S, R, seq=2897, payload=500)),  # a 42 ms gap, new data
        (300 * MS, _frame(S, R, seq=2897, payload=500)),  # RTO retransmission
        (800 * MS, _frame(S, R, seq=2897, payload=500)),  # backed off
        (801 * MS, _frame(S, R, seq=1449, payload=1448)),  # fast retransmit, no timeout
    ]
    path = tmp_path / "t.pcap"
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, snaplen=128, nano=True)
        for dt, buf in packets:
            w.writepkt(buf[:128], ts=(t0 + dt) / 1e9)
    obs = observe(path, "10.77.0.1", "10.77.0.2")
    assert obs.packets == len(packets)
    assert obs.syn_mss == {"receiver": 8960, "sender": 1460}
    # Lengths come from the IP header, not the 128 captured bytes.
    assert obs.payload_sizes == {1448: 3, 500: 3} and obs.max_payload == 1448
    assert obs.retransmissions == 3 and obs.timeouts == 2 and obs.max_backoff == 2
    assert obs.zero_windows == 1 and obs.icmp_frag_needed == 1
    assert [round(g / MS) for g in obs.data_gaps_ns] == [42, 255, 500]
