"""Path MTU, the MSS mismatch and giving up, each as a full simulated bulk run checked against its
ground truth: an ICMP "fragmentation needed" lowers the sender's MSS at once, a black hole ends in
back-offs and a RST, an advertised MSS the path cannot carry ends the same way."""

from __future__ import annotations

import pytest

from stallscope.vocabulary import Cause
from stallscope.simulate.run_bulk import SENDER_ADDR, BulkConfig, run_bulk
from stallscope.simulate.segment import RST, SYN

HOP_MTU = 1500
# Retransmissions before giving up: BSD's TCP_MAXRXTSHIFT, Linux's net.ipv4.tcp_retries2.
MAX_RETRANSMITS = {"bsd44": 12, "linux": 15}

# tcp_mtu_probe's binary search (net/ipv4/tcp_output.c; RFC 4821), in MTUs that count the IP and
# TCP headers: search_high starts at the SYN's MSS + 40 (mss_clamp with the bare headers),
# search_low at tcp_base_mss plus the connection's headers (52 with timestamps); a probe is the
# midpoint, an acknowledged one raises search_low to its MTU, a lost one lowers search_high below
# it; the search ends when the interval is under net.ipv4.tcp_probe_threshold.
PROBE_THRESHOLD = 8
BASE_MSS = 1024  # net.ipv4.tcp_base_mss


def _kernel_probe_sizes(mss_clamp: int, headers: int, works) -> list[int]:
    """The probes' payload sizes tcp_mtu_probe sends, in order, when an MTU `works(mtu)` or not."""
    low, high, sizes = BASE_MSS + headers, mss_clamp + 40, []
    while True:
        size = (high + low) // 2 - headers
        if size > high - headers or high - low < PROBE_THRESHOLD:
            return sizes
        sizes.append(size)
        if works(size + headers):
            low = size + headers
        else:
            high = size + headers - 1


def _linux_jumbo(**kw) -> BulkConfig:
    return BulkConfig(personality="linux", link="gige", mtu=9000, sndbuf=1 << 20, rcvbuf=1 << 20,
                      write=65536, read=65536, bytes=4 << 20, **kw)


def _sent(result):
    return [(t, s) for t, s in result.records if s.src == SENDER_ADDR]


def test_icmp_frag_needed_lowers_mss_without_timeout():
    result = run_bulk(_linux_jumbo(), impairments={"pmtu_mtu": HOP_MTU, "pmtu_mode": "icmp"})
    assert result.completed and not result.aborted
    assert result.timeouts == 0
    # The hop's MTU less the IP and TCP headers and the 12-byte timestamp option (linux uses it).
    assert result.ground_truth.summary["maxseg"] == HOP_MTU - 52
    assert result.ground_truth.summary["icmp_mss_changes"] == 1
    assert result.ground_truth.drops.get("pmtu_frag_needed", 0) >= 1
    assert not any(s.cause in (Cause.PMTU_BLACKHOLE, Cause.SINGLE_LOSS_TIMEOUT, Cause.BURST_LOSS_TIMEOUT)
                   for s in result.stalls)
    data = [(t, s) for t, s in _sent(result) if s.payload_len]
    big = [t for t, s in data if s.ip_len > HOP_MTU]
    assert big, "the first flight goes out at the interface MSS"
    # Everything after the last oversize segment fits the hop: the ICMP took effect once.
    assert all(s.ip_len <= HOP_MTU for t, s in data if t > max(big))
    assert result.bytes == 4 << 20


def test_blackhole_ends_in_timeouts_abort_and_pmtu_blackhole_stall():
    result = run_bulk(_linux_jumbo(), impairments={"pmtu_mtu": HOP_MTU, "pmtu_mode": "blackhole"})
    limit = MAX_RETRANSMITS["linux"]
    assert not result.completed and result.aborted
    assert result.timeouts == limit + 1  # the last timer gives up instead of retransmitting
    assert result.ground_truth.summary["icmp_mss_changes"] == 0
    assert result.ground_truth.drops["pmtu_blackhole"] >= limit
    last = result.stalls[-1]
    assert last.cause is Cause.PMTU_BLACKHOLE
    assert last.end_ns == result.aborted_at_ns
    assert last.evidence["trigger"] == "abort"
    assert all(s.cause is Cause.PMTU_BLACKHOLE for s in result.stalls)
    t_rst, rst = _sent(result)[-1]
    assert rst.flags & RST and t_rst == result.aborted_at_ns


