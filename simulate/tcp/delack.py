"""Delayed-ACK policies (docs/tcp-rules.md#delayed-ack-timers): when a received data segment is ACKed at
once, and when later."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..engine import NS_PER_MS
from .personality import DelAckPolicy, Personality

LINUX_ATO_MIN = 40 * NS_PER_MS  # TCP_DELACK_MIN (docs/tcp-rules.md#delayed-ack-timers)
LINUX_ATO_MAX = 200 * NS_PER_MS  # TCP_DELACK_MAX
LINUX_QUICKACK_MAX = 16  # unverified (docs/tcp-rules.md#delayed-ack-timers)
LINUX20_JIFFY = 10 * NS_PER_MS  # HZ = 100 on Linux 2.0 (i386)


class AckNow(Enum):
    NOW = "now"
    DELAY = "delay"  # set DELACK; the tick or a one-shot timer sends it


@dataclass(slots=True)
class DelAckState:
    policy: DelAckPolicy
    ato_ns: int
    quick: int = 0  # Linux quick-ACK segments left
    unacked_segments: int = 0  # FreeBSD: in-order segments since the last ACK
    largest_outstanding: int = 0  # Tru64 small-sender inference
    last_data_at: int | None = None


def new_state(p: Personality, rcvbuf: int, rcv_mss: int) -> DelAckState:
    st = DelAckState(policy=p.delack, ato_ns=p.delack_ns)
    if p.delack is DelAckPolicy.LINUX_ATO:
        st.ato_ns = LINUX_ATO_MIN
        st.quick = min(max(rcvbuf // (2 * rcv_mss), 2), LINUX_QUICKACK_MAX)
    return st


def on_data(
    p: Personality,
    st: DelAckState,
    now: int,
    in_order: bool,
    unacked_bytes: int,
    rcv_mss: int,
    infer_small_sender: bool,
    rto_ns: int,
    srtt_ns: int = 0,
) -> AckNow:
    """Decide for one arriving data segment. `unacked_bytes` = rcv_nxt - the last ACK we sent."""
    gap = None if st.last_data_at is None else now - st.last_data_at
    st.last_data_at = now
    if not in_order:
        return AckNow.NOW  # out-of-order data is ACKed at once in every stack (dup ACKs)
    if infer_small_sender:
        # Tru64 (Mogul section 9): the sender seems to have at most `largest_outstanding` in
        # flight; once an ACK would free half of that, ACK now rather than wait.
        st.largest_outstanding = max(st.largest_outstanding, unacked_bytes)
        if st.largest_outstanding >= rcv_mss and 2 * unacked_bytes >= st.largest_outstanding:
            return AckNow.NOW
    pol = st.policy
    if pol is DelAckPolicy.BSD_TICK:
        return AckNow.DELAY
    if pol is DelAckPolicy.FREEBSD:
        st.unacked_segments += 1
        return AckNow.NOW if st.unacked_segments >= 2 else AckNow.DELAY
    if pol is DelAckPolicy.LINUX_ATO:
        if gap is not None:
            if gap <= st.ato_ns // 2:
                st.ato_ns = st.ato_ns // 2 + LINUX_ATO_MIN // 2
            elif gap < st.ato_ns:
                st.ato_ns = min(st.ato_ns // 2 + gap, rto_ns)
            st.ato_ns = min(max(st.ato_ns, LINUX_ATO_MIN), LINUX_ATO_MAX)
        if st.quick > 0 or unacked_bytes > rcv_mss:
            return AckNow.NOW
        return AckNow.DELAY
    # LINUX20_ATO (tcp_delack_estimator): ato := ato/2 + gap, or the smoothed RTT when the gap
    # exceeds it: 2.0 compares with rtt >> 3 (docs/tcp-rules.md#delayed-ack-timers). Counted in jiffies (HZ=100), a
    # gap is at least one jiffy; on a LAN srtt rounds to 0 jiffies, so the ACK waits for the next tick.
    if gap is not None:
        m = max(1, now // LINUX20_JIFFY - (now - gap) // LINUX20_JIFFY) * LINUX20_JIFFY
        srtt_j = srtt_ns // LINUX20_JIFFY * LINUX20_JIFFY
        st.ato_ns = srtt_j if m > srtt_j else st.ato_ns // 2 + m
    if unacked_bytes >= p.linux20_max_unacked:
        return AckNow.NOW
    return AckNow.DELAY


def on_ack_sent(st: DelAckState) -> None:
    st.unacked_segments = 0
    if st.quick > 0:
        st.quick -= 1


def one_shot_delay(st: DelAckState, now: int = 0) -> int | None:
    """Delay of the one-shot delayed-ACK timer, or None for the global-tick policy."""
    if st.policy is DelAckPolicy.BSD_TICK:
        return None
    if st.policy is DelAckPolicy.LINUX20_ATO:
        fire = -(-(now + st.ato_ns) // LINUX20_JIFFY) * LINUX20_JIFFY  # timers run on jiffy ticks
        return fire - now
    return st.ato_ns
