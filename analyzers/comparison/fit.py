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

import functools
import statistics
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import polars as pl

from stallscope.simulate.run_bulk import BulkConfig

from ..findings import ConnectionAnalysis, DirectionAnalysis
from ..stalls import gap_threshold_ns

# The peer sent more data packets than this share of the sender's: a request/response exchange.
REQUEST_RESPONSE_SHARE = 0.02
TCP_IP_HEADERS = 40
# Rate estimates from packet or ACK spacing can only be too low (queueing spreads packets out), so
# the fit takes a high percentile of them, not the median: the back-to-back pairs show the
# bottleneck, and the very top is the odd pair compressed behind a queue.
RATE_PERCENTILE = 0.9
MIN_RATE_SAMPLES = 8
# personality_of's answer when a stack shows nothing that tells it apart.
GENERIC_STACK = "no RFC 1323/2018 options and nothing more specific: the 4.4BSD reference stack"


@dataclass(frozen=True)
class Fitted:
    """One fitted value and where it came from (a profile field, a measurement, a default)."""

    value: Any
    source: str


@dataclass
class Fit:
    """A connection's fitted configuration: `kind` is "bulk" or "request_response"; `values` are
    the simulator's inputs with their sources; `warnings` say where the fit is weak."""

    stream: int
    dir: int
    kind: str
    values: dict[str, Fitted]
    warnings: list[str] = field(default_factory=list)

    def with_values(self, values: dict[str, Fitted]) -> Fit:
        return Fit(self.stream, self.dir, self.kind, {**self.values, **values}, list(self.warnings))

    def value(self, name: str) -> Any:
        v = self.values.get(name)
        return None if v is None else v.value

    def bulk_config(self, **changes: Any) -> BulkConfig:
        """The BulkConfig of a bulk fit, with `changes` applied (a what-if)."""
        names = ("personality", "receiver_personality", "mtu", "mss", "sndbuf", "rcvbuf", "write", "read", "bytes",
                 "nagle", "receiver_nagle", "rate_bps", "delay_ns", "sack", "seed", "link", "reply", "cost", "read_rate_bps", "think_ns",
                 "route_mtu", "mtu_probing", "host_mtu")
        kw = {n: self.value(n) for n in names if self.value(n) is not None}
        changes = {k: v for k, v in changes.items() if k not in PATH_CHANGES}
        kw.update(changes)
        kw.setdefault("link", "custom")
        # The hosts' costs: a model by name, its reads slowed to the receiving application's pace.
        cost, read_rate = kw.pop("cost", None) or "free", kw.pop("read_rate_bps", None)
        if read_rate:
            from stallscope.simulate.slow_reader import reader_cost

            cost = reader_cost(cost, int(read_rate))
        return BulkConfig(cost=cost, **kw)

    def impairments(self, changes: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The path impairments a bulk run of the fit takes, with `changes` applied: `impairments`
        given whole, or a fitted path mechanism (`atm_switch`, `jumbo_nic`, `pmtu_hop`: the
        mechanism replaces the replayed losses), else the trace's losses replayed on the same
        segments."""
        changes = changes or {}
        if changes.get("impairments") is not None:
            return changes["impairments"]
        out: dict[str, Any] = {}
        port = changes.get("atm_switch", self.value("atm_switch"))
        if port:
            out["atm_switch"] = atm_spec(port)
        nic = changes.get("jumbo_nic", self.value("jumbo_nic"))
        if nic:
            out.update(jumbo_impairments(nic))
        hop = changes.get("pmtu_hop", self.value("pmtu_hop"))
        if hop:
            out.update(pmtu_mtu=int(hop["mtu"]), pmtu_mode=str(hop["mode"]))
        if out:
            return out
        return self.value("impairments")

    def trial_args(self, **changes: Any) -> dict[str, Any]:
        """run_naglemark_capture's arguments for a request/response fit, with `changes` applied."""
        names = ("personality", "variant", "sockbuf", "app_buf", "lengths", "think_ns", "rate_bps", "delay_ns", "mtu",
                 "seed")
        kw = {n: self.value(n) for n in names}
        kw.update(changes)
        kw.setdefault("trial", "S")
        # The path is given whole (rate, delay, MTU), so the preset only names the framing.
        kw.setdefault("link", "gige")
        return kw

    def to_json(self) -> dict[str, Any]:
        values = {}
        for name, v in sorted(self.values.items()):
            if name.startswith("_"):
                continue
            value = v.value
            if name == "lengths":
                value = {"responses": len(value), "bytes": sum(value), "first": value[:5]}
            values[name] = {"value": value, "source": v.source}
        return {"stream": self.stream, "dir": self.dir, "kind": self.kind, "values": values,
                "warnings": list(self.warnings)}


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
    messages = kind == "request_response" and rows is not None and _sender_speaks_first(rows, d.dir)
    answers = kind == "request_response" and rows is not None and not messages and _peer_writes_messages(rows, d.dir)
    values: dict[str, Fitted] = {"seed": Fitted(seed, "fixed: the simulator is deterministic per seed")}
    warnings: list[str] = []
    _fit_stack(d, conn, values, rows)
    _fit_path(d, conn, rows, values, warnings)
    _fit_route_mtu(conn, d, values)
    if kind == "bulk":
        _fit_bulk(d, values)
        _fit_losses(rows, d.dir, values, conn)
        if "impairments" in values:
            why = atm_path(values, d.profile)
            if why is not None:
                # The calibration tries a switch port in its place (calibrate._atm_ports).
                values["_atm_path"] = Fitted(why, why)
            else:
                why = jumbo_path(values, rows, d.dir)
                if why is not None:
                    # The calibration tries a receiving NIC short of jumbo slots (calibrate._jumbo_nics).
                    values["_jumbo_path"] = Fitted(why, why)
        _fit_pace(conn, d, rows, values)
        _sndbuf_floor(d, values)
        _fit_tick_phase(d, conn, rows, values)
    elif messages:
        # The sender writes a message and the peer answers each (Salamon's benchmark): a bulk run
        # whose writes are the messages and whose receiver replies.
        kind = "bulk"
        _fit_bulk(d, values)
        _fit_messages(d, rows, values)
        _sndbuf_floor(d, values)
        _fit_tick_phase(d, conn, rows, values)
    elif answers:
        # The peer writes messages larger than a request and the sender answers each with more
        # bytes (Salamon's benchmark seen from the answering side): the same bulk run, its sender
        # the peer, its receiver the side that answers.
        kind = "bulk"
        _fit_answers(conn, d, rows, values)
    else:
        _fit_request_response(d, rows, values, warnings)
    return Fit(conn.stream, d.dir, kind, values, warnings)


# The BSD receivers acknowledge held data on a free-running 200 ms clock (tcp_fasttimo), whose
# phase the simulator draws from the run's seed, with each host's ISS (native/src/sim/world.rs
# Draws: MT19937 seeded as Python's random.Random, native/src/sim/rng.rs): sender's phase, sender's
# ISS, receiver's phase, each phase below a second, on a grid from the connection's start (t = 0).
TICK_STACKS = ("sunos41", "bsd44", "tru64")
BSD_DELACK_TICK_NS = 200_000_000
DRAW_PHASE_RANGE = 1_000_000_000
# A stall the peer's ACK ended, held at least this long after the newest segment it covered (less
# the round trip the tap adds): the analyzer's stall threshold, longer than a slow host's copies
# (a Sun IPX receiver's ACKs wait 3-7 ms behind its reads) and than an ACK of two segments.
HELD_ACK_NS = 10_000_000
# Stalls the peer's ACK ends (not a timeout's resend).
RELEASED_BY_ACK = ("window_update_deadlock", "nagle_delayed_ack", "receiver_window_limited", "sender_sws",
                   "send_buffer_limited")
# Seeds searched for the receiver's phase: their phases lie about 50 us apart.
TICK_SEEDS = 4096


@functools.lru_cache(maxsize=1)
def _receiver_phases() -> tuple[int, ...]:
    """The receiver's delayed-ACK tick phase (mod 200 ms) each seed 1..TICK_SEEDS draws."""
    import random

    out = []
    for seed in range(1, TICK_SEEDS + 1):
        rng = random.Random(seed)
        rng.randrange(DRAW_PHASE_RANGE)
        rng.randrange(1 << 32)
        out.append(rng.randrange(DRAW_PHASE_RANGE) % BSD_DELACK_TICK_NS)
    return tuple(out)


def _fit_tick_phase(d: DirectionAnalysis, conn: ConnectionAnalysis, rows: pl.DataFrame | None,
                    values: dict[str, Fitted]) -> None:
    """The peer's delayed-ACK clock's phase, where the receiver may run a BSD stack (a 200 ms tick)
    and the sender stalled until an ACK the peer held (at least HELD_ACK_NS): that ACK left on the
    tick (the first such stall's; or the phase the analyzer learned from several held ACKs),
    counted from the connection's start; the fit takes the seed whose receiver tick falls there. A
    short transfer's one window-update deadlock lasts until that tick: its length, and so the
    goodput, is the phase (a Nagle trace of 256 KB over FDDI held 87 ms where seed 1's tick held
    127). Not where the peer's delays lock to Linux 2.0's 10 ms jiffies."""
    pers = values["personality"].value
    recv = values["receiver_personality"].value if "receiver_personality" in values else pers
    if rows is None or pers not in TICK_STACKS + ("linux20",) or recv not in TICK_STACKS + ("linux20",):
        return
    tick = d.profile.get("_peer_tick") or {}
    if tick and tick.get("period_ns") != BSD_DELACK_TICK_NS:
        return
    vantage = (conn.vantage.get(str(d.dir)) or {}).get("vantage")
    path = values["_path"].value if "_path" in values else {}
    # At the sender's tap an ACK's delay holds the round trip; at a middle tap about half of it.
    trip = int(path.get("rtt") or 0) * (1 if vantage == "sender" else 0 if vantage == "receiver" else 0.5)
    syn = rows.filter(pl.col("flag_syn")).sort("ts_ns")
    released = sorted((s for s in conn.stalls if s.dir == d.dir and s.cause in RELEASED_BY_ACK
                       and isinstance(s.evidence, dict)
                       and (s.evidence.get("releasing_ack_delay_ns") or 0) - trip >= HELD_ACK_NS),
                      key=lambda s: s.end_ns)
    if syn.is_empty() or not released:
        return
    t0 = int(syn["ts_ns"][0])
    if tick.get("period_ns") == BSD_DELACK_TICK_NS:
        at, how = int(tick["phase_ns"]), (f"the phase the analyzer learned from {tick.get('acks_on_phase')} of the "
                                          f"peer's {tick.get('acks_held')} held ACKs")
    else:
        s = released[0]
        at, how = int(s.end_ns), (f"the ACK that ended the first {s.cause} stall, held "
                                  f"{s.evidence['releasing_ack_delay_ns'] / 1e6:.1f} ms after the newest segment it "
                                  "covered")
    # The release as the receiver sent it, from the sender's SYN as it left (the run's t = 0).
    delay = int(values["delay_ns"].value) if "delay_ns" in values else 0
    shift = -delay if vantage == "sender" else delay if vantage == "receiver" else 0
    phase = (at - t0 + shift) % BSD_DELACK_TICK_NS
    phases = _receiver_phases()

    def off(x: int) -> int:
        e = abs(x - phase)
        return min(e, BSD_DELACK_TICK_NS - e)

    best = min(range(len(phases)), key=lambda i: off(phases[i]))
    values["seed"] = Fitted(best + 1, f"the seed whose receiver's 200 ms delayed-ACK tick falls {phase / 1e6:.2f} ms "
                            f"after the connection's start (within {off(phases[best]) / 1e3:.0f} us), as the trace "
                            f"showed it: {how} (the simulator draws each host's tick phase from the seed)")


def _fit_route_mtu(conn: ConnectionAnalysis, d: DirectionAnalysis, values: dict[str, Fitted]) -> None:
    """GigaTCP's unused MSS: both ends offered a larger MSS than any segment used, and none was lost
    for it (the analyzer's mss_mismatch finding): the sender's route held its segments to a
    smaller MTU (Linux `mtu lock`) than the interface MTU its SYN was offered from. The simulator's
    route_mtu does the same: the SYN offers the interface's MSS, the segments fit the route."""
    finding = next((f for f in conn.findings if f.cause == "mss_mismatch" and f.dir == d.dir), None)
    ip = d.profile.get("max_ip_len")
    if finding is None or not ip or "mtu" not in values or ip >= values["mtu"].value:
        return
    values["route_mtu"] = Fitted(int(ip), f"the largest datagram sent ({ip} bytes), under the interface MTU the SYN's "
                                 f"MSS came from ({values['mtu'].value}): the sender's route MTU (the mss_mismatch "
                                 f"finding: {finding.evidence.get('why') if isinstance(finding.evidence, dict) else ''})")


# What-if and calibration changes that configure the path's impairments, not the BulkConfig.
PATH_CHANGES = ("impairments", "atm_switch", "jumbo_nic", "pmtu_hop", "ensemble")


def atm_spec(port: dict[str, Any]) -> Any:
    """The simulator's AtmSwitchSpec of a fitted switch port ({"buffer_cells", "policy",
    "out_rate_bps"}): the fitted link is its input (the access link), cells leave at out_rate_bps."""
    from stallscope.simulate.links.atm import CELL_PAYLOAD
    from stallscope.simulate.links.presets import AtmSwitchSpec

    return AtmSwitchSpec(int(port["buffer_cells"]) * CELL_PAYLOAD, int(port["out_rate_bps"]), str(port["policy"]))


def jumbo_impairments(nic: dict[str, Any]) -> dict[str, Any]:
    """The simulator's jumbo-NIC impairments of a fitted receive-slot pool ({"slots",
    "replenish_ns", "hold_until_acked"})."""
    out: dict[str, Any] = {"jumbo_slots": int(nic["slots"])}
    if nic.get("replenish_ns"):
        out["jumbo_replenish_ns"] = int(nic["replenish_ns"])
    if "hold_until_acked" in nic:
        out["jumbo_hold_until_acked"] = bool(nic["hold_until_acked"])
    return out


# IP over ATM's MTUs: RFC 1626's default for LLC/SNAP over AAL5 (9180) and FORE's (9188 with
# null encapsulation; 9244 over its TAXI links, the simulator's atm140).
ATM_MTUS = (9180, 9188, 9244)


def atm_path(values: dict[str, Fitted], profile: dict[str, Any]) -> str | None:
    """Why the path may be ATM (cells of 48 payload bytes, an AAL5 trailer, a switch port whose
    buffer holds cells), or None: an IP-over-ATM MTU (the sender's interface MTU, or the largest
    datagram it sent)."""
    mtu = values["mtu"].value if "mtu" in values else None
    if mtu in ATM_MTUS:
        return f"the MTU {mtu} is IP over ATM's ({values['mtu'].source}; RFC 1626)"
    if profile.get("max_ip_len") in ATM_MTUS:
        return f"the largest datagram ({profile['max_ip_len']} bytes) is IP over ATM's MTU (RFC 1626)"
    return None


# The largest Ethernet frame without jumbo support (1518 bytes: a 1500-byte datagram): a larger one
# needs a jumbo receive slot at the NIC (Shalunov, GigaTCP; simulate.links.nic).
STANDARD_ETHERNET_DATAGRAM = 1500


def jumbo_path(values: dict[str, Fitted], rows: pl.DataFrame | None, dir_: int) -> str | None:
    """Why the trace's losses may be a receiving NIC short of jumbo receive slots, or a black hole,
    or None: jumbo frames (datagrams above 1500 bytes) were sent, every data segment the sender had
    to resend was first sent as one (a slot pool loses only frames that need a jumbo slot), and some
    resends were jumbo frames too."""
    mtu = values["mtu"].value if "mtu" in values else None
    if rows is None or not mtu or mtu <= STANDARD_ETHERNET_DATAGRAM:
        return None
    data = rows.filter((pl.col("dir") == dir_) & (pl.col("payload_len") > 0) & pl.col("ip_len").is_not_null()
                       & pl.col("seq_rel").is_not_null()).select("seq_rel", "ip_len", "retransmission")
    resent = data.filter(pl.col("retransmission"))
    if resent.is_empty() or int(resent["ip_len"].max()) <= STANDARD_ETHERNET_DATAGRAM:
        # (No resend was a jumbo frame: the sender sent smaller at once, as an ICMP frag-needed tells
        # it to; a black hole or a short slot pool takes jumbo resends too.)
        return None
    # Each resend's first transmission, the one lost: a sender that fell back to smaller segments
    # (Linux's RFC 4821 black-hole detection) re-cuts its resends, so their own sizes hide it.
    first = data.filter(~pl.col("retransmission")).select(
        pl.col("seq_rel").cast(pl.Int64), pl.col("ip_len").alias("_first_len")).sort("seq_rel")
    lost = resent.select(pl.col("seq_rel").cast(pl.Int64), "ip_len").sort("seq_rel").join_asof(
        first, on="seq_rel", strategy="backward")
    sizes = lost.select(pl.coalesce("_first_len", "ip_len")).to_series()
    if int(sizes.min()) <= STANDARD_ETHERNET_DATAGRAM:
        return None
    recut = int(lost["ip_len"].min()) <= STANDARD_ETHERNET_DATAGRAM
    return (f"jumbo frames (MTU {mtu}), and all {resent.height} resent data segments were first sent as jumbo "
            f"frames (the smallest such datagram {int(sizes.min())} bytes"
            + (f"; resent as small as {int(lost['ip_len'].min())} bytes: the sender fell back to smaller segments"
               if recut else "") + "): losses a NIC short of jumbo receive slots, or a hop with a standard MTU, "
            "would cause")


# Retransmissions that mark their segment's earlier transmission as lost: a fast or SACK repair
# (the peer reported the hole) and a timeout's first resend. A timeout's later resends ("other",
# go-back-N) may carry data that had arrived: only those the ACKs show were holes count.
LOSS_KINDS = ("fast", "timeout", "sack")


ACK_LOSS = "ack_loss_timeout"
SPURIOUS = "spurious_timeout"


def _fit_losses(rows: pl.DataFrame | None, dir_: int, values: dict[str, Fitted],
                conn: ConnectionAnalysis | None = None) -> None:
    """The trace's losses, to be replayed on the same segments: each retransmitted segment's
    start (counted from the first data byte) and which of its transmissions the path dropped. In a
    stall the analyzer found to be lost ACKs (ack_loss_timeout: the data had arrived), the ACKs
    are dropped instead (_lost_acks), and the resends in it are no data loss."""
    if rows is None:
        return
    data = rows.filter((pl.col("dir") == dir_) & (pl.col("payload_len") > 0) & ~pl.col("superframe"))
    acks_lost, ack_stalls = _lost_acks(rows, dir_, data, conn)
    resent = data.filter(pl.col("retransmission"))
    # A spurious timeout's resend repeated data that had arrived (its ACK was late, not lost): the
    # run's own timer makes it or not, and a drop replayed there would be a loss the trace never had.
    spurious = [(s.start_frame, s.end_frame) for s in (conn.stalls if conn is not None else ())
                if s.dir == dir_ and s.cause == SPURIOUS]
    for first, last in (*ack_stalls, *spurious):
        resent = resent.filter((pl.col("frame") < first) | (pl.col("frame") > last))
    # A go-back-N resend was a hole when the first ACK to cover it stops exactly at its end: had
    # the receiver held it, that ACK would have run on past it.
    acks = (rows.filter((pl.col("dir") == 1 - dir_) & pl.col("ack_rel").is_not_null())
            .select(pl.col("ack_rel").alias("covered_by")).unique().sort("covered_by"))
    resent = resent.sort("seq_end").join_asof(acks, left_on="seq_end", right_on="covered_by", strategy="forward")
    lost = resent.filter(pl.col("retrans_kind").is_in(LOSS_KINDS)
                         | ((pl.col("retrans_kind") == "other") & (pl.col("covered_by") == pl.col("seq_end"))))
    if lost.is_empty() and not acks_lost:
        return
    values["_retransmissions"] = Fitted(resent.height, "the sender's retransmitted data segments")
    drops: list[tuple[int, int]] = []
    counts: dict[int, int] = {}
    for seq_rel in lost.sort("ts_ns")["seq_rel"].to_list():
        counts[seq_rel] = counts.get(seq_rel, 0) + 1
        drops.append((int(seq_rel) - 1, counts[seq_rel]))
    how = (f"{len(drops)} transmissions the sender had to repeat (fast, SACK or timeout retransmissions, and go-back-N "
           "resends of holes), dropped again at the same bytes")
    out: dict[str, Any] = {"drop_segments": tuple(drops)}
    if acks_lost:
        out["drop_acks"] = tuple(acks_lost)
        how += (f"; in {len(ack_stalls)} stall(s) the analyzer found lost ACKs ({ACK_LOSS}: the data had arrived), "
                f"the peer's ACKs of the data outstanding there dropped instead ({len(acks_lost)} ACK numbers and "
                "transmissions: each segment end up to the ACK that ended the stall, as many times as the sender "
                "timed out)")
    values["impairments"] = Fitted(out, how)


def _lost_acks(rows: pl.DataFrame, dir_: int, data: pl.DataFrame, conn: ConnectionAnalysis | None
               ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The ACKs an ack_loss_timeout stall lost, as drop_acks pairs ((ack offset, k): the k-th pure
    ACK with that ack number, 0 the first data byte), and each such stall's frames (first, last).
    Nothing the sender sent was lost there: the peer's ACKs of it were, from the last ACK heard
    before the stall to the one that ended it: each segment end between them is dropped as many
    times as the sender timed out before that ACK came (the ACK of the last segment and of each
    resend but the last went missing too; the run's flight may end at another segment than the
    trace's; a receiver that acknowledges every other segment sends no ACK at some ends: nothing
    drops there)."""
    if conn is None:
        return [], []
    stalls = [s for s in conn.stalls if s.dir == dir_ and s.cause == ACK_LOSS]
    if not stalls:
        return [], []
    peer = (rows.filter((pl.col("dir") == 1 - dir_) & pl.col("ack_rel").is_not_null())
            .select("frame", "ack_rel").sort("frame"))
    ends = sorted(set(data.filter(~pl.col("retransmission"))["seq_end"].to_list()))
    out: list[tuple[int, int]] = []
    frames: list[tuple[int, int]] = []
    import bisect

    for s in stalls:
        before = peer.filter(pl.col("frame") <= s.start_frame)["ack_rel"].max()
        if before is None:
            continue
        after = peer.filter((pl.col("frame") > s.start_frame) & (pl.col("ack_rel") > before)).head(1)["ack_rel"]
        if after.is_empty():
            continue
        lo, hi = int(before), int(after[0])
        timeouts = int((s.evidence or {}).get("timeouts") or 1) if isinstance(s.evidence, dict) else 1
        between = ends[bisect.bisect_right(ends, lo):bisect.bisect_right(ends, hi)]
        if not between or between[-1] != hi:
            between.append(hi)
        # The run's flight may stop short of the trace's (its last ACK before the stall at another
        # segment end): each end in the range is dropped as often as the sender timed out.
        out += [(e - 1, k) for e in between for k in range(1, timeouts + 1)]
        frames.append((s.start_frame, s.end_frame))
    return out, frames


# Idle periods are a writer's pace when the writes between them (their count x the median bytes
# between two) make up at least this share of the transfer.
PACE_COVERAGE = 0.5
# Where the write size came from when the analyzer read it (analyzers/writes.py).
LATTICE_WRITE = ("the sender's constant write size: the writes' ends (pauses with everything acknowledged, the close) "
                 "at its multiples")

# The receiver's window was the limit: the stalls a slow reading application leaves.
WINDOW_CAUSES = ("receiver_window_limited", "sender_sws", "window_update_deadlock")
# The right edge of the receiver's window moving slower than this share of the path's rate: the
# reader may have been the limit (the calibration tries its pace).
READER_BELOW_RATE = 0.8
UNREAD_SHARE = 0.5


def _fit_pace(conn: ConnectionAnalysis, d: DirectionAnalysis, rows: pl.DataFrame | None,
              values: dict[str, Fitted]) -> None:
    """The applications' pace: a writer that pauses between writes (the sender's idle stalls: the
    pause and the bytes written between two) and a reader slower than the path (the right edge of
    the receiver's window, which moves as the application reads, over the time it moved)."""
    if rows is None:
        return
    from .compare import IDLE

    first = rows.filter((pl.col("dir") == d.dir) & pl.col("new_data") & (pl.col("payload_len") > 0))["frame"].min()
    # A pause in which Nagle held a write's tail until the next write (the analyzer read the writes'
    # size, analyzers/writes.py) is the writer's pause too: its offset is that write's end.
    idle = [(s, o + (s.evidence.get("held_bytes") or 0) if s.cause != IDLE else o)
            for s, o in _stall_points_all(conn, d.dir, rows, IDLE, "nagle_delayed_ack")
            if first is not None and s.start_frame > first and (s.cause == IDLE or _tail_held(s))]
    write_size = next((s.evidence["write_size"] for s, _ in idle if s.cause != IDLE), None)
    clock = next((s.evidence for s in conn.stalls if s.dir == d.dir and s.evidence.get("write_period_ns")), None)
    if clock is not None:
        # A writer on a clock, its writes held by Nagle now and then (so its pauses on the wire are
        # not its own): a write of that size every period, as the analyzer read them.
        period = int(clock["write_period_ns"])
        values["think_ns"] = Fitted(period, "the writer's clock: a write every period (the analyzer's write events, "
                                    "analyzers/writes.py)")
        values["write"] = Fitted(int(clock["write_size"]), LATTICE_WRITE + ", each write on the writer's clock")
        values["_write_cycle"] = Fitted(period, "the writer's clock")
        idle = []
    if len(idle) >= 2:
        offsets = [o for _, o in idle if o >= 0]
        steps = [b - a for a, b in zip(offsets, offsets[1:]) if b > a]
        total = d.profile.get("bytes") or 0
        # A writer's pace shows as pauses between its writes all through the transfer; a few pauses
        # in one stretch (a loaded host that did not run the application for a while) are not how it
        # writes, and replayed between every write they would bound the whole run.
        covered = len(idle) * statistics.median(steps) if steps else 0
        if total and covered < PACE_COVERAGE * total:
            values["_occasional_idle"] = Fitted(len(idle), f"{len(idle)} idle periods between writes, the writes between "
                                                f"them about {covered / total:.0%} of the bytes: occasional pauses, not "
                                                "the writer's pace (not replayed)")
        else:
            pause = int(statistics.median(s.end_ns - s.start_ns for s, _ in idle))
            values["think_ns"] = Fitted(pause, f"the median of the sender's {len(idle)} idle periods between writes "
                                        "(application_idle stalls)")
            if write_size:
                values["write"] = Fitted(int(write_size), LATTICE_WRITE)
            elif steps:
                values["write"] = Fitted(int(statistics.median(steps)), f"the median bytes sent between two idle "
                                         f"periods ({len(steps)}): one write each")
            ends = sorted(s.end_ns for s, _ in idle)
            cycles = [b - a for a, b in zip(ends, ends[1:]) if b > a]
            if cycles:
                # From one write's first segment to the next's: a write the buffer holds whole
                # returns at once, so this is its pause (the wire's quiet is what the pause left
                # after the write drained and its tail waited; calibrate._pace).
                values["_write_cycle"] = Fitted(int(statistics.median(cycles)), f"the median time from one write's "
                                                f"first segment to the next's ({len(cycles)})")
    window_stalls = any(s.dir == d.dir and s.cause in WINDOW_CAUSES for s in conn.stalls)
    acks = (rows.filter((pl.col("dir") == 1 - d.dir) & pl.col("ack_rel").is_not_null()
                        & pl.col("win_scaled").is_not_null() & pl.col("wscale_known")).sort("ts_ns"))
    if acks.height >= 4:
        edge = acks["ack_rel"] + acks["win_scaled"]
        span = acks["ts_ns"][-1] - acks["ts_ns"][0]
        moved = int(edge[-1]) - int(edge[0])
        pace = int(moved * 8e9 / span) if span > 0 and moved > 0 else 0
        rate = values["rate_bps"].value if "rate_bps" in values else None
        # A reader that keeps pace below the path's rate leaves no stall when the window never
        # closes (each read opens it again before the flight fills it): its edge moves slower
        # than the path carries.
        # And data sat unread: on most ACKs the window stayed short of the largest so far by more
        # than a segment (a host slow at both ends reads what arrives, and its window stays open;
        # a window that autotuning grows is short only of its later size).
        mss = values["_segment"].value if "_segment" in values else 0
        wins = acks.filter(~pl.col("flag_syn"))["win_scaled"]
        largest = int(wins.max() or 0)
        short = float((wins < wins.cum_max() - mss).mean() or 0) if wins.len() else 0.0
        slow = bool(pace and rate and pace < READER_BELOW_RATE * rate and short >= UNREAD_SHARE)
        if pace and (window_stalls or slow):
            why = ("window stalls" if window_stalls else
                   f"no window stall, but the edge moved at under {READER_BELOW_RATE:.0%} of the path's {rate} bit/s "
                   f"and the window stayed over a segment short of its largest ({largest}) on {short:.0%} of the ACKs")
            values["_read_rate"] = Fitted(pace, "the right edge of the receiver's window (ACK + window) moved "
                                          f"{moved} bytes in {span / 1e9:.3f} s ({why}): the application's reads, "
                                          "when slower than the path")


def _tail_held(s) -> bool:
    """A Nagle stall whose held bytes were a write's tail, released by the next write."""
    return s.evidence.get("held_tail_from_offset") is not None


def _stall_points_all(conn: ConnectionAnalysis, dir_: int, rows: pl.DataFrame, *causes: str) -> list:
    """Stalls of these causes with the byte offset each began at (compare._stall_points, any cause)."""
    stalls = [s for s in conn.stalls if s.dir == dir_ and s.cause in causes]
    if not stalls:
        return []
    import bisect

    sent = rows.filter((pl.col("dir") == dir_) & pl.col("snd_max").is_not_null()).select("frame", "snd_max").sort("frame")
    frames, highs = sent["frame"].to_list(), sent["snd_max"].to_list()
    out = []
    for s in stalls:
        i = bisect.bisect_right(frames, s.start_frame) - 1
        out.append((s, int(highs[i]) if i >= 0 else -1))
    return out


def _sender_speaks_first(rows: pl.DataFrame, dir_: int) -> bool:
    first = rows.filter(pl.col("new_data") & (pl.col("payload_len") > 0)).sort("ts_ns").head(1)
    return not first.is_empty() and first["dir"][0] == dir_


def _fit_messages(d: DirectionAnalysis, rows: pl.DataFrame, values: dict[str, Fitted]) -> None:
    lengths, _ = responses(rows, d.dir)
    replies, _ = responses(rows, 1 - d.dir)
    if lengths:
        values["write"] = Fitted(int(statistics.median(lengths)), f"median message: the sender's bytes between the "
                                 f"peer's answers ({len(lengths)} messages)")
    if replies:
        values["reply"] = Fitted(int(statistics.median(replies)), f"median answer of the peer ({len(replies)} answers)")


# naglemark's client asks with a request of this many bytes (native/src/sim/naglemark.rs
# REQUEST_BYTES); a peer whose requests are more than this many times larger writes messages of
# its own that the trial cannot carry.
TRIAL_REQUEST_BYTES = 16
MESSAGE_FACTOR = 4


# The bulk run with replies has one message size and one answer size: this share of each at its median.
UNIFORM_SHARE = 0.9


def _peer_writes_messages(rows: pl.DataFrame, dir_: int) -> bool:
    """The peer's requests are messages of one size the trial cannot carry, each answered with one
    size (a server answering varied lengths, an HTTP one say, stays a trial: it replays them)."""
    requests, _ = responses(rows, 1 - dir_)
    answers, _ = responses(rows, dir_)
    if not requests or not answers or statistics.median(requests) <= MESSAGE_FACTOR * TRIAL_REQUEST_BYTES:
        return False
    return all(sum(1 for x in xs if x == statistics.median(xs)) >= UNIFORM_SHARE * len(xs) for xs in (requests, answers))


def _fit_answers(conn: ConnectionAnalysis, d: DirectionAnalysis, rows: pl.DataFrame,
                 values: dict[str, Fitted]) -> None:
    """A bulk run with replies whose sender is the peer (it writes the messages) and whose
    receiver is the trace's data sender (it answers each): the stacks and Nagle settings swapped,
    the peer's messages as the writes, the sender's answers as the reply."""
    other = _other(conn, d)
    requests, _ = responses(rows, 1 - d.dir)
    answers, _ = responses(rows, d.dir)
    mine = values["personality"]
    theirs = values.get("receiver_personality", mine)
    values["personality"] = Fitted(theirs.value, f"the peer writes the messages, so the run's sender is its stack: "
                                   f"{theirs.source}")
    values["receiver_personality"] = Fitted(mine.value, f"the side that answers, the trace's data sender: "
                                            f"{mine.source}")
    nagle = values.pop("nagle", None)
    if nagle is not None and nagle.value is not None:
        values["receiver_nagle"] = Fitted(nagle.value, f"the answering side's: {nagle.source}")
    if other is not None and other.profile.get("nagle") == "off":
        values["nagle"] = Fitted("OFF", "the peer sent short segments while a short one was unacknowledged "
                                 "(its profile.nagle off)")
    sent = (other.profile.get("bytes") if other is not None else None) or sum(requests)
    values["bytes"] = Fitted(int(sent), "the new bytes the peer sent: its messages (its profile.bytes)")
    values["write"] = Fitted(int(statistics.median(requests)), f"the peer's median message: its bytes between the "
                             f"sender's answers ({len(requests)} messages)")
    values["reply"] = Fitted(int(statistics.median(answers)), f"the sender's median answer ({len(answers)} answers)")
    pers = theirs.value
    default = DEFAULT_SNDBUF.get(pers)
    if default:
        values["sndbuf"] = Fitted(default, f"the peer's messages ({values['write'].value} bytes) each fit under the "
                                  f"window, so no flight of its shows S: {pers}'s default send buffer ({default})")
    r = other.profile.get("peer_receive_window_max") if other is not None else None
    if r:
        values["rcvbuf"] = Fitted(int(r), "the largest window the answering side advertised (Moldeklev's R)")
    values["read"] = Fitted(int(r) if r else 65536, "the receive buffer (the reader takes what is there)")


def _other(conn: ConnectionAnalysis, d: DirectionAnalysis) -> DirectionAnalysis | None:
    return next((o for o in conn.directions if o.dir != d.dir), None)


SUNOS_COPIES = "short segments in multiples of 4096 bytes (SunOS 4 sosend copies)"


def sunos_copies(profile: dict[str, Any]) -> bool:
    """Short segments a whole number of SunOS 4's 4096-byte sosend copies long."""
    return any(s % 4096 == 0 for s in profile.get("common_short_segments") or [])


def personality_of(profile: dict[str, Any], delayed_ack: dict[str, Any] | None) -> Fitted:
    """The simulator personality closest to what the trace shows of a stack.

    SACK and timestamps in the SYN mark a modern stack (Linux offers both by default; FreeBSD 4
    timestamps alone); without either the stack predates RFC 1323/2018: a 200 ms delayed-ACK tick
    means the BSD family, and among it an MSS rounded down to a 2048-byte cluster is 4.4BSD's
    tcp_mss (docs/tcp-rules.md#mss-and-buffer-sizing), 4096-byte write pieces SunOS's sosend.
    """
    guess = (profile.get("stack") or {}).get("guess", "unknown")
    sack, ts = profile.get("sack"), profile.get("timestamps")
    timer = (delayed_ack or {}).get("timer")
    if sack:
        return Fitted("linux", "SACK offered in both SYNs (a modern stack; Linux offers it by default)")
    hz = profile.get("_ts_hz")
    if ts and sack is False and hz is not None and hz >= 500:
        return Fitted("linux", f"timestamps ticking at {hz:.0f} Hz (Linux's 1 ms clock), SACK switched off")
    if ts and sack is False:
        return Fitted("freebsd4", "timestamps without SACK (RFC 1323 but not RFC 2018: FreeBSD 4; Linux offers both)"
                      + (f"; timestamps tick at {hz:.0f} Hz (FreeBSD's 10 ms clock)" if hz else ""))
    if ts:
        return Fitted("linux", "timestamps, SACK not known (a SYN missed): Linux, the common modern stack")
    if guess == "linux":
        return Fitted("linux20", "no SACK or timestamps, Linux-like behaviour (stack guess linux): Linux 2.0")
    mss = profile.get("max_segment") or 0
    offered = [x for x in (profile.get("mss_advertised"), profile.get("mss_offered_by_peer")) if x]
    rounded = min(offered) // 2048 * 2048 if offered else mss
    # The largest segment the MSS offered rounded down to a cluster: a buffer or a write smaller than
    # the MSS also gives segments that are multiples of 2048, but not that one.
    if mss > 2048 and mss % 2048 == 0 and mss == rounded:
        return Fitted("bsd44", f"MSS {mss} a multiple of the 2048-byte cluster (4.4BSD tcp_mss rounding)"
                      + (f" below the {min(offered)} offered" if offered and min(offered) != mss else ""))
    if sunos_copies(profile):
        return Fitted("sunos41", SUNOS_COPIES)
    if timer == "tick":
        return Fitted("bsd44", "a 200 ms delayed-ACK tick and no RFC 1323 options (BSD family)")
    return Fitted("bsd44", GENERIC_STACK)


# Each receiver stack's delayed-ACK timer (native/src/sim/tcp/personality.rs, docs/tcp-rules.md):
# the BSD 200 ms tick, FreeBSD 4's 100 ms delack, Linux's minimum ATO of 40 ms (tcp_delack_min),
# Linux 2.0's initial ATO of HZ/3.
DELACK_NS = {"sunos41": 200_000_000, "bsd44": 200_000_000, "tru64": 200_000_000, "freebsd4": 100_000_000,
             "linux": 40_000_000, "linux20": 333_333_333}


def with_delack(fit: Fit, conn: ConnectionAnalysis) -> Fit:
    """The fit with the peer's delayed-ACK timer: the fitted receiver stack's (the reference runs
    with it), beside what the trace showed of the peer's delayed ACKs."""
    recv = fit.value("receiver_personality") or fit.value("personality")
    timer = DELACK_NS.get(recv)
    if timer is None:
        return fit
    d = conn.data_direction
    seen = (d.profile.get("peer_delayed_ack") or {}) if d is not None else {}
    shown = (f"; the trace's delayed ACKs: {seen.get('timer')}, median {seen['delay_median_ns'] / 1e6:.1f} ms, longest "
             f"{seen['delay_max_ns'] / 1e6:.1f} ms (a tick fires anywhere up to its period after the segment)"
             if seen.get("delay_median_ns") and seen.get("delay_max_ns") else "; the trace showed no delayed ACK")
    return fit.with_values({"receiver_delack_ns": Fitted(timer, f"the {recv} receiver's delayed-ACK timer" + shown)})


def ts_clock_hz(rows: pl.DataFrame | None, dir_: int) -> float | None:
    """How fast a sender's TCP timestamps tick (RFC 7323 leaves the clock to the stack: Linux
    1000 Hz, FreeBSD 4 100 Hz): TSval advance over wall time, over at least 100 ms."""
    if rows is None:
        return None
    ts = rows.filter((pl.col("dir") == dir_) & pl.col("opt_ts_val").is_not_null()).sort("ts_ns")
    if ts.height < 2:
        return None
    span = ts["ts_ns"][-1] - ts["ts_ns"][0]
    ticks = (int(ts["opt_ts_val"][-1]) - int(ts["opt_ts_val"][0])) % (1 << 32)
    return ticks / (span / 1e9) if span >= 100_000_000 else None


# Stacks without RFC 1323/2018 options, by how they open the congestion window: 4.4BSD and Tru64
# slow-start from one segment; SunOS 4.1 (Tahoe without slow start on the LAN) and Linux 2.0 send
# what the window allows at once (docs/tcp-rules.md; personality.rs initial_cwnd_segments).
SLOW_START_STACKS = ("bsd44", "tru64")
OPEN_START_STACKS = ("sunos41", "linux20")
OLD_STACKS = SLOW_START_STACKS + OPEN_START_STACKS


def first_flight(rows: pl.DataFrame | None, dir_: int, profile: dict[str, Any]) -> Fitted | None:
    """Whether the sender slow-started: the new bytes it sent before the peer first acknowledged
    data, against the room it had (the peer's first window and the flight's plateau). At most one
    MSS while two fitted: slow start; more than one MSS: none. None when the room did not tell."""
    if rows is None:
        return None
    acks = rows.filter((pl.col("dir") == 1 - dir_) & (pl.col("ack_rel") > 1))
    if acks.is_empty():
        return None
    first_ack = acks["ts_ns"].min()
    sent = int(rows.filter((pl.col("dir") == dir_) & pl.col("new_data") & (pl.col("payload_len") > 0)
                           & (pl.col("ts_ns") < first_ack))["payload_len"].sum())
    offers = [x for x in (profile.get("mss_advertised"), profile.get("mss_offered_by_peer")) if x]
    mss = min(offers) if offers else None
    windows = rows.filter((pl.col("dir") == 1 - dir_) & pl.col("win_scaled").is_not_null())["win_scaled"]
    # A first window of zero (the peer's buffer full when the capture began) leaves no room to tell.
    rooms = [x for x in (int(windows[0]) if windows.len() else None, profile.get("send_buffer_estimate")) if x]
    room = min(rooms) if rooms else None
    if not mss or not sent or not room:
        return None
    if sent > mss:
        return Fitted(False, f"{sent} bytes sent before the first ACK, more than one MSS ({mss}): no slow start")
    if room >= 2 * mss:
        return Fitted(True, f"{sent} bytes sent before the first ACK, one MSS ({mss}) while {room} fitted: slow start")
    return None


# Stacks that round the MSS down to whole mbuf clusters when it exceeds one (tcp_mss; personality.rs
# mclbytes): 4.4BSD's 2048-byte clusters, Tru64's 8192.
MSS_CLUSTER = {"bsd44": 2048, "tru64": 8192}
# Linux 2.0 never offers a window above 32767 (personality.rs max_window).
LINUX20_MAX_WINDOW = 32767
BSD_TICK_NS = 200_000_000


def ttl_ruled_out(ttl: int | None, at_host: bool) -> dict[str, str]:
    """Pre-RFC 1323 stacks a host's IP TTL rules out (simulate.pcap_writer.PERSONALITY_TTL: SunOS
    4.1 and OSF/1 kept 4.3BSD-Tahoe's TCP_TTL of 60, 4.4BSD and Linux send 64). A TTL of 61 to 64
    left an initial 64; one of 60 is the initial TTL only at the host's own tap (`at_host`):
    elsewhere it may be 64 less four routers."""
    from stallscope.simulate.pcap_writer import PERSONALITY_TTL

    if ttl is None or not (60 <= ttl <= 64) or (ttl == 60 and not at_host):
        return {}
    initial = 60 if ttl == 60 else 64
    return {s: (f"packets with a TTL of {ttl}" + (" at the host's own tap" if ttl == 60 else "")
                + f": an initial TTL of {initial}, not {s}'s {PERSONALITY_TTL[s]}")
            for s in OLD_STACKS if PERSONALITY_TTL[s] != initial}


def stacks_ruled_out(profile: dict[str, Any], ttl: int | None = None, at_host: bool = False) -> Fitted | None:
    """Pre-RFC 1323 stacks the trace rules out (None: none): a segment larger than the offered
    MSS rounded down to the stack's cluster (4.4BSD, Tru64); a largest peer window that is not a
    whole number of 4.4BSD's segments (it rounds the receive buffer up to them); a window above
    32767 (Linux 2.0); the host's IP TTL (`ttl`, seen at its own tap when `at_host`: ttl_ruled_out).
    The receiver is taken to run the sender's stack, as the calibration tries them."""
    offered = [x for x in (profile.get("mss_advertised"), profile.get("mss_offered_by_peer")) if x]
    biggest, window = profile.get("max_segment"), profile.get("peer_receive_window_max")
    out: dict[str, str] = dict(ttl_ruled_out(ttl, at_host))
    if offered:
        mss = min(offered)
        for stack, cluster in MSS_CLUSTER.items():
            used = mss // cluster * cluster if mss > cluster else mss
            if biggest and biggest > used:
                out[stack] = f"{biggest}-byte segments, more than {stack}'s {used} (the {mss} offered in {cluster}s)"
        used = mss // 2048 * 2048 if mss > 2048 else mss
        if "bsd44" not in out and window and used and window % used:
            out["bsd44"] = f"a largest window of {window}, not whole {used}-byte segments as 4.4BSD rounds it"
    if window and window > LINUX20_MAX_WINDOW:
        out["linux20"] = f"a window of {window}, above Linux 2.0's {LINUX20_MAX_WINDOW}"
    # The peer's delayed ACKs locked to a free-running 200 ms clock (the BSD tcp_fasttimo tick:
    # stalls.learn_tick), or spread over its period: Linux 2.0's timer is a one-shot ATO rounded
    # to a 10 ms jiffy (docs/tcp-rules.md#delayed-ack-timers).
    tick = profile.get("_peer_tick") or {}
    timer = (profile.get("peer_delayed_ack") or {}).get("timer")
    if "linux20" not in out and (tick.get("period_ns") == BSD_TICK_NS or timer == "tick"):
        out["linux20"] = ("the peer's delayed ACKs on a 200 ms tick ("
                          + (f"{tick['acks_on_phase']} of {tick['acks_held']} held ACKs in one phase window"
                             if tick.get("period_ns") == BSD_TICK_NS else "delays spread over its period")
                          + "), not Linux 2.0's one-shot timer")
    if not out:
        return None
    return Fitted(tuple(sorted(out)), "; ".join(f"not {k}: {v}" for k, v in sorted(out.items())))


def classic_nagle_broken(rows: pl.DataFrame | None, dir_: int) -> Fitted | None:
    """Short segments the classic Nagle rule would have held, sent anyway (None: too few): new
    data below the full segment that ended its burst, sent while data was unacknowledged, with
    room in the peer's window for a full one (not a window edge, unless pushed: a write's tail
    that filled the window) and shorter than half the largest
    window (BSD's tcp_output sends a segment of half the window whatever Nagle says). As many as
    the analyzer calls Nagle off on (inference.NAGLE_OFF_MIN and NAGLE_OFF_SHARE): one can race
    an ACK."""
    from ..inference import NAGLE_OFF_MIN, NAGLE_OFF_SHARE

    if rows is None:
        return None
    # A short segment the sender followed at once with more new data was cut by segmentation
    # (a buffer or copy boundary), not let go past Nagle: only the last of a burst counts.
    both = rows.sort("ts_ns", maintain_order=True).with_columns(
        _burst_goes_on=((pl.col("dir").shift(-1) == pl.col("dir")) & pl.col("new_data").shift(-1)
                        & (pl.col("payload_len").shift(-1) > 0)).fill_null(False))
    st = both.filter((pl.col("dir") == dir_) & (pl.col("payload_len") > 0) & ~pl.col("superframe"))
    if st.height < 2:
        return None
    full = int(st["payload_len"].max())
    window = st["peer_window"].max()
    if not window:
        return None
    st = st.with_columns(_prev_flight=(pl.col("snd_max").shift(1) - pl.col("snd_una")).clip(lower_bound=0))
    short = st.filter(pl.col("new_data") & (pl.col("payload_len") < full))
    # A pushed segment ends its write: one that filled the window exactly was the write's tail, not
    # what a window cut from more data (a 32768-byte message in a 32768-byte window, its 648-byte
    # tail sent with the write's own full segments unacknowledged: Linux 2.0 with TCP_NODELAY).
    room = pl.col("snd_una") + pl.col("peer_window") - pl.col("seq_end")
    broke = short.filter((pl.col("_prev_flight") > 0) & ~pl.col("_burst_goes_on")
                         & (pl.col("payload_len") < int(window) // 2)
                         & ((room >= full - pl.col("payload_len")) | (pl.col("flag_psh") & (room >= 0))))
    if broke.height < max(NAGLE_OFF_MIN, NAGLE_OFF_SHARE * short.height):
        return None
    return Fitted(broke.height, f"{broke.height} of {short.height} short segments went out while data was "
                  "unacknowledged, with room in the window for a full segment and shorter than half of it: "
                  "the classic rule (every pre-RFC 1323 stack's) holds them")


def _fit_stack(d: DirectionAnalysis, conn: ConnectionAnalysis, values: dict[str, Fitted],
               rows: pl.DataFrame | None = None) -> None:
    p = dict(d.profile)
    p["_ts_hz"] = ts_clock_hz(rows, d.dir)
    values["personality"] = personality_of(p, p.get("peer_delayed_ack"))
    named = values["personality"]
    copies = sunos_copies(p)
    start = first_flight(rows, d.dir, p)
    if values["personality"].value in OLD_STACKS:
        if start is not None:
            values["slow_start"] = start
        # Without SunOS's 4096-byte copies, Linux 2.0 first (personality_of names SunOS for them,
        # but after the cluster-rounded MSS a SunOS segment of two copies can show).
        opened = OPEN_START_STACKS if copies else OPEN_START_STACKS[::-1]
        allowed = ((SLOW_START_STACKS if start.value else opened) if start is not None
                   else (values["personality"].value, "sunos41", "bsd44", "tru64", "linux20"))
        # The windows a host advertises tell of its own stack: the sender's own for the sender,
        # where it showed; the peer's for the receiver (a Linux 2.0 client of a newer server).
        other = _other(conn, d)
        own = (other.profile.get("peer_receive_window_max") if other is not None else None) or None

        def ttl_of(x: DirectionAnalysis | None) -> tuple[int | None, bool]:
            """A host's TTL, and whether the tap sat at that host."""
            if x is None:
                return None, False
            return x.profile.get("ttl_max"), (conn.vantage.get(str(x.dir)) or {}).get("vantage") == "sender"

        ruled = stacks_ruled_out({**p, "peer_receive_window_max": own} if own else p, *ttl_of(d))
        # (The receiver's TTL where it tells something of its stack: a TTL of 60 away from it does not.)
        if own or ttl_ruled_out(*ttl_of(other)):
            theirs = stacks_ruled_out(p, *ttl_of(other))
            if theirs is not None and theirs.value != (ruled.value if ruled is not None else ()):
                values["receiver_stacks_ruled_out"] = Fitted(theirs.value, "for the receiver, by its own window: "
                                                             + theirs.source)
        if ruled is not None:
            values["stacks_ruled_out"] = ruled
            by_ttl = tuple(sorted(ttl_ruled_out(*ttl_of(d))))
            if by_ttl:
                # The calibration still searches from them: another start can reach the right
                # stack's closest run by another way (calibrate.refine).
                values["_stacks_ruled_out_by_ttl"] = Fitted(by_ttl, "the sender's TTL")
            allowed = tuple(x for x in allowed if x not in ruled.value) or allowed
        if values["personality"].value not in allowed:
            first = values["personality"]
            why = "; ".join(x.source for x in (start, ruled) if x is not None)
            values["personality"] = Fitted(allowed[0], f"{why}: {' or '.join(dict.fromkeys(allowed))}, not "
                                           f"{first.value} ({first.source})"
                                           + (f"; {SUNOS_COPIES}" if allowed[0] == "sunos41" and copies else ""))
            if allowed[0] == "sunos41" and copies:
                # Still named by the segments: SunOS's copies, once the first guess is ruled out.
                named = values["personality"]
    if values["personality"] is named and named.source != GENERIC_STACK and named.value in OLD_STACKS:
        # A pre-1323 stack the segments named (a cluster-rounded MSS, SunOS's copies), not one
        # left by elimination: the calibration keeps it ahead of the others (calibrate._stacks).
        values["_stack_named"] = Fitted(named.value, named.source)
    other = _other(conn, d)
    if other is not None:
        # The receiver's stack: its own profile, and its delayed-ACK timer as the sender saw it.
        # A receiver that sends no data shows little of its stack; with nothing that tells it
        # apart, it is taken to be the sender's (two hosts of one site run one system).
        rp = dict(other.profile)
        rp.setdefault("sack", p.get("sack"))
        rp["_ts_hz"] = ts_clock_hz(rows, other.dir)
        mine = values["personality"].value
        theirs = personality_of(rp, p.get("peer_delayed_ack"))
        generic = theirs.source == GENERIC_STACK
        if theirs.value == mine or (generic and mine in ("sunos41", "bsd44", "tru64")):
            values["receiver_personality"] = Fitted(mine, f"the sender's stack: {theirs.source}")
        else:
            values["receiver_personality"] = theirs
    if p.get("nagle") == "off":
        values["nagle"] = Fitted("OFF", "short segments sent while a short one was unacknowledged (profile.nagle off)")
    elif p.get("nagle") == "on":
        values["nagle"] = Fitted(None, "Nagle on as the personality does it (profile.nagle on)")
        broke = classic_nagle_broken(rows, d.dir)
        if broke is not None:
            values["_classic_nagle_broken"] = broke
    if p.get("sack") is not None:
        values["sack"] = Fitted(bool(p["sack"]), "SACK permitted in the SYNs" if p["sack"] else "no SACK in the SYNs")


def _fit_path(d: DirectionAnalysis, conn: ConnectionAnalysis, rows: pl.DataFrame | None,
              values: dict[str, Fitted], warnings: list[str]) -> None:
    p = d.profile
    vantage = conn.vantage.get(str(d.dir)) or {}
    rtt = vantage.get("path_rtt_ns")
    if rtt:
        values["delay_ns"] = Fitted(max(1, rtt // 2), f"half the path round trip ({rtt} ns, from the {vantage.get('from')})")
    else:
        values["delay_ns"] = Fitted(1_000_000, "default 1 ms: no round trip measured")
        warnings.append("no path round trip measured: the delay is a default")
    segment = p.get("common_segment") or p.get("max_segment")
    if segment:
        values["_segment"] = Fitted(int(segment), "the full segment's payload as sent")
    adv = p.get("mss_advertised")
    if adv:
        # The interface MTU behind the sender's MSS option: the stack then sizes its segments as it
        # did (options, cluster rounding, the peer's offer), which the segments alone may not show
        # (a send buffer smaller than the MSS never sends a full one).
        values["mtu"] = Fitted(int(adv) + TCP_IP_HEADERS, f"the sender's MSS option ({adv}) + 40: its interface MTU")
    else:
        mss = p.get("common_segment") or p.get("max_segment")
        if mss:
            # The simulator's MSS is the option's value; timestamps then take 12 bytes of each segment.
            ts = 12 if p.get("timestamps") else 0
            values["mss"] = Fitted(int(mss) + ts, ("the full segment the sender sent most (profile.common_segment)"
                                   if p.get("common_segment") else "the largest segment sent (profile.max_segment)")
                                   + (" plus the 12 bytes of the timestamp option" if ts else "") + ": no SYN seen")
        ip = p.get("max_ip_len")
        if ip:
            values["mtu"] = Fitted(int(ip), "the largest datagram sent (profile.max_ip_len)")
        elif mss:
            values["mtu"] = Fitted(int(mss) + TCP_IP_HEADERS, "MSS + 40")
    # A sender silent for a stall's length after an ACK paused (stalls.gap_threshold_ns).
    rate, how = bottleneck_rate(rows, d.dir, vantage.get("vantage"), pause_ns=gap_threshold_ns(rtt))
    if rate:
        values["rate_bps"] = Fitted(rate, how)
        if rtt:
            mtu = values["mtu"].value if "mtu" in values else None
            delay = one_way_delay(rows, rtt, rate, lambda ip: ip, vantage.get("from") == "handshake", mtu)
            values["delay_ns"] = Fitted(delay, f"half the path round trip ({rtt} ns, from the {vantage.get('from')}) "
                                        "less its two packets' serialisation")
    else:
        goodput = d.goodput_bps or 0
        values["rate_bps"] = Fitted(max(int(goodput * 2), 1_000_000), "twice the goodput: too few packet pairs to measure")
        warnings.append("bottleneck rate not measured (too few back-to-back packets): twice the goodput assumed")
    flight = p.get("send_buffer_estimate") or p.get("max_in_flight")
    values["_path"] = Fitted({"rtt": rtt, "vantage": vantage.get("vantage"), "from": vantage.get("from"), "flight": flight},
                             "the path measurements the calibration re-reads per framing")


def bottleneck_rate(rows: pl.DataFrame | None, dir_: int, vantage: str | None,
                    wire: Callable[[int], int] = lambda ip: ip, idle_ns: int = 0,
                    pause_ns: int | None = None) -> tuple[int | None, str]:
    """The path's bottleneck rate in bit/s of wire bytes (`wire`: a datagram's bytes on the link,
    for a candidate framing) from packet spacing: at a tap after the bottleneck (receiver or
    middle) consecutive data packets arrive one serialisation time apart; at the sender, the ACKs
    come back at that spacing (the ACK clock, Jacobson 1988), each for the packets it covers.
    `idle_ns`: a window-limited sender's wait per ACK (the round trip the link stays idle while
    the whole window is out), taken off each ACK's gap. `pause_ns`: see bottleneck_rates."""
    return bottleneck_rates(rows, dir_, vantage, [(wire, idle_ns)], pause_ns=pause_ns)[0]


def bottleneck_rates(rows: pl.DataFrame | None, dir_: int, vantage: str | None,
                     variants: list[tuple[Callable[[int], int], int]],
                     percentile: float = RATE_PERCENTILE, pause_ns: int | None = None) -> list[tuple[int | None, str]]:
    """bottleneck_rate for each (wire, idle_ns) of `variants`, the packets paired once; the rate
    at `percentile` of the pairs'. At the sender's tap, with `pause_ns`: an ACK covering data sent
    that long or more after the ACK before it pairs with nothing: the sender paused between them (a
    writer's think time), so their gap holds the pause, not the path's pace (a 2000-byte write every
    300 ms read as an 82 kbit/s link). The latest data it covers counts: an ACK of a segment sent on
    the ACK before and of the next write's (Linux holding a 10 ms writer's every other write) holds
    the writer's pause too."""
    if rows is None or rows.is_empty():
        return [(None, "")] * len(variants)
    data = rows.filter((pl.col("dir") == dir_) & pl.col("new_data") & (pl.col("payload_len") > 0)
                       & ~pl.col("superframe")).sort("ts_ns")
    sizes = data["ip_len"].unique().to_list()

    def framed(df: pl.DataFrame, wire: Callable[[int], int]) -> pl.DataFrame:
        return df.with_columns(wire=pl.col("ip_len").replace_strict(sizes, [wire(int(x)) for x in sizes],
                                                                     return_dtype=pl.Int64))

    if vantage in ("receiver", "middle"):
        pairs = data.with_columns(gap=pl.col("ts_ns").diff()).filter(pl.col("gap") > 0)
        return [_rate(framed(pairs, wire), f"spacing of consecutive data packets at the {vantage} tap "
                      f"({pairs.height} pairs", percentile) for wire, _ in variants]
    acks = (rows.filter((pl.col("dir") == 1 - dir_) & pl.col("acks_new") & pl.col("ack_rel").is_not_null())
            .sort("ts_ns").select("ts_ns", "ack_rel").with_columns(gap=pl.col("ts_ns").diff()))
    if acks.height < MIN_RATE_SAMPLES or data.is_empty():
        return [(None, "")] * len(variants)
    # Each data packet belongs to the first ACK that covers its end.
    covered = (data.select("seq_end", "ip_len", pl.col("ts_ns").alias("sent_ns")).sort("seq_end")
               .join_asof(acks.sort("ack_rel").select("ack_rel", "ts_ns"), left_on="seq_end", right_on="ack_rel",
                          strategy="forward"))
    out = []
    for wire, idle_ns in variants:
        per_ack = framed(covered, wire).group_by("ts_ns").agg(pl.col("wire").sum(), pl.col("sent_ns").max())
        pairs = acks.join(per_ack, on="ts_ns")
        if pause_ns is not None:
            pairs = pairs.filter(~(pl.col("sent_ns") - (pl.col("ts_ns") - pl.col("gap")) >= pause_ns).fill_null(False))
        pairs = pairs.with_columns(gap=pl.col("gap") - idle_ns).filter(pl.col("gap") > 0)
        out.append(_rate(pairs, "spacing of the peer's ACKs at the sender tap per wire byte of the packets each "
                         f"covers ({pairs.height} ACKs", percentile))
    return out


def sustained_rates(rows: pl.DataFrame | None, dir_: int, vantage: str | None, span_ns: int,
                    wires: list[Callable[[int], int]]) -> list[tuple[int | None, str]]:
    """The rate the path carried the trace's data at, over spans of at least `span_ns` (a path
    round trip): per span from each ACK (or, at a tap after the bottleneck, each data packet), the
    wire bytes covered until the first ACK `span_ns` later over the time between; their median,
    per framing of `wires`. Where consecutive pairs mislead (at a Linux sender's tap each ACK covers
    a GSO burst and the ACKs bunch: a 50 Mbit/s path's 90th percentile is 4.2 Gbit/s), a round
    trip's worth of ACKs still moves at the bottleneck's rate when the window keeps the link busy;
    below it when a window held the flight (then the trace's goodput is what the run must carry)."""
    import numpy as np

    none = [(None, "")] * len(wires)
    if rows is None or rows.is_empty() or span_ns <= 0:
        return none
    data = rows.filter((pl.col("dir") == dir_) & pl.col("new_data") & (pl.col("payload_len") > 0)
                       & ~pl.col("superframe")).sort("ts_ns")
    if data.height < MIN_RATE_SAMPLES:
        return none
    if vantage in ("receiver", "middle"):
        per, what = data.select("ts_ns", "ip_len"), "consecutive data packets at the " + str(vantage) + " tap"
    else:
        acks = (rows.filter((pl.col("dir") == 1 - dir_) & pl.col("acks_new") & pl.col("ack_rel").is_not_null())
                .sort("ack_rel").select("ack_rel", "ts_ns"))
        if acks.height < MIN_RATE_SAMPLES:
            return none
        per = (data.select("seq_end", "ip_len").sort("seq_end")
               .join_asof(acks, left_on="seq_end", right_on="ack_rel", strategy="forward")
               .drop_nulls("ts_ns"))
        what = "the peer's ACKs at the sender tap, per wire byte of the packets they cover"
    sizes = per["ip_len"].unique().to_list()
    out = []
    for wire in wires:
        framed = (per.with_columns(wire=pl.col("ip_len").replace_strict(sizes, [wire(int(x)) for x in sizes],
                                                                         return_dtype=pl.Int64))
                  .group_by("ts_ns").agg(pl.col("wire").sum()).sort("ts_ns"))
        t, w = framed["ts_ns"].to_numpy(), framed["wire"].to_numpy()
        cum = np.concatenate([[0], np.cumsum(w)])
        j = np.searchsorted(t, t + span_ns)
        i = np.nonzero(j < len(t))[0]
        if len(i) < MIN_RATE_SAMPLES:
            out.append((None, ""))
            continue
        j = j[i]
        rates = (cum[j + 1] - cum[i + 1]) * 8e9 / (t[j] - t[i])
        out.append((int(np.median(rates)), f"the rate {what} moved at over spans of one round trip ({span_ns} ns; "
                    f"the median of {len(i)} spans)"))
    return out


def _rate(pairs: pl.DataFrame, how: str, percentile: float = RATE_PERCENTILE) -> tuple[int | None, str]:
    """The rate of (wire bytes, gap) samples: their high percentile, or None with too few."""
    if pairs.height < MIN_RATE_SAMPLES:
        return None, ""
    rates = pairs["wire"].cast(pl.Float64) * 8e9 / pairs["gap"].cast(pl.Float64)
    which = "the fastest pair" if percentile >= 1 else f"{int(percentile * 100)}th percentile"
    return int(rates.quantile(percentile)), f"{how}, {which})"


def one_way_delay(rows: pl.DataFrame | None, rtt: int, rate: int | None, wire: Callable[[int], int],
                  from_handshake: bool, mss_ip: int | None) -> int:
    """The path's one-way propagation delay: half the measured round trip less the time the two
    packets of that round trip took on the wire (the SYN and SYN-ACK, or a full segment and its
    ACK), so the serialisation is not counted twice once the model adds its own."""
    if not rate:
        return max(1, rtt // 2)
    if from_handshake and rows is not None:
        syns = rows.filter(pl.col("flag_syn")).sort("ts_ns")["ip_len"].head(2).to_list()
        sizes = syns if len(syns) == 2 else [44, 44]
    else:
        sizes = [mss_ip or 1500, 40]
    ser = sum(wire(int(x)) for x in sizes) * 8e9 / rate
    return max(1, int((rtt - ser) / 2))


def buffer_size(flight: int) -> int:
    """The socket buffer that held a flight: at least the flight, as set in whole kilobytes; the
    fit takes the next multiple of 4 KB (setsockopt values are round numbers; the kernel's own
    rounding is the personality's)."""
    return -(-flight // 4096) * 4096


# Stacks that settle a send buffer other than the one asked for (native/src/sim/tcp/personality.rs):
# Linux doubles SO_SNDBUF (half is kept for its bookkeeping, sk_sndbuf = 2 x the value); 4.4BSD and
# FreeBSD round the buffers up to whole segments in tcp_mss.
SNDBUF_DOUBLED = ("linux",)
BUFFERS_ROUNDED_TO_MSS = ("bsd44", "freebsd4")
# Each stack's send buffer when the application does not set one (personality.rs default_sndbuf).
DEFAULT_SNDBUF = {"sunos41": 4096, "bsd44": 8192, "freebsd4": 32768, "tru64": 32768, "linux20": 32768, "linux": 65536}


# How far below the peer's largest window an ACK-clocked flight may stay and still be the window's.
WINDOW_SLACK = 0.25


def _sndbuf_floor(d: DirectionAnalysis, values: dict[str, Fitted]) -> None:
    """When something other than the send buffer held the flight (the peer's window, or an
    application that wrote no more than the flight between pauses or answers), the plateau is only
    a floor of S: the stack's default buffer then, where larger (no larger one shows)."""
    s, pers = values.get("sndbuf"), values["personality"].value if "personality" in values else None
    default = DEFAULT_SNDBUF.get(pers)
    plateau = d.profile.get("send_buffer_estimate")
    if s is None or not default or not plateau:
        return
    r = d.profile.get("peer_receive_window_max")
    flight = d.profile.get("max_in_flight") or 0
    mss = values.get("_segment")
    if r and flight >= r and flight > plateau:
        # The flight filled the peer's window at its peak: a buffer holds every unacknowledged byte,
        # so the largest flight is a floor of S, above the plateau below the window (less a FIN's
        # sequence number, which takes no buffer room).
        held, how = sndbuf_request(flight - 1, pers, mss.value if mss else None)
        if held > s.value and held >= default:
            values["sndbuf"] = Fitted(held, f"the largest flight ({flight}) filled the peer's window ({r}): a "
                                      f"buffer holds every unacknowledged byte, so S is at least the flight{how}; "
                                      f"{s.value} from the plateau alone ({s.source})")
            return
    if default <= s.value:
        return
    write = values["write"].value if "write" in values else None
    paced = (values.get("think_ns") is not None or values.get("reply") is not None) and write
    # An ACK-clocked flight dips below the window between ACKs: within a segment of it, or within
    # WINDOW_SLACK of it for a stack its SYN options name (its default is then its own; among the
    # stacks without options, a default would be another stack's as often).
    slack = mss.value if mss else 0
    if pers not in SLOW_START_STACKS + OPEN_START_STACKS:
        slack = max(slack, int(WINDOW_SLACK * (r or 0)))
    if r and plateau >= r - slack:
        why = f"the flight ({plateau}) reached the peer's window ({r})"
    elif paced and plateau <= write + (mss.value if mss else 0):
        why = f"the flight ({plateau}) was no more than a write ({write}) between the application's pauses"
    else:
        return
    values["sndbuf"] = Fitted(default, f"{why}, so S is at least the flight and no more shows: {pers}'s default send "
                              f"buffer ({default}); {s.value} from the flight alone ({s.source})")


def sndbuf_request(plateau: int, personality: str | None, mss: int | None) -> tuple[int, str]:
    """The SO_SNDBUF value behind a measured plateau: the value the stack settles on (doubled,
    rounded to segments) is what the flight shows, so the request is the round number that settles
    there: a whole 4 KB, or the one a segment's rounding took up to the plateau."""
    if personality in SNDBUF_DOUBLED:
        half = buffer_size(-(-plateau // 2))
        return half, f"; half of it asked for ({half}, rounded up to a whole 4 KB): {personality} doubles SO_SNDBUF"
    if personality in BUFFERS_ROUNDED_TO_MSS and mss and plateau % 4096:
        below = plateau // 4096 * 4096
        if below > plateau - mss and below > 0:
            return below, (f"; {below} asked for, which {personality} rounds up to whole {mss}-byte segments: "
                           f"the plateau")
    size = buffer_size(plateau)
    return size, ("; rounded up to a whole 4 KB" if size != plateau else "")


def read_step(rows: pl.DataFrame | None, dir_: int) -> int | None:
    """The receiving application's read size, from its window: the right edge it advertises (ACK
    plus window) moves when the application reads, by what it read (or a window update's share of
    it), so the most common step is the read size. None when no step recurs."""
    if rows is None:
        return None
    acks = rows.filter((pl.col("dir") == 1 - dir_) & pl.col("ack_rel").is_not_null() & pl.col("win_scaled").is_not_null()
                       & pl.col("wscale_known")).sort("ts_ns")
    steps = (acks["ack_rel"] + acks["win_scaled"]).diff().drop_nulls()
    steps = steps.filter(steps > 0)
    if steps.len() < 4:
        return None
    counts = steps.value_counts(sort=True)
    top, n = counts.row(0)
    return int(top) if n >= 0.3 * steps.len() else None


def _fit_bulk(d: DirectionAnalysis, values: dict[str, Fitted]) -> None:
    p = d.profile
    values["bytes"] = Fitted(int(p["bytes"]), "the new bytes the sender sent (profile.bytes)")
    s = p.get("send_buffer_estimate")
    if s:
        pers = values["personality"].value if "personality" in values else None
        mss = values["_segment"].value if "_segment" in values else None
        size, how = sndbuf_request(int(s), pers, mss)
        values["sndbuf"] = Fitted(size, f"the flight's plateau while the peer's window had room ({s} bytes, Moldeklev's "
                                  f"S; a buffer holds at least its flight){how}")
    r = p.get("peer_receive_window_max")
    if r:
        values["rcvbuf"] = Fitted(int(r), "the largest window the peer advertised (Moldeklev's R)")
    pushes = p.get("push_segments") or 0
    write = None
    if pushes > 1 and p.get("bytes"):
        write = int(p["bytes"] / pushes)
    mss = values["_segment"].value if "_segment" in values else None
    short_share = (p.get("short_segments") or 0) / max(p.get("data_packets") or 1, 1)
    if short_share < 0.05:
        # Nearly every segment full: the writes were larger than a segment and ran together.
        values["write"] = Fitted(65536, f"64 KB writes: {short_share:.0%} of the segments are short, so the "
                                 "writes ran together into full segments")
    elif write and mss and write >= mss // 2:
        values["write"] = Fitted(write, f"bytes per PSH-marked segment ({pushes} pushes): one write each")
    else:
        values["write"] = Fitted(65536, "default 64 KB writes: the write pattern is not visible")
    values["read"] = Fitted(int(r) if r else 65536, "the receive buffer (the reader takes what is there)")


def _fit_request_response(d: DirectionAnalysis, rows: pl.DataFrame | None, values: dict[str, Fitted],
                          warnings: list[str]) -> None:
    p = d.profile
    lengths, gaps = responses(rows, d.dir) if rows is not None else ([], [])
    if not lengths:
        lengths = [int(p["bytes"])]
        warnings.append("no request/response boundaries found: one response of all the bytes")
    values["lengths"] = Fitted(lengths, f"{len(lengths)} responses: the sender's new bytes between the peer's requests")
    _fit_turnaround(rows, d.dir, gaps, values)
    pers = values["personality"].value
    nagle = values.get("nagle")
    if nagle is not None and nagle.value == "OFF":
        values["variant"] = Fitted("OFF", nagle.source)
    else:
        # Linux's Nagle test is Minshall's (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay).
        values["variant"] = Fitted("MINSHALL" if pers == "linux" else "NAGLE",
                                   f"Nagle as {pers} implements it")
    s = p.get("send_buffer_estimate")
    values["sockbuf"] = Fitted(max(int(s), 65536) if s else 65536,
                               "the flight's plateau, at least 64 KB (a response rarely fills the buffer)")
    values["app_buf"] = _app_buf(p, rows, d.dir, lengths)
    if p.get("peer_receive_window_max"):
        values["_peer_window"] = Fitted(int(p["peer_receive_window_max"]), "the largest window the peer advertised")
    if rows is not None:
        _fit_host_pace(d, rows, values)


# The sender paced its own responses when most left this many times slower than its fastest.
HOST_PACE_FACTOR = 4
# RTT samples this many times the path's round trip: the peer's delayed ACKs (a Nagle hold) in them.
HELD_RTT_FACTOR = 10


def _fit_host_pace(d: DirectionAnalysis, rows: pl.DataFrame, values: dict[str, Fitted]) -> None:
    """Whether a Linux sender paced its own responses, likely because its RTT samples took in
    Nagle holds (docs/comparison.md, "Request/response captures": the mechanism is inferred).

    Linux keeps the bytes a socket has queued in the host to about 1 ms at its pacing rate, at
    least two segments (TCP small queues, tcp_small_queue_check), and the pacing rate is
    cwnd x MSS / srtt: an RTT sample that waited for the peer's delayed ACK behind a Nagle hold
    (40 ms and more) raises srtt, and the budget falls to two segments per release of the host's
    queue. Then the responses' full segments leave spaced out with no ACK between them, which no
    link after the sender's tap causes. The simulator has no such pace: the calibration makes it up
    with a slower link, which is right for the fitted run, but a change that removes the holds
    (TCP_NODELAY, TCP_CORK) should remove the pace too (the capture pair's TCP_NODELAY side shows
    none), so those what-ifs run at the rate the unpaced responses left at (`_host_pace`)."""
    p = d.profile
    full = p.get("common_segment") or p.get("max_segment")
    path = values.get("_path")
    hs = (path.value.get("rtt") if path else None) or 0
    if values["personality"].value != "linux" or not full or not hs:
        return
    rates = sorted(response_emission_rates(rows, d.dir, int(full)))
    if len(rates) < MIN_PROMPT_ACKS:
        return
    median, fast = rates[len(rates) // 2], rates[int(0.9 * (len(rates) - 1))]
    samples = rows.filter((pl.col("dir") == d.dir) & pl.col("rtt_ns").is_not_null())["rtt_ns"]
    held = int((samples >= HELD_RTT_FACTOR * hs).sum()) if samples.len() else 0
    if median * HOST_PACE_FACTOR > fast or not held:
        return
    values["_host_pace"] = Fitted(
        {"unpaced_rate": int(fast), "paced_rate": int(median)},
        f"the sender paced its responses: of {len(rates)} responses whose full segments no ACK interrupted, half "
        f"left at {median / 1e6:.0f} Mbit/s or slower and a tenth at {fast / 1e6:.0f} Mbit/s or faster, and {held} of "
        f"its RTT samples waited {HELD_RTT_FACTOR} round trips or more (delayed ACKs behind Nagle holds, which raise "
        "Linux's srtt and likely shrank its pacing rate and small-queue budget)")


# At least this many prompt ACKs (ACKs of two or more segments) for their median to count.
MIN_PROMPT_ACKS = 8
# The prompt ACKs took at least this share of the turnaround: the client asked again at once.
ANSWERED_AT_ONCE = 0.9
# A loaded round trip this much above the handshake's is tried as the path's by the calibration.
LOADED_RTT_MARGIN = 1.05


def _fit_turnaround(rows: pl.DataFrame | None, dir_: int, gaps: list[int], values: dict[str, Fitted]) -> None:
    """The client's think time, and the round trip the exchanges met. At the sender's tap the time
    from a response's last byte to the next request (the turnaround) is the last byte's trip, the
    client's think time and the request's trip: the think time is what it holds beyond one round
    trip. Where the peer's ACKs of two or more segments (the newest segment's trip and the ACK's, no
    think time in them) took about as long as the turnaround, the client asked again at once and
    the turnaround is the round trip the responses met under load, which may be longer than the
    handshake's (queueing; a user-space link emulator that reads nothing while it sleeps until the
    next packet's deadline delays a packet arriving behind another by up to its whole delay): kept
    for the calibration to try as the path's (calibrate._delays). Else the think time is the
    turnaround less the handshake's round trip."""
    path = values.get("_path")
    hs = (path.value.get("rtt") if path else None) or 0
    if not gaps:
        values["think_ns"] = Fitted(0, "no turnaround seen (no request after a response): none")
        return
    turnaround = int(statistics.median(gaps))
    prompt = _prompt_ack_delays(rows, dir_) if rows is not None else []
    what = f"the median turnaround ({turnaround} ns from a response's last byte to the next request, {len(gaps)} seen)"
    if len(prompt) >= MIN_PROMPT_ACKS and statistics.median(prompt) >= ANSWERED_AT_ONCE * turnaround:
        ack = int(statistics.median(prompt))
        loaded = max(min(turnaround, ack), hs)
        # (At least none: the handshake's round trip may exceed a turnaround the tap saw, as on a
        # capture filtered to data, where what reads as the handshake is no round trip.)
        values["think_ns"] = Fitted(max(0, turnaround - loaded), f"{what} less one round trip as the responses met it: the "
                                    f"median delay of the peer's {len(prompt)} ACKs of two or more segments ({ack} ns) "
                                    "is about as long, so the client asked again at once")
        if path and hs and loaded > LOADED_RTT_MARGIN * hs:
            values["_path"] = Fitted({**path.value, "loaded_rtt": loaded,
                                      "loaded_rtt_source": f"{what}, the ACKs of two or more segments as long"},
                                     path.source)
        return
    values["think_ns"] = Fitted(max(0, turnaround - hs), f"{what} less the handshake's round trip ({hs} ns)"
                                + (f": the peer's ACKs of two or more segments took less ({len(prompt)} ACKs), so "
                                   "the turnaround holds a think time" if prompt else ""))


def _prompt_ack_delays(rows: pl.DataFrame, dir_: int) -> list[int]:
    """The peer's ACKs of two or more of the sender's segments: each one's delay after the newest
    segment it covers (the state table's ack_delay_ns)."""
    acks = rows.filter((pl.col("dir") != dir_) & (pl.col("ack_segments") >= 2) & pl.col("ack_delay_ns").is_not_null())
    return acks["ack_delay_ns"].to_list()


# The first short segment ends at the same offset in at least this share of the responses.
COMMON_FIRST_WRITE = 0.25


def _app_buf(p: dict[str, Any], rows: pl.DataFrame | None, dir_: int, lengths: list[int]) -> Fitted:
    """The server's write size. On an idle connection a response's first write goes out whole
    (Nagle lets it go): its last segment is short unless the write is whole segments, and the
    writes after it coalesce behind it. So where a response's first short segment other than its
    last ends at the same offset from the response's start in many responses, that offset is a
    write; where the responses start with a full segment and hold no short one but their last,
    each was written at once (the writes at least the largest response); else the bytes per
    PSH-marked segment."""
    pushes = p.get("push_segments") or 0
    full = p.get("common_segment") or p.get("max_segment")
    shape = _response_shapes(rows, dir_, int(full)) if rows is not None and full else None
    if shape is not None and lengths:
        offsets, starts_full, one_short, n = shape
        if offsets:
            offset, count = max(sorted(offsets.items()), key=lambda kv: kv[1])
            if count >= COMMON_FIRST_WRITE * n and offset >= 512:
                return Fitted(offset, f"the first write of a response: in {count} of {n} responses the first short "
                              f"segment before the last ends {offset} bytes in (the first write leaves whole on an "
                              "idle connection)")
        if n and starts_full >= n / 2 and one_short >= 0.9 * n:
            return Fitted(max(lengths), f"the largest response ({max(lengths)} bytes): {starts_full} of {n} responses "
                          f"start with a full segment and {one_short} hold no short segment but their last, so "
                          "each was written at once")
    app_buf = int(round(sum(lengths) / pushes)) if pushes else 4096
    return Fitted(app_buf, f"bytes per PSH-marked segment ({pushes} pushes)")


def _response_shapes(rows: pl.DataFrame, dir_: int, full: int) -> tuple[dict[int, int], int, int, int] | None:
    """Of the sender's responses: how many end their first short segment other than the last at
    each offset from the response's start, how many start with a full segment, how many hold no
    short segment but their last, and how many there are."""
    new = rows.filter(pl.col("new_data") & (pl.col("payload_len") > 0)).sort("ts_ns")
    if new.is_empty():
        return None
    new = new.with_columns(msg=(pl.col("dir") != dir_).cum_sum()).filter(pl.col("dir") == dir_)
    new = new.with_columns(end=pl.col("payload_len").cum_sum().over("msg"),
                           last=pl.col("ts_ns") == pl.col("ts_ns").max().over("msg"))
    per = new.group_by("msg").agg(first=pl.col("payload_len").first(),
                                  early_shorts=((pl.col("payload_len") < full) & ~pl.col("last")).sum())
    early = (new.filter((pl.col("payload_len") < full) & ~pl.col("last")).group_by("msg")
             .agg(pl.col("end").first()))
    offsets: dict[int, int] = {}
    for e in early["end"].to_list():
        offsets[int(e)] = offsets.get(int(e), 0) + 1
    return (offsets, int((per["first"] >= full).sum()), int((per["early_shorts"] == 0).sum()), per.height)


def responses(rows: pl.DataFrame, dir_: int) -> tuple[list[int], list[int]]:
    """The sender's responses as (lengths, think times): the new bytes sent between two of the
    peer's requests (compare.messages), and the time from a response's last byte to the next request."""
    import bisect

    from .compare import messages

    msgs = messages(rows, dir_)
    requests = (rows.filter((pl.col("dir") != dir_) & pl.col("new_data") & (pl.col("payload_len") > 0))
                .sort("ts_ns")["ts_ns"].to_list())
    gaps = []
    for m in msgs:
        i = bisect.bisect_right(requests, m["last_ns"])
        if i < len(requests):
            gaps.append(requests[i] - m["last_ns"])
    return [m["bytes"] for m in msgs], gaps


def response_emission_rates(rows: pl.DataFrame, dir_: int, full: int) -> list[float]:
    """Per response of three or more full segments that no ACK of new data interrupted: the rate
    (bit/s of IP bytes) its full segments left the sender's tap at, from the first to the last."""
    new = rows.filter((pl.col("new_data") & (pl.col("payload_len") > 0)) | ((pl.col("dir") != dir_)
                                                                            & pl.col("acks_new"))).sort("ts_ns")
    if new.is_empty():
        return []
    new = new.with_columns(msg=((pl.col("dir") != dir_) & pl.col("new_data") & (pl.col("payload_len") > 0)).cum_sum())
    out = []
    for _, g in new.group_by("msg", maintain_order=True):
        fulls = g.filter((pl.col("dir") == dir_) & (pl.col("payload_len") >= full))
        if fulls.height < 3:
            continue
        t0, t1 = fulls["ts_ns"][0], fulls["ts_ns"][-1]
        acked = g.filter((pl.col("dir") != dir_) & pl.col("acks_new") & (pl.col("ts_ns") > t0) & (pl.col("ts_ns") < t1))
        if acked.height or t1 <= t0:
            continue
        out.append(float(fulls["ip_len"][1:].sum()) * 8e9 / (t1 - t0))
    return out
