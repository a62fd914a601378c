"""Salamon (linux-kernel, June 1998): a Linux 2.0.29 sender with TCP_NODELAY over Fast Ethernet
loses most of its throughput when the message size equals the receive window, because the short
tail of each message waits in `partial` until everything outstanding is acknowledged
(docs/tcp-rules.md#linux-20-partial-segment);
a receiver that ACKs faster (2.1.79, modelled by the `linux` personality) hides it.

Statement reproduced (the published tables' README; tolerance in
docs/simulate-cli.md#stallscope-reproduce-name): 11 MB/s drops to 3.5 MB/s; a fast-ACKing receiver
hides it. Held to: the drop is at least 2x with the linux20 receiver, at most 1.25x with the fast
receiver, and the same sender with a message smaller than the window does not drop.
"""

from __future__ import annotations

from stallscope.vocabulary import Cause
from ..run_bulk import BulkConfig, run_bulk
from . import ReproductionResult

WINDOW = 32768  # Linux 2.0 default socket buffer (the linux20 personality's default)
MESSAGES = 400
# Assumption (the report does not say): a message-passing benchmark, each message answered by a
# small reply before the next is sent, so nothing new arrives to fill the held tail. With a
# 32768-byte buffer Linux 2.0 advertises at most MAX_WINDOW = 32767, one byte short of the message.
REPLY = 4
MIN_DROP = 2.0
MAX_HIDDEN = 1.25


def _run(message: int, receiver: str, seed: int = 1):
    cfg = BulkConfig(
        personality="linux20", receiver_personality=receiver, link="fastethernet", sndbuf=WINDOW,
        rcvbuf=WINDOW, write=message, read=message, bytes=message * MESSAGES, nagle="OFF", seed=seed,
        reply=REPLY,
    )
    return run_bulk(cfg)


def salamon() -> ReproductionResult:
    cases = [
        ("message < window (24 KB), 2.0 receiver", 24576, "linux20"),
        ("message = window (32 KB), 2.0 receiver", WINDOW, "linux20"),
        ("message = window (32 KB), fast-ACK receiver", WINDOW, "linux"),
    ]
    rows = []
    rates = {}
    for label, message, receiver in cases:
        r = _run(message, receiver)
        held = [s for s in r.stalls if s.cause is Cause.NODELAY_TAIL_HELD]
        rates[label] = r.goodput_mbit_s / 8
        rows.append({
            "case": label, "sim_mbyte_s": round(r.goodput_mbit_s / 8, 2),
            "nodelay_tail_held_stalls": len(held),
            "paper": {0: "~11 MB/s", 1: "3.5 MB/s", 2: "no drop (2.1.79 receiver)"}[len(rows)],
        })
    small, full, fast = (rates[c[0]] for c in cases)
    drop = small / full if full else float("inf")
    hidden = small / fast if fast else float("inf")
    # Each hold lasts about one jiffy (< the 10 ms stall threshold), so the stall count is shown only.
    passed = drop >= MIN_DROP and hidden <= MAX_HIDDEN
    verdict = (f"drop at message = window: {drop:.2f}x (need >= {MIN_DROP}, paper 3.1x); "
               f"with the fast-ACK receiver {hidden:.2f}x (need <= {MAX_HIDDEN})")
    return ReproductionResult("salamon", "Salamon: Linux 2.0.29 TCP_NODELAY tail held", rows, passed, verdict,
                              {"drop": drop, "hidden": hidden})
