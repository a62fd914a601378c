"""Connection state (RFC 793 names) and the connection's timers as one sum type."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class TcpState(Enum):
    CLOSED = "CLOSED"
    LISTEN = "LISTEN"
    SYN_SENT = "SYN-SENT"
    SYN_RECEIVED = "SYN-RECEIVED"
    ESTABLISHED = "ESTABLISHED"
    FIN_WAIT_1 = "FIN-WAIT-1"
    FIN_WAIT_2 = "FIN-WAIT-2"
    CLOSE_WAIT = "CLOSE-WAIT"
    CLOSING = "CLOSING"
    LAST_ACK = "LAST-ACK"
    TIME_WAIT = "TIME-WAIT"

    @property
    def can_send_data(self) -> bool:
        return self in (TcpState.ESTABLISHED, TcpState.CLOSE_WAIT)

    @property
    def receives_data(self) -> bool:
        return self in (TcpState.ESTABLISHED, TcpState.FIN_WAIT_1, TcpState.FIN_WAIT_2)


class TimerKind(Enum):
    """Every timer a connection can run. BSD-family personalities count REXMT and PERSIST in
    500 ms slow ticks and DELACK on the global 200 ms fast tick; the others use one-shot ns timers."""

    REXMT = "rexmt"
    PERSIST = "persist"
    DELACK = "delack"
    PARTIAL = "partial"  # Linux 2.0's 1 s timer for a held partial tail (docs/tcp-rules.md#linux-20-partial-segment)

    # Members are singletons: identity hashing skips Enum's Python-level __hash__ on the timer
    # dicts' hot path (dict order is insertion order, so nothing observable changes).
    __hash__ = object.__hash__


@dataclass(frozen=True, slots=True)
class TimerFired:
    """What a timer expiry hands to the connection: which timer and when."""

    kind: TimerKind
    at: int