@pytest.mark.parametrize("personality", ["bsd44", "linux"])
def test_give_up_after_the_personality_maximum(personality):
    """BSD drops after TCP_MAXRXTSHIFT = 12 retransmissions, Linux after tcp_retries2 = 15."""
    cfg = BulkConfig(personality=personality, link="ethernet10", mtu=4352, sndbuf=32768, rcvbuf=32768,
                     bytes=1 << 20)
    result = run_bulk(cfg, impairments={"pmtu_mtu": HOP_MTU, "pmtu_mode": "blackhole"})
    want = MAX_RETRANSMITS[personality]
    assert result.aborted and result.retransmits == want
    assert result.to_json()["aborted"] is True
    rsts = [s for _, s in _sent(result) if s.flags & RST]
    assert len(rsts) == 1
    # The stall runs from the last new data to the abort, named from the drop log.
    assert result.stalls[-1].end_ns == result.aborted_at_ns
    assert result.stalls[-1].cause is Cause.PMTU_BLACKHOLE
    assert result.stalls[-1].duration_ns > 60 * 10**9  # the back-off ladder, not one RTO


def test_interface_mtu_larger_than_the_link_is_a_first_hop_black_hole():
    """Both hosts advertise 4430 from a 4470-byte interface; the path carries 1500 bytes and no
    hop says so: the sender's 4096-byte segments die until it gives up. The truth names a black
    hole at the first hop (`interface_mtu`), not `mss_mismatch`: that is GigaTCP's MSS offered and
    never used, which costs no stall (the next test)."""
    cfg = BulkConfig(personality="freebsd4", link="gige", mtu=HOP_MTU, host_mtu=4470, sndbuf=1 << 20,
                     rcvbuf=1 << 20, write=65536, read=65536, bytes=4 << 20)
    result = run_bulk(cfg)
    syn = next(s for _, s in _sent(result) if s.flags & SYN)
    assert syn.mss == 4430
    assert result.ground_truth.summary["maxseg"] == 4096
    assert result.aborted and not result.completed
    assert result.stalls and all(s.cause is Cause.PMTU_BLACKHOLE for s in result.stalls)
    assert all(s.detail == "interface_mtu" for s in result.stalls)
    assert result.stalls[-1].end_ns == result.aborted_at_ns


def test_cloned_route_mss_differs_from_advertised_but_costs_no_stall():
    """GigaTCP's FreeBSD bug: the SYN offers 4430 while a cloned route's 1500 bytes size the data."""
    cfg = BulkConfig(personality="freebsd4", link="gige", mtu=HOP_MTU, host_mtu=4470, route_mtu=1500,
                     sndbuf=1 << 20, rcvbuf=1 << 20, write=65536, read=65536, bytes=4 << 20)
    result = run_bulk(cfg)
    syn = next(s for _, s in _sent(result) if s.flags & SYN)
    assert syn.mss == 4430
    assert max(s.payload_len for _, s in _sent(result)) == 1448
    assert result.completed and result.timeouts == 0 and not result.stalls


def _fallback_timeline(sends: list[tuple[float, int, int]]) -> tuple[int, float, int]:
    """From (time s, seq, payload) of the sender's data segments: the full size, the seconds from
    the first retransmission to the first smaller segment, and that smaller size."""
    full = max(n for _, _, n in sends)
    seen: set[int] = set()
    first_rexmit = None
    for t, seq, n in sends:
        if seq in seen and first_rexmit is None:
            first_rexmit = t
        seen.add(seq)
        if n < full and first_rexmit is not None and n != full:
            return full, t - first_rexmit, n
    raise AssertionError("no fallback to a smaller segment")


