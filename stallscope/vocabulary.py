"""The words the simulator, the capture agents and the analyzer share: the causes a stall can have,
the details each cause may carry, and the word for a stall no rule explains. Simulated ground truth
(simulate/), the capture scenarios' truth (capture/) and the analysis (analyzers/) name causes with
these, so a scorer can compare them; this module imports nothing of the project. The names are a
stable interface (docs/analysis-json.md, docs/scoring.md).
"""

from __future__ import annotations

from enum import Enum


class Cause(str, Enum):
    NAGLE_DELAYED_ACK = "nagle_delayed_ack"  # detail: of_sfs, buffer_tearing, copy_rule, timer_phase
    WINDOW_UPDATE_DEADLOCK = "window_update_deadlock"  # detail: congestion_window
    SENDER_SWS = "sender_sws"
    NODELAY_TAIL_HELD = "nodelay_tail_held"
    RECEIVER_WINDOW_LIMITED = "receiver_window_limited"  # detail: congestion_window
    SEND_BUFFER_LIMITED = "send_buffer_limited"
    BURST_LOSS_TIMEOUT = "burst_loss_timeout"  # detail: atm_cell_loss, queue_overflow
    SINGLE_LOSS_TIMEOUT = "single_loss_timeout"
    # A retransmission timeout whose data segment was delivered but whose ACKs were all lost.
    ACK_LOSS_TIMEOUT = "ack_loss_timeout"
    # The RTO fired before the ACK of a delivered segment arrived, nothing lost (e.g. Linux 2.0's
    # RTO behind a slow delayed ACK).
    SPURIOUS_TIMEOUT = "spurious_timeout"
    JUMBO_SLOT_EXHAUSTION = "jumbo_slot_exhaustion"
    PMTU_BLACKHOLE = "pmtu_blackhole"  # detail: interface_mtu
    # GigaTCP's bug: an MSS offered in the SYN and never used. A connection finding; it costs no
    # stall of its own, so simulated ground truth never names it.
    MSS_MISMATCH = "mss_mismatch"
    APPLICATION_IDLE = "application_idle"


DETAILS: dict[Cause, frozenset[str]] = {
    Cause.NAGLE_DELAYED_ACK: frozenset({"of_sfs", "buffer_tearing", "copy_rule", "timer_phase"}),
    Cause.BURST_LOSS_TIMEOUT: frozenset({"atm_cell_loss", "queue_overflow"}),
    # The sender's congestion window, not the peer's window, left no room (slow start, or after
    # a timeout): the same wait, but what would end it is a larger cwnd, not a window update.
    Cause.WINDOW_UPDATE_DEADLOCK: frozenset({"congestion_window"}),
    Cause.RECEIVER_WINDOW_LIMITED: frozenset({"congestion_window"}),
    # The segments died on the sender's own link, whose MTU is below the host's interface MTU
    # (simulated truth only: a capture cannot tell that hop from a router further along).
    Cause.PMTU_BLACKHOLE: frozenset({"interface_mtu"}),
}


# What the analyzer reports for a stall that no rule can support (never a guess).
UNDETERMINED = "undetermined"
