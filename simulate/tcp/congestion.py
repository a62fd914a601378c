"""Congestion window and loss recovery: Tahoe, Reno, NewReno (notes 4)."""

from __future__ import annotations

from dataclasses import dataclass

from .personality import Recovery

DUPACK_THRESHOLD = 3


@dataclass(slots=True)
class CongestionState:
    recovery: Recovery
    mss: int
    cwnd: int
    ssthresh: int = 1 << 30
    dupacks: int = 0
    recover: int = 0  # NewReno: snd_max when recovery began
    in_recovery: bool = False


def new_state(recovery: Recovery, mss: int, initial_segments: int) -> CongestionState:
    cwnd = (1 << 30) if initial_segments <= 0 else initial_segments * mss
    return CongestionState(recovery=recovery, mss=mss, cwnd=cwnd)


def _halve(st: CongestionState, wnd: int) -> None:
    st.ssthresh = max(2, min(wnd, st.cwnd) // 2 // st.mss) * st.mss


def on_timeout(st: CongestionState, snd_wnd: int) -> None:
    _halve(st, snd_wnd)
    st.cwnd = st.mss
    st.dupacks = 0
    st.in_recovery = False


def enter_sack_recovery(st: CongestionState, snd_wnd: int, snd_max: int) -> None:
    """RFC 6675 section 5 (4.2): ssthresh and cwnd to half the window; recovery ends at snd_max."""
    _halve(st, snd_wnd)
    st.cwnd = st.ssthresh
    st.recover = snd_max
    st.in_recovery = True


def enter_loss_without_reduction(st: CongestionState, snd_max: int) -> None:
    """tcp_simple_retransmit after a lost MTU probe: recover up to snd_max with cwnd unchanged
    (ssthresh = tcp_current_ssthresh, at least three quarters of cwnd)."""
    st.ssthresh = max(st.ssthresh, st.cwnd * 3 // 4)
    st.recover = snd_max
    st.in_recovery = True


def leave_sack_recovery(st: CongestionState) -> None:
    """The ACK reached the recovery point (RFC 6675 section 5 (6)): cwnd = ssthresh."""
    st.cwnd = min(st.cwnd, st.ssthresh)
    st.in_recovery = False
    st.dupacks = 0


def on_new_ack(st: CongestionState, acked: int, ack: int) -> bool:
    """A new ACK. Returns True when NewReno saw a partial ACK and the next hole must be resent."""
    if st.in_recovery:
        if st.recovery is Recovery.NEWRENO and ack < st.recover:
            st.cwnd = max(st.cwnd - acked + st.mss, st.mss)  # partial ACK: deflate, stay in recovery
            return True
        # Reno quirk (notes 4): deflate only if dupacks > 3; NewReno always on full ACK.
        if st.recovery is Recovery.NEWRENO or st.dupacks > DUPACK_THRESHOLD:
            st.cwnd = min(st.cwnd, st.ssthresh)
        st.in_recovery = False
    st.dupacks = 0
    if st.cwnd >= 1 << 30:
        return False
    if st.cwnd < st.ssthresh:
        st.cwnd += st.mss
    else:
        st.cwnd += max(1, st.mss * st.mss // st.cwnd)
    return False


def on_dupack(st: CongestionState, snd_wnd: int, snd_max: int) -> bool:
    """A duplicate ACK. Returns True when the segment at snd_una must be fast-retransmitted."""
    st.dupacks += 1
    if st.dupacks == DUPACK_THRESHOLD:
        if st.recovery is Recovery.NEWRENO and st.in_recovery:
            return False
        _halve(st, snd_wnd)
        st.recover = snd_max
        if st.recovery is Recovery.TAHOE:
            st.cwnd = st.mss
        else:
            st.cwnd = st.ssthresh + DUPACK_THRESHOLD * st.mss
            st.in_recovery = True
        return True
    if st.dupacks > DUPACK_THRESHOLD and st.recovery is not Recovery.TAHOE and st.in_recovery:
        st.cwnd += st.mss
    return False