def test_linux_black_hole_detection_falls_back_to_1024_as_the_captured_kernel_did():
    """Compared with a real capture (fixtures/pmtu_blackhole_probing.pcap: Linux on this machine,
    tcp_mtu_probing=1, 9000-byte MTUs, a 1500-byte black hole): full-size retransmissions for at
    least 3 s after the first one, then 1024-byte segments (tcp_base_mss) that get through. The
    simulated Linux does the same; with probing off it backs off until it gives up."""
    from pathlib import Path

    import dpkt

    pcap = Path(__file__).resolve().parent.parent / "fixtures" / "pmtu_blackhole_probing.pcap"
    real = []
    with pcap.open("rb") as f:
        reader = dpkt.pcap.Reader(f)
        t0 = None
        for ts, buf in reader:
            ip = dpkt.ethernet.Ethernet(buf).data
            if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            t0 = ts if t0 is None else t0
            tcp = ip.data
            payload = ip.len - 4 * ip.hl - 4 * tcp.off  # the capture keeps only the headers
            if tcp.dport == 5001 and payload:
                real.append((float(ts - t0), tcp.seq, payload))
    r_full, r_wait, r_mss = _fallback_timeline(real)
    assert r_full == 8948 and r_mss == 1024 and r_wait >= 3.0

    sim = run_bulk(BulkConfig(personality="linux", link="gige", mtu=9000, bytes=327_681, delay_ns=1_000_000,
                              mtu_probing=1), impairments={"pmtu_mtu": HOP_MTU, "pmtu_mode": "blackhole"})
    sends = [(t / 1e9, s.seq, s.payload_len) for t, s in _sent(sim) if s.payload_len]
    s_full, s_wait, s_mss = _fallback_timeline(sends)
    assert s_mss == 1024 and s_wait >= 3.0
    assert sim.completed and not sim.aborted
    assert sim.stalls[0].cause is Cause.PMTU_BLACKHOLE
    off = run_bulk(BulkConfig(personality="linux", link="gige", mtu=9000, bytes=327_681, delay_ns=1_000_000),
                   impairments={"pmtu_mtu": HOP_MTU, "pmtu_mode": "blackhole"})
    assert off.aborted and not off.completed


def _real_probe_sizes() -> tuple[int, list[int]]:
    """(the receiver's SYN MSS, payload sizes of the probes) in our own capture: after the fallback
    to 1024, every data segment larger than 1024 and smaller than the full 8948."""
    from pathlib import Path

    import dpkt
    from pcap_tcp import tcp_segments

    pcap = Path(__file__).resolve().parent.parent / "fixtures" / "pmtu_blackhole_probing.pcap"
    mss_clamp, probes, fallen = None, [], False
    for _, tcp, payload in tcp_segments(pcap):
        if tcp.flags & dpkt.tcp.TH_SYN and tcp.sport == 5001:
            mss_clamp = next(int.from_bytes(v, "big") for k, v in dpkt.tcp.parse_opts(tcp.opts) if k == 2)
        if tcp.dport == 5001 and payload:
            fallen = fallen or payload == 1024
            if fallen and 1024 < payload < 8948:
                probes.append(payload)
    return mss_clamp, probes


def test_linux_probes_upwards_after_the_fallback_as_the_captured_kernel_did():
    """RFC 4821 after black-hole detection, compared with our own capture
    (fixtures/pmtu_blackhole_probing.pcap). The real kernel probed 4986 and then 3004 bytes: the
    binary search of tcp_mtu_probe from search_high = SYN MSS + 40 and search_low = tcp_base_mss
    plus its 52 bytes of headers (timestamps on). The simulator, with timestamps on as well, sends
    the same probes; those above the 1500-byte hole are lost, those below acknowledged, and the MSS
    ends at the largest acknowledged one, within the search threshold."""
    mss_clamp, real = _real_probe_sizes()
    assert mss_clamp == 8960 and real[:2] == [4986, 3004]
    # The kernel's search reproduces what it sent: the first two probes were lost.
    assert _kernel_probe_sizes(mss_clamp, 52, lambda mtu: False)[:2] == real[:2]

    sim = run_bulk(_linux_jumbo(mtu_probing=1), impairments={"pmtu_mtu": HOP_MTU, "pmtu_mode": "blackhole"})
    assert sim.completed and not sim.aborted
    sent = [s.payload_len for _, s in _sent(sim) if s.payload_len]
    # A probe is a segment larger than the MSS in use; a probe's size seen again means it was
    # acknowledged and the MSS rose to it (perhaps only after the next probe went).
    probes, mss = [], 1024
    for n in sent[sent.index(1024):]:
        if n in probes:
            mss = max(mss, n)
        elif n > mss:
            probes.append(n)
    assert probes[:2] == real[:2]  # 4986 and 3004, as the captured kernel
    expected = _kernel_probe_sizes(8960, 52, lambda mtu: mtu <= HOP_MTU)
    assert probes[: len(expected)] == expected
    final = sim.ground_truth.summary["maxseg"]
    assert final == max(n for n in expected if n + 52 <= HOP_MTU)
    assert HOP_MTU - 52 - PROBE_THRESHOLD < final <= HOP_MTU - 52
