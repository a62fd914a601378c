"""Cause rules, one module per cause family. Each exports `rule(ctx) -> Verdict | None`; `RULES`
is the order in which they are asked: the first that claims a stall names its cause, and every
later rule that also claims it becomes a ranked alternative. A stall none claims is
`undetermined`, with the facts that ruled each family out.

    loss          retransmission timeouts: burst / single loss, lost ACKs, spurious timeouts,
                  and the path causes behind them (jumbo slots, PMTU black hole, MSS mismatch)
    application   nothing to send: idle writer, request/response turnaround
    windows       peer window, window-update deadlock, sender SWS, send buffer
    nagle         a short segment held for an ACK: Nagle / delayed ACK, Linux 2.0's NODELAY tail
"""

from __future__ import annotations

from collections.abc import Callable

from stallscope.analyzers.causes import application, loss, nagle, windows
from stallscope.analyzers.findings import Verdict
from stallscope.analyzers.stalls import StallContext

Rule = Callable[[StallContext], "Verdict | None"]

RULES: tuple[tuple[str, Rule], ...] = (
    ("loss", loss.rule),
    ("application", application.rule),
    ("windows", windows.rule),
    ("nagle", nagle.rule),
)
