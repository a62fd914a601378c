"""Pure per-rule decisions of the TCP host, written so each can be tested like a transition table.

Nothing here holds simulator state: every input is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

from .personality import CopyRule, Personality, WindowUpdateRule

IP_TCP_HEADERS = 40
TIMESTAMP_OPTION = 12  # the timestamp option padded to 32 bits (NOP NOP TS), RFC 7323 appendix A

# BSD tcp_backoff[] (docs/tcp-rules.md#retransmission-timer): the multiplier for the n-th retransmission.
BACKOFF = (1, 2, 4, 8, 16, 32, 64, 64, 64, 64, 64, 64, 64)
MAX_RXTSHIFT = 12


def sosend_chunk(p: Personality, resid: int, space: int, in_round: bool = False, lowat: int | None = None) -> int:
    """Bytes the socket layer copies before its next PRU_SEND; 0 means the writer sleeps.

    Sleep rule (docs/tcp-rules.md#socket-copy-loop): space < resid and space < the low-water mark (BSD sosend), tested
    when a copy round starts; `lowat` overrides the personality's mark (OSF: the MSS). `in_round`:
    a 4.4BSD/OSF round is still using the space it measured at its start (`} while (resid &&
    space > 0)`), so the chunk is not re-tested against the mark."""
    if resid <= 0:
        return 0
    mark = p.writer_lowat if lowat is None else lowat
    if space <= 0 or (not in_round and space < resid and space < mark):
        return 0
    if p.mbuf_threshold and resid >= p.mbuf_threshold:
        return min(resid, p.mclbytes)  # OSF/1: the cluster does not depend on the space left
    n = min(resid, space)
    if p.copy_rule is CopyRule.SUNOS_CHUNK:
        return min(n, p.send_chunk)  # "protocol called every 4 KB" (Moldeklev 2.1)
    if p.copy_rule is CopyRule.PER_CLUSTER:
        return min(n, p.mclbytes)  # one cluster per PRU_SEND (docs/tcp-rules.md#socket-copy-loop)
    return n


def sosend_rounds(p: Personality) -> bool:
    """4.4BSD/OSF sosend measures sbspace once per round and copies cluster after cluster (one
    PRU_SEND each) until that space is used up before it measures and tests again (uipc_socket.c,
    Mogul §3: "copies it in chunks of length MCLBYTES, calling tcp_output() each time"). SunOS
    re-measures after every 4 KB chunk; Linux appends the whole write."""
    return p.copy_rule is CopyRule.PER_CLUSTER


def bsd_send_reason(
    length: int,
    maxseg: int,
    nagle_ok: bool,
    force: bool,
    max_sndwnd: int,
    retransmitting: bool,
) -> str | None:
    """The data tests of BSD tcp_output in order (docs/tcp-rules.md#bsd-output-decision-order); `nagle_ok` is
    step 2 as the Nagle module decided it. Returns the rule that sends, or None if the data is held."""
    if length <= 0:
        return None
    if length >= maxseg:
        return "full_segment"
    if nagle_ok:
        return "nagle_ok"
    if force:
        return "persist"
    if max_sndwnd > 0 and length >= max_sndwnd // 2:
        return "half_peer_window"
    if retransmitting:
        return "retransmit"
    return None


def window_update_due(
    rule: WindowUpdateRule, adv: int, rcv_cc: int, rcv_hiwat: int, maxseg: int, peer_has: int
) -> bool:
    """Should a read send a pure window update? `adv` is how far the window would slide,
    `peer_has` the window the peer still holds (rcv_adv - rcv_nxt)."""
    if adv <= 0:
        return False
    if rule is WindowUpdateRule.SUNOS_35:
        return (rcv_cc == 0 and adv >= 2 * maxseg) or 100 * adv // rcv_hiwat >= 35
    if rule is WindowUpdateRule.BSD_50:
        return adv >= 2 * maxseg or 2 * adv >= rcv_hiwat
    # Linux tcp_cleanup_rbuf: once the peer's window fell to half, update if it at least doubles.
    return 2 * peer_has <= rcv_hiwat and adv + peer_has >= 2 * peer_has


def receive_window(space: int, hiwat: int, maxseg: int, peer_has: int, max_window: int) -> int:
    """Window to advertise: receiver silly-window avoidance and never shrinking
    (docs/tcp-rules.md#receiver-silly-window-avoidance)."""
    win = space
    if win < hiwat // 4 and win < maxseg:
        win = 0
    win = min(win, max_window)
    return max(win, peer_has)


def offered_mss(p: Personality, if_mtu: int) -> int:
    """MSS put in our SYN: from the interface MTU, even when a route is smaller
    (docs/tcp-rules.md#mss-and-buffer-sizing, docs/tcp-rules.md#path-mtu)."""
    return if_mtu - IP_TCP_HEADERS


def select_mss(p: Personality, if_mtu: int, peer_offer: int | None, route_mtu: int | None = None,
               timestamps: bool = False) -> int:
    """tcp_mss (docs/tcp-rules.md#mss-and-buffer-sizing): MTU - 40, the peer's offer, minus the timestamp
    option when both ends use it (FreeBSD tcp_mss: t_maxopd - TCPOLEN_TSTAMP_APPA; Linux
    tcp_current_mss), then rounded down to a multiple of MCLBYTES when larger than a cluster."""
    mss = (route_mtu if route_mtu is not None else if_mtu) - IP_TCP_HEADERS
    if peer_offer is not None:
        mss = min(mss, peer_offer)
    if timestamps:
        mss -= TIMESTAMP_OPTION
    if p.mss_cluster_round and mss > p.mclbytes:
        mss = mss // p.mclbytes * p.mclbytes
    return max(mss, 1)


def round_buffer(p: Personality, size: int, mss: int) -> int:
    """4.4BSD rounds socket buffers up to a multiple of the MSS; SunOS does not
    (docs/tcp-rules.md#mss-and-buffer-sizing)."""
    if p.buffer_round_to_mss and size % mss:
        return (size // mss + 1) * mss
    return size


def rto_ns(p: Personality, srtt_ns: int, rttvar_ns: int) -> int:
    """srtt + k * rttvar clamped to the personality's [min, max] (docs/tcp-rules.md#retransmission-timer)."""
    return min(max(srtt_ns + p.rttvar_mult * rttvar_ns, p.rto_min_ns), p.rto_max_ns)


RTT_SHIFT = 3  # t_srtt: slow ticks scaled by 8 (tcp_var.h TCP_RTT_SHIFT)
RTTVAR_SHIFT = 2  # t_rttvar: slow ticks scaled by 4 (TCP_RTTVAR_SHIFT)


def bsd_xmit_timer(srtt_fp: int | None, rttvar_fp: int, rtt_ticks: int) -> tuple[int, int]:
    """4.4BSD / OSF tcp_xmit_timer: one RTT sample `rtt_ticks` (t_rtt, which counts slow ticks from
    1) folded into srtt (x8) and rttvar (x4) with integer shifts, origin moved to 0, each floored at
    1. The integer arithmetic is the point: rttvar stops decaying once below one tick (|delta| -
    (rttvar >> 2) is never negative there), so on a LAN it settles at 3/4 tick."""
    if srtt_fp is None:
        return rtt_ticks << RTT_SHIFT, rtt_ticks << (RTTVAR_SHIFT - 1)  # first retransmit at 3 x rtt
    delta = rtt_ticks - 1 - (srtt_fp >> RTT_SHIFT)
    srtt_fp = max(srtt_fp + delta, 1)
    delta = abs(delta) - (rttvar_fp >> RTTVAR_SHIFT)
    rttvar_fp = max(rttvar_fp + delta, 1)
    return srtt_fp, rttvar_fp


def bsd_rexmtval_ticks(srtt_fp: int, rttvar_fp: int) -> int:
    """TCP_REXMTVAL = (t_srtt >> 3) + t_rttvar, in slow ticks: srtt + 4 rttvar, whose statistical
    +1/2 tick bias each gives "exactly the 1.5 tick we need" (the macro's comment in 4.4BSD and
    Digital UNIX tcp_var.h); 3 ticks = 1.5 s on a LAN, before the [min, max] clamp."""
    return (srtt_fp >> RTT_SHIFT) + rttvar_fp


def backed_off_rto(p: Personality, base_ns: int, shift: int) -> int:
    """The RTO for the shift-th retransmission: base * tcp_backoff[shift], clamped
    (docs/tcp-rules.md#retransmission-timer)."""
    mult = BACKOFF[min(shift, len(BACKOFF) - 1)]
    return min(max(base_ns * mult, p.rto_min_ns), p.rto_max_ns)


@dataclass(slots=True)
class LinuxRtt:
    """tcp_sock's srtt_us (x8), mdev_us (x4), mdev_max_us, rttvar_us and rtt_seq, in ns."""

    srtt8: int = 0
    mdev4: int = 0
    mdev_max: int = 0
    rttvar: int = 0
    rtt_seq: int = 0


def linux_rtt_estimator(st: LinuxRtt, m: int, snd_una: int, snd_nxt: int, rto_min: int) -> None:
    """net/ipv4/tcp_input.c tcp_rtt_estimator, line for line: srtt 7/8 old + 1/8 new; mdev with
    a finer gain when the RTT falls (Eifel-like); rttvar follows the round trip's largest mdev,
    never below tcp_rto_min, decaying once per round trip (rtt_seq)."""
    if st.srtt8 != 0:
        m -= st.srtt8 >> 3
        st.srtt8 += m
        if m < 0:
            m = -m
            m -= st.mdev4 >> 2
            if m > 0:
                m >>= 3
        else:
            m -= st.mdev4 >> 2
        st.mdev4 += m
        if st.mdev4 > st.mdev_max:
            st.mdev_max = st.mdev4
            if st.mdev_max > st.rttvar:
                st.rttvar = st.mdev_max
        if snd_una > st.rtt_seq:
            if st.mdev_max < st.rttvar:
                st.rttvar -= (st.rttvar - st.mdev_max) >> 2
            st.rtt_seq = snd_nxt
            st.mdev_max = rto_min
    else:
        st.srtt8 = m << 3
        st.mdev4 = m << 1
        st.rttvar = max(st.mdev4, rto_min)
        st.mdev_max = st.rttvar
        st.rtt_seq = snd_nxt
    st.srtt8 = max(1, st.srtt8)


def linux_rto_ns(p: Personality, st: LinuxRtt) -> int:
    """tcp_set_rto: srtt + rttvar, bounded by TCP_RTO_MAX."""
    return min((st.srtt8 >> 3) + st.rttvar, p.rto_max_ns)


def ticks_for(delay_ns: int, tick_ns: int) -> int:
    """A BSD timer counts down on the global tick: delay rounded up to whole ticks, at least one."""
    return max(1, -(-delay_ns // tick_ns))


def persist_ns(srtt_ns: int, rttvar_ns: int, shift: int) -> int:
    """(srtt + 2 rttvar) * backoff, clamped to [5 s, 60 s] (docs/tcp-rules.md#persist-timer)."""
    base = (srtt_ns + 2 * rttvar_ns) * BACKOFF[min(shift, len(BACKOFF) - 1)]
    return min(max(base, 5_000_000_000), 60_000_000_000)


# Linux black-hole detection (net/ipv4/tcp_timer.c): tcp_write_timeout calls tcp_mtu_probing once
# retransmits_timed_out(sk, tcp_retries1 = 3): the time since the first retransmission of the
# episode reaches the model timeout ((2 << 3) - 1) * TCP_RTO_MIN = 3 s. Sizes: tcp_base_mss 1024,
# tcp_mtu_probe_floor 48 (ip-sysctl.txt). A capture of this kernel through a 1500-byte black hole
# (fixtures/pmtu_blackhole_probing.pcap) shows it: four full-size retransmissions, the fifth (3.2 s
# after the first) at 1024 bytes.
LINUX_BASE_MSS = 1024
LINUX_MTU_PROBE_FLOOR = 48
LINUX_BLACK_HOLE_AFTER_NS = 15 * 200_000_000


def black_hole_suspected(first_rexmit_at: int | None, now: int) -> bool:
    return first_rexmit_at is not None and now - first_rexmit_at >= LINUX_BLACK_HOLE_AFTER_NS

