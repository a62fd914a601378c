"""Fit: from an analysed connection, the reference simulator's configuration that should reproduce
it, every value with where it came from.

A connection is replayed as one of two workloads the simulator runs:
- bulk (the peer sends no data, or next to none): a transfer of the bytes the trace carried, with
  the trace's send and receive buffers (Moldeklev's S and R), MSS, Nagle setting and SACK, over a
  path with the trace's round trip, bottleneck rate and MTU;
- request/response (the peer's requests alternate with the sender's responses): a naglemark trial
  (Mogul & Minshall §6) whose response lengths are the trace's, written in the trace's write size.

The stack is read from what the trace shows of it (options in the SYN, the peer's delayed-ACK
timer, MSS rounding, the write pattern), since a personality is a bundle of such rules.
"""

from __future__ import annotations

import polars as pl

from ...findings import ConnectionAnalysis
from .buffers import fit_bulk, fit_held_tails, sndbuf_floor
from .delayed_ack import fit_tick_phase
from .exchange import fit_answers, fit_messages, fit_request_response, peer_writes_messages, sender_speaks_first
from .losses import fit_losses
from .model import Fit, Fitted
from .pace import fit_pace
from .path import atm_path, fit_path, fit_route_mtu, jumbo_path
from .stack import fit_stack

__all__ = ["REQUEST_RESPONSE_SHARE", "Fit", "Fitted", "fit_connection"]


# The peer sent more data packets than this share of the sender's: a request/response exchange.
REQUEST_RESPONSE_SHARE = 0.02


def fit_connection(conn: ConnectionAnalysis, rows: pl.DataFrame | None, *, seed: int = 1) -> Fit | None:
    """The fit of `conn` (None when it carried no data to replay). `rows` are the connection's
    per-packet sender state (FileAnalysis.state, its stream), read for the path's rate and the
    trace's responses."""
    d = conn.data_direction
    if d is None or d.role != "data sender" or not d.profile.get("bytes"):
        return None
    p = d.profile
    peer_data = p.get("peer_data_packets") or 0
    kind = "request_response" if peer_data > max(3, REQUEST_RESPONSE_SHARE * (p.get("data_packets") or 0)) else "bulk"
    messages = kind == "request_response" and rows is not None and sender_speaks_first(rows, d.dir)
    answers = kind == "request_response" and rows is not None and not messages and peer_writes_messages(rows, d.dir)
    values: dict[str, Fitted] = {"seed": Fitted(seed, "fixed: the simulator is deterministic per seed")}
    warnings: list[str] = []
    fit_stack(d, conn, values, rows)
    fit_path(d, conn, rows, values, warnings)
    fit_route_mtu(conn, d, values)
    if kind == "bulk":
        fit_bulk(d, values)
        fit_held_tails(conn, d, rows, values)
        fit_losses(rows, d.dir, values, conn)
        if "impairments" in values:
            why = atm_path(values, d.profile)
            if why is not None:
                # The calibration tries a switch port in its place (calibrate.link_groups._atm_ports).
                values["_atm_path"] = Fitted(why, why)
            else:
                why = jumbo_path(values, rows, d.dir)
                if why is not None:
                    # The calibration tries a receiving NIC short of jumbo slots (calibrate.link_groups._jumbo_nics).
                    values["_jumbo_path"] = Fitted(why, why)
        fit_pace(conn, d, rows, values)
        sndbuf_floor(d, values)
        fit_tick_phase(d, conn, rows, values)
    elif messages:
        # The sender writes a message and the peer answers each (Salamon's benchmark): a bulk run
        # whose writes are the messages and whose receiver replies.
        kind = "bulk"
        fit_bulk(d, values)
        fit_messages(d, rows, values)
        sndbuf_floor(d, values)
        fit_tick_phase(d, conn, rows, values)
    elif answers:
        # The peer writes messages larger than a request and the sender answers each with more
        # bytes (Salamon's benchmark seen from the answering side): the same bulk run, its sender
        # the peer, its receiver the side that answers.
        kind = "bulk"
        fit_answers(conn, d, rows, values)
    else:
        fit_request_response(d, rows, values, warnings)
    return Fit(conn.stream, d.dir, kind, values, warnings)
