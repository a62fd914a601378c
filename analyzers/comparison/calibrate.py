"""Calibrate what a trace cannot show: the applications' pace, the link's framing and the hosts'
costs, which of the stacks with the same SYN options it was, the write and read sizes and the
exact send buffer behind a measured flight. A Nagle or window-update stall depends on them byte for
byte (Moldeklev & Gunningberg's deadlocks come and go with S, R and the write size), so the fit
runs the simulator over a small grid of plausible values, group by group, and keeps the one whose
run is closest to the trace: its goodput, its number of stalls and its time lost per cause. Each
candidate run is a few milliseconds; the candidates and the choice are reported with the fit."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import product
from typing import Any

from stallscope.simulate.run_bulk import SENDER_ADDR, run_bulk

from ..findings import ConnectionAnalysis
from stallscope.vocabulary import UNDETERMINED

from .compare import IDLE
from .fit import Fit, Fitted
from .fit.buffers import DEFAULT_SNDBUF, SNDBUF_DOUBLED, buffer_size
from .fit.delayed_ack import BSD_DELACK_TICK_NS, TICK_STACKS, receiver_phases
from .fit.path import bottleneck_rates, one_way_delay, sustained_rates
from .fit.stack import OPEN_START_STACKS, SLOW_START_STACKS

COMMON_WRITES = (4096, 8192, 16384, 65536)
# A candidate replaces the first estimate only when its distance is smaller by more than this.
KEEP_FIRST_MARGIN = 0.05
# Above this distance after the groups, they are gone through again, up to PASSES times in all.
SECOND_PASS_SCORE = 0.1
PASSES = 3
# Closer than this, a pass that changed something is not followed by another.
CONVERGED_SCORE = 0.02
MAX_CANDIDATES = 64

# Each group's choice, for reading a fit that went astray (logging at DEBUG).
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    """What a candidate run is held against: the trace's goodput (Mbit/s), its stalls (count, time
    lost per cause) and the time its data took (ns), the normaliser of the time lost."""

    goodput: float
    stalls: int
    lost: dict[str, int]
    duration_ns: int
    # The data segments the trace's sender retransmitted, held against a run's when a path
    # mechanism (an ATM switch port) is tried in place of the replayed losses; None: not compared.
    # (Retransmissions, not the losses inferred from them: both runs count them alike, where a
    # go-back-N resend may or may not have been a hole.)
    retransmissions: int | None = None
    # The peer's ACKs that acknowledged new data, held against a run's where stacks are compared: the
    # receiver's ACK rule shows in them (a BSD receiver acknowledges every other segment or each
    # window update, Linux 2.0 once 8 KB are unacknowledged); None: not compared.
    acks: int | None = None
    # The sender's short segments (new data below the full segment): how many, how many went out
    # while an earlier short one was unacknowledged, and how many while any data was (the analyzer's
    # Nagle evidence, inference.nagle_evidence), held against a run's where Nagle rules are compared;
    # None: not compared.
    shorts: tuple[int, int, int] | None = None


def _score(goodput_model: float, stalls_model: int, lost_model: dict[str, int], target: Target,
           retransmissions_model: int | None = None, acks_model: int | None = None,
           shorts_model: tuple[int, int, int] | None = None) -> float:
    """Distance of a candidate run from the trace: the goodput ratio's log (a factor of two either
    way weighs the same), the relative difference in stall counts, and the difference in time lost
    per cause as a share of the trace's duration (a run that matches the goodput by another
    mechanism, a window limit for a deadlock, is further off); where the trace's losses are
    compared, the log of the ratio of retransmissions (plus one each)."""
    if goodput_model <= 0 or target.goodput <= 0:
        return math.inf
    causes = set(target.lost) | set(lost_model)
    by_cause = sum(abs(target.lost.get(c, 0) - lost_model.get(c, 0)) for c in causes) / max(target.duration_ns, 1)
    losses = (abs(math.log((retransmissions_model + 1) / (target.retransmissions + 1)))
              if target.retransmissions is not None and retransmissions_model is not None else 0.0)
    acks = (abs(math.log((acks_model + 1) / (target.acks + 1)))
            if target.acks is not None and acks_model is not None else 0.0)
    if target.shorts is not None and shorts_model is not None and nagle_shown(shorts_model) != nagle_shown(target.shorts):
        # A Nagle rule whose run does not show the trace's small-segment behaviour is ruled out.
        return math.inf
    return (abs(math.log(goodput_model / target.goodput)) + abs(stalls_model - target.stalls) / max(target.stalls, 1)
            + by_cause + losses + acks)


def nagle_shown(shorts: tuple[int, int, int]) -> str:
    """What short segments (count, behind a short one, behind any data) show of a Nagle rule, as
    the analyzer reads it (inference._nagle): "off" when short segments went out behind an
    unacknowledged short one, "minshall" when only behind full ones, "classic" when never behind
    data, "unknown" without short segments."""
    from ..inference import NAGLE_OFF_MIN, NAGLE_OFF_SHARE

    n, behind_short, behind_any = shorts
    if not n:
        return "unknown"
    if behind_short >= max(NAGLE_OFF_MIN, NAGLE_OFF_SHARE * n):
        return "off"
    return "minshall" if behind_any else "classic"


def _target(conn: ConnectionAnalysis, dir_: int, goodput: float, duration_ns: int, last_frame: int | None = None
            ) -> Target:
    """The trace's Target over its stalls of `dir_` (up to `last_frame`): causes the simulator
    names too (not the analyzer's undetermined)."""
    stalls = [s for s in conn.stalls if s.dir == dir_ and s.cause != IDLE
              and (last_frame is None or s.start_frame <= last_frame)]
    lost: dict[str, int] = {}
    for s in stalls:
        if s.cause != UNDETERMINED:
            lost[s.cause] = lost.get(s.cause, 0) + s.time_lost_ns
    return Target(goodput, len(stalls), lost, duration_ns)


def _candidates(fit: Fit, read_step: int | None, chosen: dict[str, Any] | None = None) -> list[dict[str, int]]:
    s = fit.value("sndbuf")
    r = fit.value("rcvbuf")
    write = fit.value("write")
    # Replayed losses name segments by their first byte: other write sizes would cut them elsewhere.
    replay = bool((fit.value("impairments") or {}).get("drop_segments"))
    # A writer that pauses writes what it wrote between two pauses: its write is measured. So is a
    # peer's message where the answers are the data (data_side): another write would change how many
    # answers, and so the data's bytes, the run carries.
    measured = replay or fit.value("think_ns") or (fit.value("reply") and data_side(fit.bulk_config()))
    writes = [write] if measured else sorted({w for w in (write, *COMMON_WRITES, s) if w})
    reads = sorted({x for x in (read_step, fit.value("read"), 4096, 8192, r) if x})
    # The measured flight is a floor of S (a window or Nagle may have kept it lower): S, its power of
    # two and twice it.
    # And the buffer the stack group chose (a stack tried with one the window limits): the write and
    # read are tried under it too, not only under the flight's.
    held = (chosen or {}).get("sndbuf")
    sndbufs = list(dict.fromkeys(x for x in (s, _pow2(s) if s else None, 2 * s if s else None, held) if x)) or [None]
    first = {"write": write, "read": fit.value("read"), "sndbuf": s}
    out = [first] + [c for c in ({"write": w, "read": rd, "sndbuf": sb} for w, rd, sb in product(writes, reads, sndbufs))
                     if c != first]
    return out[:MAX_CANDIDATES]


# Send buffers tried with the host and the read, as multiples of the flight's floor: where the
# peer's window kept the flight below S, S shows nowhere, and Moldeklev's S = R = 48 KB stalls (a
# sender holding less than a segment of window, released by the reader's next window update)
# come and go with S between the 32 KB floor and the 64 KB the grid above tries.
SNDBUF_BETWEEN = (1, 1.25, 1.5, 1.75, 2)


def _hosted_buffers(fit: Fit, rows: Any, chosen: dict[str, Any], read_step: int | None, score: float
                    ) -> list[dict[str, Any]]:
    """Where the groups end far off the trace and neither the reads nor S showed (the read is the
    receive buffer, S the flight's floor): the host model, the reader's pace, the read and the send
    buffer together, on the chosen link. A host's copies pace the window's right edge as a slow
    reader would, and a window update's timing is set by the read and by how much the sender
    still holds (S): each one changed alone moves a run that stalls like the trace further away (a
    Moldeklev S = R = 48 KB trace: only a Sun IPX host with 8 KB reads and S = 48 KB stalls its 8
    times; the pace group's reader at the edge's 22 Mbit/s, chosen first, then kept every host and
    buffer further off)."""
    if score <= SECOND_PASS_SCORE or chosen.get("atm_switch") or "reader takes what is there" not in (
            fit.values["read"].source if "read" in fit.values else ""):
        return [{}]
    s, r = fit.value("sndbuf"), fit.value("rcvbuf")
    link, rate = chosen.get("link", fit.value("link")), chosen.get("rate_bps", fit.value("rate_bps"))
    hosts = [{k: v for k, v in c.items() if k in ("cost", "delay_ns")} for c in _framed(fit, rows, chosen)
             if c.get("link") == link and c.get("rate_bps") == rate] or [{}]
    pace = [{}, {"read_rate_bps": None}] if chosen.get("read_rate_bps") else [{}]
    reads = [{}, *({"read": x} for x in dict.fromkeys((read_step, 4096, 8192, 16384, r)) if x)]
    sndbufs = [{}, *({"sndbuf": x} for x in dict.fromkeys(
        [buffer_size(int(s * k)) for k in SNDBUF_BETWEEN] + ([r] if r and s < r < 2 * s else [])))] if s else [{}]
    return [{**h, **p, **rd, **sb} for h in hosts for p in pace for rd in reads for sb in sndbufs]


def _writes(fit: Fit) -> list[dict[str, Any]]:
    """The write size alone, before the link and host are chosen, where the trace did not show it
    (its segments all full: the writes ran together, fit.buffers.fit_bulk): a sender's writes decide
    byte for byte where Nagle holds a short segment, so a link chosen under a wrong write makes up
    for stalls the trace never had (a Tru64 sender of 4 KB writes has none; with 64 KB writes the
    same run stalls 13 times). The first estimate first."""
    write = fit.value("write")
    if not write_unseen(fit) or "64 KB writes" not in fit.values["write"].source:
        return [{}]
    return [{}, *({"write": w} for w in COMMON_WRITES if w != write)]


def write_unseen(fit: Fit) -> bool:
    """Whether the segments left the write size unseen: all full (the writes ran together), or
    estimated from the PSH flags, which a BSD stack sets where its send buffer ran empty, not where
    a write ended (tcp_output: the segment reaches the end of the buffered data), so a writer
    blocked on a full buffer shows them where the wire caught up with its copies. A replay, a
    writer's pause or the messages of an exchange measure it."""
    source = fit.values["write"].source if "write" in fit.values else ""
    replay = bool((fit.value("impairments") or {}).get("drop_segments"))
    if replay or fit.value("think_ns") or fit.value("reply"):
        return False
    return "64 KB writes" in source or "PSH-marked" in source


def _pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


# Framings a link may have: none (the IP datagrams alone), AAL5 cells, Ethernet (the presets'
# framings; the fitted rate is converted so the IP throughput stays what the trace showed).
FRAMINGS = ("custom", "atm140", "ethernet10", "fddi")
# Standard links tried at their own rate (simulate.links.presets).
NOMINAL_LINKS = ("ethernet10", "fastethernet", "fddi", "atm140", "gige")
# A standard link is tried at its own rate down to this share of the rate measured at the percentile.
NOMINAL_BELOW_MEASURED = 0.75
# The rate over a round trip is tried as a link where no framing's pair-based rate is within this share of it.
SUSTAINED_APART = 0.25
# ...and only where the flight's plateau held at least this many round trips of the path at that rate.
SUSTAINED_FLIGHTS = 2
# The simulator's host cost models (simulate.host_cost.COST_MODELS): none, and a 1990s workstation.
HOST_MODELS = ("free", "sun_ipx")


def _framed(fit: Fit, rows: Any, chosen: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Per framing, the link with the rate and delay measured again in its wire bytes (with a
    switch port chosen, its access link stays: only the host models are tried)."""
    from stallscope.simulate.links.presets import LINK_PRESETS

    if (chosen or {}).get("atm_switch"):
        first = chosen.get("cost") or fit.value("cost") or HOST_MODELS[0]
        return [_hosted({"delay_ns": chosen.get("delay_ns")} if chosen.get("delay_ns") else {}, cost)
                for cost in (first, *(c for c in HOST_MODELS if c != first))]

    from ..stalls import gap_threshold_ns

    path = fit.value("_path") or {}
    pause = gap_threshold_ns(path.get("rtt"))  # a sender this long silent after an ACK paused
    # The ACK clock either keeps the link busy (the gap is the packets' serialisation) or, with a
    # window smaller than the path holds, leaves it idle a round trip per ACK: both are tried.
    idles = (0, path["rtt"]) if path.get("rtt") and path.get("vantage") not in ("receiver", "middle") else (0,)
    variants = [(link, idle) for link in FRAMINGS for idle in idles]
    rates = bottleneck_rates(rows, fit.dir, path.get("vantage"),
                             [(LINK_PRESETS[link].wire_bytes, idle) for link, idle in variants],
                             pause_ns=pause)
    links = []
    for (link, _idle), (rate, _) in zip(variants, rates):
        wire = LINK_PRESETS[link].wire_bytes
        cand: dict[str, Any] = {"link": link}
        if rate:
            cand["rate_bps"] = rate
            if path.get("rtt"):
                cand["delay_ns"] = one_way_delay(rows, path["rtt"], rate, wire, path.get("from") == "handshake",
                                                 fit.value("mtu"))
        links.append(cand)
    # The measured rate is a floor (waits spread packets out: a stop-and-wait transfer has few
    # back-to-back pairs, or none), so the fastest pair's rate is tried, and each standard link that
    # carries the trace's datagrams at its own rate where that is faster.
    percentile_rate = max((c.get("rate_bps") or 0 for c in links), default=0)
    (top, _), = bottleneck_rates(rows, fit.dir, path.get("vantage"), [(LINK_PRESETS["custom"].wire_bytes, 0)], 1.0,
                                 pause_ns=pause)
    if top and all(top > (c.get("rate_bps") or 0) for c in links):
        cand = {"link": "custom", "rate_bps": top}
        if path.get("rtt"):
            cand["delay_ns"] = one_way_delay(rows, path["rtt"], top, LINK_PRESETS["custom"].wire_bytes,
                                             path.get("from") == "handshake", fit.value("mtu"))
        links.append(cand)
    measured = max((c.get("rate_bps") or 0 for c in links), default=0)
    # And the rate the path carried the data at over a round trip (fit.path.sustained_rates), where the
    # pairs are far from it: at a Linux sender's tap each ACK covers a GSO burst and the ACKs bunch,
    # so the pairs' percentile says 4.2 Gbit/s and the window-limited variant 14 Mbit/s of a path
    # that moved 49 Mbit/s (clean_bulk), and no candidate ran at the path's rate.
    # At the sender's tap only: after the bottleneck consecutive data packets show its spacing
    # directly. And only where the flight held several round trips' worth of the path at that rate
    # (the link was busy): under a window that held the flight, the same rate is the window's, not
    # a link's (tried on the middle-tap corpus, a custom link at the window's rate took Moldeklev's
    # R = 8 KB traces from SunOS to Linux 2.0).
    if path.get("rtt") and path.get("flight") and path.get("vantage") not in ("receiver", "middle"):

        sustained = sustained_rates(rows, fit.dir, path.get("vantage"), int(path["rtt"]),
                                    [LINK_PRESETS[link].wire_bytes for link in FRAMINGS])
        for link, (rate, _) in zip(FRAMINGS, sustained):
            if not rate or path["flight"] * 8e9 < SUSTAINED_FLIGHTS * rate * path["rtt"] or any(
                    abs(rate - (c.get("rate_bps") or 0)) <= SUSTAINED_APART * rate for c in links if c["link"] == link):
                continue
            links.append({"link": link, "rate_bps": rate,
                          "delay_ns": one_way_delay(rows, path["rtt"], rate, LINK_PRESETS[link].wire_bytes,
                                                    path.get("from") == "handshake", fit.value("mtu"))})
    mtu = fit.value("mtu") or 0
    for link in NOMINAL_LINKS:
        preset = LINK_PRESETS[link]
        # ...and one a little slower than the measured percentile: ACKs that bunch (a receiver
        # acknowledging 8 KB at a time, a burst leaving at once) make it overshoot a standard link.
        if preset.mtu >= mtu and (preset.rate_bps > measured
                                  or preset.rate_bps > NOMINAL_BELOW_MEASURED * percentile_rate):
            cand = {"link": link, "rate_bps": preset.rate_bps}
            if path.get("rtt"):
                cand["delay_ns"] = one_way_delay(rows, path["rtt"], preset.rate_bps, preset.wire_bytes,
                                                 path.get("from") == "handshake", fit.value("mtu"))
            links.append(cand)
    # Each link with each host model: a host's per-packet and per-byte costs (copies, checksums,
    # interrupts) shape a trace as much as the link (Moldeklev's Sun IPX bounds 140 Mbit/s ATM
    # near 21 Mbit/s), and pace the ACKs the rate was measured from.
    first = fit.value("cost") or HOST_MODELS[0]
    return [_hosted(cand, cost) for cost in (first, *(c for c in HOST_MODELS if c != first)) for cand in links]


def read_unseen(fit: Fit) -> bool:
    """Whether the reads did not show: the fit's read is the receive buffer (the reader takes what
    is there), and the window's edge showed no reader's pace (the pace group tries a slow reader's
    reads with its pace)."""
    source = fit.values["read"].source if "read" in fit.values else ""
    return "reader takes what is there" in source and not fit.value("_read_rate")


def _joint(fit: Fit, rows: Any, chosen: dict[str, Any], read_step: int | None, score: float) -> list[dict[str, Any]]:
    """Where the groups, one after the other, end far off the trace (above SECOND_PASS_SCORE) and
    the segments showed neither the write nor the read: each link and host with each write and
    read together. A host's copies decide where the wire catches up with the writer and when a
    read opens the window, so the host, the write and the read make a deadlock together, and
    chosen one at a time each is chosen under the others' wrong first estimates (a Sun IPX host
    reading the whole 52 KB buffer at once deadlocks a Moldeklev run its 8 KB reads leave clean;
    a free host at 100 Mbit/s then wins, five times the trace's goodput)."""
    if score <= SECOND_PASS_SCORE or (chosen or {}).get("atm_switch") or not read_unseen(fit):
        return [{}]
    writes = [None, *COMMON_WRITES] if write_unseen(fit) else [None]
    reads = [None, *dict.fromkeys(x for x in (read_step, 4096, 8192, 16384) if x)]
    out = [{}]
    for link in _framed(fit, rows, chosen):
        for w in writes:
            for rd in reads:
                cand = dict(link)
                if w is not None:
                    cand["write"] = w
                if rd is not None:
                    cand["read"] = rd
                out.append(cand)
    return out


def _hosted(cand: dict[str, Any], cost: str) -> dict[str, Any]:
    """A link candidate on a host model: the round trip the delay came from also paid each host's
    per-packet output and input (and half the interrupt latency on average) once each way, which
    the model now adds itself."""
    from stallscope.simulate.host_cost import COST_MODELS

    host = COST_MODELS[cost]
    per_way = host.output_ns_per_packet + host.input_ns_per_packet + host.input_jitter_ns // 2
    out = {**cand, "cost": cost}
    if per_way and cand.get("delay_ns"):
        out["delay_ns"] = max(1, cand["delay_ns"] - per_way)
    return out


def data_side(cfg: Any) -> int:
    """Which host of a bulk run the analyzer takes as the data sender: the one that sent more (0 the
    run's sender, 1 its receiver). A receiver that answers each message with more bytes than the
    message (fit.exchange.fit_answers: the peer wrote the messages) is the data sender."""
    reply, write = getattr(cfg, "reply", 0) or 0, getattr(cfg, "write", 0) or 0
    if not reply or getattr(cfg, "writes", None) is not None or not write:
        return 0
    messages = -(-int(cfg.bytes) // int(write))
    return 1 if messages * reply > cfg.bytes else 0


def data_addr(cfg: Any) -> str:
    from stallscope.simulate.run_bulk import RECEIVER_ADDR

    return RECEIVER_ADDR if data_side(cfg) else SENDER_ADDR


def sender_goodput(res: Any, cols: dict[str, Any] | None = None) -> float:
    """A run's goodput as the analyzer measures it at the sender's tap: new payload bytes x 8 over
    the time from the first to the last data packet, Mbit/s (the simulator's own figure runs from
    the handshake to the last byte read, which differs on short transfers). `cols`: the run's
    trace columns when already read."""
    import numpy as np

    trace = getattr(res.records, "_trace", None)
    if cols is not None or trace is not None:
        cols = cols if cols is not None else trace.columns()
        t, src, seq, plen = (np.asarray(cols[k], dtype=np.int64) for k in ("t", "src", "seq", "payload_len"))
    else:
        recs = [(ts, 0 if seg.src == "10.0.0.1" else 1, seg.seq, seg.payload_len) for ts, seg in res.records]
        if not recs:
            return 0.0
        t, src, seq, plen = (np.asarray(x, dtype=np.int64) for x in zip(*recs))
    mask = (src == data_side(getattr(res, "config", None))) & (plen > 0)
    if mask.sum() < 2:
        return 0.0
    ts, ends, starts = t[mask], seq[mask] + plen[mask], seq[mask]
    span = ts[-1] - ts[0]
    new_bytes = int(ends.max() - starts.min())
    return new_bytes * 8 / (span / 1e9) / 1e6 if span > 0 else 0.0


# The simulator's own goodput (from the connection's establishment to the last byte read) stands
# for the one at the sender's tap when the two spans differ by less than this share: on a long
# run, reading the packets back (tenths of a second per 100,000) buys nothing.
OWN_GOODPUT_ERROR = 0.001


def run_goodput(res: Any, cols: dict[str, Any] | None = None) -> float:
    """A run's goodput as the analyzer measures it at the sender's tap (sender_goodput), Mbit/s;
    on a run long against its path the simulator's own figure, within OWN_GOODPUT_ERROR of it (the
    spans differ by the last segment's trip: one-way delay and serialisation)."""
    from stallscope.simulate.links.presets import LINK_PRESETS

    cfg = res.config
    preset = LINK_PRESETS.get(cfg.link)
    delay = cfg.delay_ns if cfg.delay_ns is not None else (preset.delay_ns if preset else 0)
    rate = cfg.rate_bps or (preset.rate_bps if preset else 0)
    trip = delay + (65_536 * 8e9 / rate if rate else math.inf)
    # The simulator's own figure is its sender's: where the receiver's answers are the data, read them.
    if (res.completed and res.duration_ns and trip <= OWN_GOODPUT_ERROR * res.duration_ns
            and not data_side(cfg)):
        return float(res.goodput_mbit_s)
    return sender_goodput(res, cols)


# Each old stack is also tried with this many times the peer's window as its send buffer.
STACK_SNDBUF_WINDOWS = 2
# Stacks a trace cannot tell apart by their SYN options (none of RFC 1323/2018): the calibration
# tries each; their rules (copy sizes, window updates, delayed ACKs) show in the run they produce.
PRE_1323 = ("sunos41", "bsd44", "tru64", "linux20")


# Stacks that hold a write's short tail while any data is unacknowledged, that write's own full
# segments too (Linux 2.0's partial segment), where BSD's tcp_output decides "idle" once per call.
PER_SEGMENT_NAGLE = ("linux20",)


# Stalls a sender's Nagle rule makes: where the trace has none, the stack it named may have run
# another rule than its own.
NAGLE_HOLDS = ("nagle_delayed_ack", "window_update_deadlock")


def _stack_names(fit: Fit) -> tuple[str, ...]:
    """The pre-1323 stacks the trace leaves, the first estimate first (none for a modern one)."""
    first = fit.value("personality")
    if first not in PRE_1323:
        return ()
    # How the window opened leaves two of them (fit.stack.first_flight).

    start = fit.value("slow_start")
    stacks = PRE_1323 if start is None else SLOW_START_STACKS if start else OPEN_START_STACKS
    # And what the segments and windows rule out (fit.stack.stacks_ruled_out).
    stacks = tuple(x for x in stacks if x not in (fit.value("stacks_ruled_out") or ())) or stacks
    return (first, *(x for x in stacks if x != first))


def _stacks(fit: Fit, target: Target | None = None) -> list[dict[str, Any]]:
    names = _stack_names(fit)
    if not names:
        return [{}]
    first = names[0]
    # The first estimate first: among runs that fit equally well it stays.
    # The receiver runs the sender's stack unless its own window rules that out; then each stack
    # its window leaves (the modern Linux too: without the sender's offer it shows no option).
    theirs = fit.value("receiver_stacks_ruled_out") or ()
    receivers = tuple(x for x in (*PRE_1323, "linux") if x not in theirs)
    out = [{"personality": p, "receiver_personality": r} for p in names
           for r in ((p,) if p not in theirs else receivers)]
    if fit.value("nagle") is None and fit.value("_classic_nagle_broken") and any(
            c["personality"] in PER_SEGMENT_NAGLE for c in out):
        # Short segments ended bursts while data sent before them was unacknowledged, with room for
        # a full one (fit.stack.classic_nagle_broken). A BSD sender decides "idle" once per tcp_output
        # call, so a burst begun idle sends its tail; Linux 2.0 keeps a tail written while data is
        # unacknowledged unless TCP_NODELAY is set (docs/tcp-rules.md#linux-20-partial-segment):
        # for Linux 2.0, also Nagle off (TCP_NODELAY, Salamon's senders), after every
        # stack with its own rule (one about as close stays; None: a later pass takes an earlier
        # pass's choice back out).
        out = [*({**c, "nagle": None} for c in out),
               *({**c, "nagle": "OFF"} for c in out if c["personality"] in PER_SEGMENT_NAGLE)]
    if (fit.value("_stack_named") == first and fit.value("nagle") is None and target is not None
            and not any(target.lost.get(c) for c in NAGLE_HOLDS)):
        # The stack the segments named, run with its own Nagle rule, may hold a short segment
        # where the trace shows no hold (4.4BSD's classic rule deadlocks a 2-segment window until
        # its 200 ms tick; the sender ran another of Mogul's variants): the stack is then tried
        # with Nagle off too, ahead of the others, so that a stack the segments rule against does
        # not win by its own rule's luck (SunOS's 4096-byte copies never leave the short piece).
        mine = [c for c in out if c["personality"] == first and "nagle" not in c]
        out = [*mine, *({**c, "nagle": "OFF"} for c in mine), *(c for c in out if c not in mine)]
    r = fit.value("rcvbuf")
    if r:
        # The flight shows S only as a floor (a window held it, or none showed it at all: each stack
        # would run with its own default, SunOS's 4 KB smaller than the window): a stack run with
        # a buffer below the true one loses to another stack that makes up for it. Each stack is
        # also tried with a buffer the window, not S, limits.
        out = [x for c in out for x in (c, {**c, "sndbuf": STACK_SNDBUF_WINDOWS * int(r)})]
    return out


# The simulator's Nagle variants (native/src/sim/nagle.rs: Mogul & Minshall's table 3, Moldeklev's
# UNACKED-MSS and Linux's TCP_CORK); NAGLE is the BSD stacks' own rule, MINSHALL Linux's.
NAGLE_VARIANTS = ("NAGLE", "OFF", "MINSHALL", "MSMV", "EOM", "E+M", "MIN+MORE", "DLDET", "E+M+M", "E+M+D",
                  "BORMAN", "UNACKED-MSS", "CORK")


def _run_score(fit: Fit, changes: dict[str, Any], target: Target) -> float | None:
    res = _bulk_run(fit, changes)
    if res is None:
        return None
    stalls, lost = sender_stalls(res)
    return _score(sender_goodput(res), stalls, lost, target, res.retransmits,
                  run_acks(res) if target.acks is not None else None,
                  run_shorts(res) if target.shorts is not None else None)


def _bulk_run(fit: Fit, changes: dict[str, Any]):
    """The fitted bulk run with `changes`, or None where the configuration is refused."""
    try:
        return run_bulk(fit.bulk_config(**changes), impairments=fit.impairments(changes))
    except ValueError:
        return None


def sender_stalls(res) -> tuple[int, dict[str, int]]:
    """The data sender's stalls in a run (idle left out): how many, and the time lost per cause."""
    addr = data_addr(getattr(res, "config", None))
    mine = [s for s in res.stalls if s.direction.startswith(addr + ":") and s.cause.value != IDLE]
    lost: dict[str, int] = {}
    for s in mine:
        lost[s.cause.value] = lost.get(s.cause.value, 0) + s.duration_ns
    return len(mine), lost


def run_acks(res: Any) -> int | None:
    """A run's ACKs from the receiver that acknowledged new data (None: its packets are not at hand)."""
    import numpy as np

    trace = getattr(res.records, "_trace", None)
    if trace is None:
        return None
    cols = trace.columns()
    src, ack = np.asarray(cols["src"]), np.asarray(cols["ack"], dtype=np.int64)
    mine = ack[src == 1 - data_side(getattr(res, "config", None))]
    return int((np.diff(mine) > 0).sum()) if mine.size > 1 else 0


def run_shorts(res: Any) -> tuple[int, int, int] | None:
    """A run's short segments from its data sender, as trace_shorts counts them in a trace (None:
    its packets are not at hand)."""
    import numpy as np

    trace = getattr(res.records, "_trace", None)
    if trace is None:
        return None
    cols = trace.columns()
    side = data_side(getattr(res, "config", None))
    t = np.asarray(cols["t"], dtype=np.int64)
    src, seq = np.asarray(cols["src"]), np.asarray(cols["seq"], dtype=np.int64)
    plen, ack = np.asarray(cols["payload_len"], dtype=np.int64), np.asarray(cols["ack"], dtype=np.int64)
    order = np.argsort(t, kind="stable")
    src, seq, plen, ack = src[order], seq[order], plen[order], ack[order]
    mine = (src == side) & (plen > 0)
    if not mine.any():
        return (0, 0, 0)
    full = int(plen[mine].max())
    una = snd_max = None
    last_short_end = None
    n = behind_short = behind_any = 0
    for is_mine, s, n_bytes, a in zip(src == side, seq.tolist(), plen.tolist(), ack.tolist()):
        if not is_mine:
            una = a if una is None else max(una, a)
            continue
        if n_bytes <= 0:
            continue
        end = s + n_bytes
        new = snd_max is None or end > snd_max
        if new and n_bytes < full:
            n += 1
            acked = una if una is not None else s
            if last_short_end is not None and last_short_end > acked:
                behind_short += 1
            if snd_max is not None and snd_max > acked:
                behind_any += 1
            last_short_end = end
        snd_max = end if snd_max is None else max(snd_max, end)
    return (n, behind_short, behind_any)


def trace_shorts(rows: Any, dir_: int, upto: int | None = None) -> tuple[int, int, int] | None:
    """The trace's short segments of new data from the sender (of the first `upto` bytes): how
    many, how many went out while an earlier short one was unacknowledged, how many while any data
    was (inference.nagle_evidence's counts, against the largest segment sent)."""
    import polars as pl

    if rows is None:
        return None
    st = rows.filter((pl.col("dir") == dir_) & (pl.col("payload_len") > 0) & ~pl.col("superframe")).sort("ts_ns")
    if st.is_empty():
        return None
    full = int(st["payload_len"].max())
    st = st.with_columns(_short=pl.col("new_data") & (pl.col("payload_len") < full))
    st = st.with_columns(
        _short_end=pl.when(pl.col("_short")).then(pl.col("seq_end")).forward_fill().shift(1),
        _prev_flight=(pl.col("snd_max").shift(1) - pl.col("snd_una")).clip(lower_bound=0))
    if upto is not None:
        st = st.filter(pl.col("seq_end") - 1 <= upto)
    short = st.filter(pl.col("_short"))
    return (short.height, int((short["_short_end"] > short["snd_una"]).sum()),
            int((short["_prev_flight"] > 0).sum()))


def trace_acks(rows: Any, dir_: int, upto: int | None = None) -> int | None:
    """The trace's ACKs of the peer that acknowledged new data (of the first `upto` bytes)."""
    import polars as pl

    if rows is None:
        return None
    acks = rows.filter((pl.col("dir") == 1 - dir_) & pl.col("acks_new") & pl.col("ack_rel").is_not_null())
    if upto is not None:
        acks = acks.filter(pl.col("ack_rel") - 1 <= upto)
    return acks.height


# The ATM switch port tried in place of the replayed losses: its buffer in whole PDUs of the trace's
# largest datagram (a port is sized in cells; what matters to TCP is how many PDUs it holds), each
# discard policy, the output rate (the cell rate the trace's ACK clock measured, at the median and
# the 90th percentile, and OC-3's payload rate) and the access link feeding it (OC-3's line rate, or
# OC-12: a faster access link fills the port faster).
ATM_BUFFER_PDUS = (1, 2, 3, 4, 6, 8, 12, 16)
ATM_POLICIES = ("none", "ppd", "epd")
OC3_LINE_BPS = 155_520_000
OC12_LINE_BPS = 622_080_000
ATM_ACCESS_BPS = (OC3_LINE_BPS, OC12_LINE_BPS)
# The cell rate from the ACK clock is noisy at a sender's tap (ACKs bunch and spread): several of
# its percentiles are tried, and the standard cell rates (TAXI 140 Mbit/s, OC-3's payload).
ATM_RATE_PERCENTILES = (0.5, 0.75, 0.9)
ATM_CELL_RATES = (140_000_000, 149_760_000)
# Output rates closer than this share stand for one another.
SAME_RATE = 0.03


def _atm_ports(fit: Fit, rows: Any) -> list[dict[str, Any]]:
    """Where the path may be ATM and the trace lost data: a switch port (buffer, discard policy,
    output rate) in place of the replayed losses, on an AAL5-framed access link. The first candidate
    is the replay itself (no port)."""
    if not fit.value("_atm_path"):
        return [{}]
    from stallscope.simulate.links.atm import aal5_cells, aal5_wire_bytes

    path = fit.value("_path") or {}
    mtu = fit.value("mtu") or 9180
    measured = [r for q in ATM_RATE_PERCENTILES
                for r, _ in bottleneck_rates(rows, fit.dir, path.get("vantage"), [(aal5_wire_bytes, 0)], q) if r]
    # And the cell rate the ACKs moved the data at over a round trip (fit.path.sustained_rates): at a
    # Linux sender's tap the pairs bunch (atm_epd's median pair 142.5 Mbit/s, 90th percentile 238,
    # where the emulator's cells left at 135), and a port fitted faster than the path's fills
    # slower from its access link, so the run's flight waits in the queue before the port instead
    # (44 ms round trips where the trace's were 4-6 ms) and each timeout lasts that much longer.
    if path.get("rtt") and path.get("vantage") not in ("receiver", "middle"):

        (sustained, _), = sustained_rates(rows, fit.dir, path.get("vantage"), int(path["rtt"]), [aal5_wire_bytes])
        if sustained:
            measured.append(sustained)
    outs: list[int] = []
    for r in (*measured, *ATM_CELL_RATES):
        if all(abs(r - o) > SAME_RATE * o for o in outs):
            outs.append(int(r))
    pdu = aal5_cells(mtu)
    # The replay first (as chosen so far), then the replay after a port chosen in a first pass.
    out: list[dict[str, Any]] = [{}, {"atm_switch": None}]
    for out_rate in outs:
        for access in ATM_ACCESS_BPS:
            if access <= out_rate:
                continue
            link: dict[str, Any] = {"link": "oc3", "rate_bps": access}
            if path.get("rtt"):
                link["delay_ns"] = one_way_delay(rows, path["rtt"], out_rate, aal5_wire_bytes,
                                                 path.get("from") == "handshake", mtu)
            for k in ATM_BUFFER_PDUS:
                for policy in ATM_POLICIES:
                    out.append({**link, "atm_switch": {"buffer_cells": k * pdu, "policy": policy,
                                                       "out_rate_bps": out_rate, "access_rate_bps": access}})
    return out


# The ports a what-if on the switch runs on: up to ENSEMBLE_SIZE within ENSEMBLE_MARGIN of the
# closest one's distance (the median of their predictions is the prediction).
ENSEMBLE_MARGIN = 0.25
ENSEMBLE_SIZE = 5


# A receiving NIC's jumbo receive slots tried in place of the replayed losses: the pool's size, and
# how a slot comes back (when the frame's data is acknowledged, as the Tigon II driver's, or a
# fixed time after use: a host that replenishes its ring late).
JUMBO_SLOTS = (4, 8, 16, 32, 64, 128, 256, 384, 512)
JUMBO_RELEASE_NS = (None, 100_000, 1_000_000, 10_000_000)


# A hop with a smaller MTU than the hosts' drops every larger datagram (a black hole: its ICMP
# frag-needed never reaches the sender) or tells the sender to send smaller (RFC 1191): the MTUs of
# Ethernet, PPPoE and IPv6's minimum link.
HOP_MTUS = (1500, 1492, 1280)
HOP_MODES = ("blackhole", "icmp")
# The stacks whose simulator personality implements RFC 4821 black-hole detection (mtu_probing).
MTU_PROBING_STACKS = ("linux",)


def _jumbo_nics(fit: Fit) -> list[dict[str, Any]]:
    """Where the trace's losses were all jumbo frames: a receiving NIC with too few jumbo slots, or
    a hop with a standard MTU, in place of the replayed losses. The first candidates are the replay
    itself (no NIC, no hop)."""
    out: list[dict[str, Any]] = [{}, {"jumbo_nic": None, "pmtu_hop": None, "mtu_probing": None}]
    # A black hole with the sender's RFC 4821 detection on (Linux's tcp_mtu_probing=1: after its
    # timeouts it falls back to smaller segments), where its stack has it.
    probing = (None, 1) if fit.value("personality") in MTU_PROBING_STACKS else (None,)
    for mtu in HOP_MTUS:
        for mode in HOP_MODES:
            for probe in (probing if mode == "blackhole" else (None,)):
                out.append({"pmtu_hop": {"mtu": mtu, "mode": mode}, "jumbo_nic": None, "mtu_probing": probe})
    for slots in JUMBO_SLOTS:
        for release in JUMBO_RELEASE_NS:
            nic: dict[str, Any] = {"slots": slots, "hold_until_acked": release is None}
            if release is not None:
                nic["replenish_ns"] = release
            out.append({"jumbo_nic": nic, "pmtu_hop": None, "mtu_probing": None})
    return out


def _path_mechanisms(fit: Fit, rows: Any) -> list[dict[str, Any]]:
    """The mechanism behind the trace's losses, where the trace supports one: an ATM switch port
    (_atm_ports) or a NIC short of jumbo slots (_jumbo_nics); else only the replay."""
    if fit.value("_atm_path"):
        return _atm_ports(fit, rows)
    if fit.value("_jumbo_path"):
        return _jumbo_nics(fit)
    return [{}]


# Multiples of the window's measured pace tried for a slow reader.
READER_FACTORS = (1, 1.05, 1.1, 1.15, 1.25, 1.5, 2)
# Candidates measured from the trace under another name than the simulator's input.
MEASURED_AS = {"read_rate_bps": "_read_rate"}


def _pace(fit: Fit, chosen: dict[str, Any], read_step: int | None = None) -> list[dict[str, Any]]:
    """The applications' pace: a writer's pause as the wire showed it or lengthened by the time the
    write took to drain from the send buffer (the pause began when the write was copied, not when
    the wire went quiet); a reader at the pace the window's right edge moved, or as fast as the host copies."""
    think = fit.value("think_ns")
    thinks: list[int | None] = [think] if think else [None]
    s, rate = chosen.get("sndbuf", fit.value("sndbuf")), chosen.get("rate_bps", fit.value("rate_bps"))
    write = chosen.get("write", fit.value("write"))
    if think and s and rate and write:
        # A write returns once its last byte is in the buffer: the wire drains the write (or the
        # buffer, when the write was larger) during the pause before going quiet.
        thinks.append(think + int(min(write, s) * 8e9 / rate))
    cycle = fit.value("_write_cycle")
    if think and cycle and s and write and write <= s and cycle > think:
        # A write the buffer holds whole returns at once: the writer pauses the whole cycle from one
        # write to the next, its tail's wait for an ACK (a Nagle hold) included.
        thinks.append(cycle)
    thinks = list(dict.fromkeys(thinks))
    read_rate = fit.value("_read_rate")
    # A slow reader's pace depends on its read size (each read is a copy the window waits for): the
    # right edge's common step, the fitted read and two small ones.
    reads = [x for x in dict.fromkeys((read_step, fit.value("read"), 2048, 4096)) if x] if read_rate else []
    # The right edge's average pace is a floor of the reader's: it idles when the buffer runs dry.
    readers: list[dict[str, Any]] = [{"read_rate_bps": None}] + [
        {"read_rate_bps": int(read_rate * k), "read": rd} for k in READER_FACTORS for rd in reads]
    return [{"think_ns": t, **r} for t in thinks for r in readers]


# Request/response: the bottleneck rate measured from ACK spacing is only a floor when responses
# are short (the link idles between them); these multiples of it, and a rate no LAN limits, are tried.
RATE_FACTORS = (1, 2, 5, 10)
UNLIMITED_BPS = 10_000_000_000
# The naglemark client's receive window: its stack's default buffer, at most 65535 without window
# scaling (native/src/sim/naglemark.rs, personality.rs default_rcvbuf).
TRIAL_CLIENT_WINDOW = 65535


# Where the trace showed no ACK held on a BSD receiver's 200 ms delayed-ACK tick, its phase is tried
# every TICK_PHASE_STEP_NS over the tick (a deadlock the trace does not have must end within the
# analyzer's 10 ms stall threshold, so a window of 10 ms holds the phases that fit; a step of half
# that lands in it), then every millisecond up to TICK_PHASE_FINE_NS either side of the closest.
TICK_PHASE_STEP_NS = 5_000_000
TICK_PHASE_FINE_NS = 4_000_000


def _tick_phases(fit: Fit, chosen: dict[str, Any] | None = None, fine: bool = False) -> list[dict[str, Any]]:
    """Where the receiver may run a BSD stack (a free-running 200 ms delayed-ACK tick) and the trace
    showed no ACK held on it (fit.delayed_ack.fit_tick_phase left the seed as it was): the seeds whose receiver
    tick falls at phases spread over the tick (`fine`: around the phase chosen). Unseen, the phase
    still decides whether a short transfer deadlocks until the tick or never stalls (a Tru64 sender
    of 4 KB writes over FDDI, MIN+MORE: seed 1's tick held it 120 ms where the trace had no stall,
    and the groups made up for the stall with another link and write, 35 % fast; only phases 1-10 ms
    from its start fit it)."""

    seed = fit.values.get("seed")
    if seed is None or not seed.source.startswith("fixed"):
        return [{}]
    stacks = {fit.value("receiver_personality") or fit.value("personality"), *_stack_names(fit)}
    if not stacks & set(TICK_STACKS):
        return [{}]
    phases = receiver_phases()

    def apart(a: int, b: int) -> int:
        return min(abs(a - b) % BSD_DELACK_TICK_NS, BSD_DELACK_TICK_NS - abs(a - b) % BSD_DELACK_TICK_NS)

    def nearest(at: int) -> int:
        return 1 + min(range(len(phases)), key=lambda i: apart(phases[i], at))

    now = (chosen or {}).get("seed", seed.value)
    if fine:
        if now == seed.value:
            return [{}]
        at = phases[now - 1]
        grid = (at + k for k in range(-TICK_PHASE_FINE_NS, TICK_PHASE_FINE_NS + 1, 1_000_000) if k)
    else:
        grid = range(0, BSD_DELACK_TICK_NS, TICK_PHASE_STEP_NS)
    seeds = dict.fromkeys(nearest(x % BSD_DELACK_TICK_NS) for x in grid)
    return [{}, *({"seed": x} for x in seeds if x != now)]


def _exchange_times(rows: Any, dir_: int, rtt: int | None, think_ns: int = 0) -> list[int | None]:
    """The trace's response times as the requesting client saw them, one per response in order
    (None before the first request): from each request reaching the sender's tap to the response's
    last byte leaving it, plus the round trip that followed it (the turnaround to the next request,
    less the client's think time `think_ns`: the last byte's trip and the next request's, as
    this exchange's path met them), or `rtt` for the last response."""
    from .compare import messages

    if rows is None:
        return []
    import polars as pl

    import bisect

    reqs = (rows.filter((pl.col("dir") != dir_) & pl.col("new_data") & (pl.col("payload_len") > 0))
            .sort("ts_ns")["ts_ns"].to_list())
    out: list[int | None] = []
    for m in messages(rows, dir_):
        i = bisect.bisect_right(reqs, m["first_ns"]) - 1  # the last request before the response began
        if i < 0:
            out.append(None)
            continue
        j = bisect.bisect_right(reqs, m["last_ns"])  # the next request after its last byte
        trip = max(0, reqs[j] - m["last_ns"] - think_ns) if j < len(reqs) else (rtt or 0)
        out.append(m["last_ns"] - reqs[i] + trip)
    return out


def _delays(fit: Fit, rows: Any, rate: int) -> list[tuple[int, str]]:
    """The one-way delays tried at `rate`: the fitted one (the handshake's round trip), and where
    the responses met a longer one (fit.exchange.fit_turnaround) than the queue they could build at `rate`
    explains, that round trip less a full segment's and an ACK's serialisation at `rate`."""

    path = fit.value("_path") or {}
    out = [(int(fit.value("delay_ns")), "")]
    loaded = path.get("loaded_rtt")
    lengths = fit.value("lengths") or [0]
    # The queue a response can meet at `rate` (its own bytes, at most the send buffer): a longer
    # round trip under load that this explains is the link's, which the trial makes itself.
    queue_ns = min(max(lengths), fit.value("sockbuf") or max(lengths)) * 8e9 / rate
    if loaded and loaded - (path.get("rtt") or 0) > queue_ns:
        mtu = fit.value("mtu")
        d = one_way_delay(rows, int(loaded), rate, lambda ip: ip, False, mtu)
        out.append((d, f"half the round trip the responses met ({loaded} ns: {path.get('loaded_rtt_source')}) less "
                       "a full segment's and an ACK's serialisation"))
    return out


def _refine_request_response(fit: Fit, rows: Any) -> Fit:
    """The path of a request/response fit, rate and one-way delay, by simulation: each candidate
    trial's response times against the trace's, response by response (the same lengths in the same
    order), as the mean log ratio, plus the relative difference in slow responses (over three times
    the trace's median). Per response, not only the median: a slower link stretches the long
    responses, a longer delay every one, which the trace tells apart."""
    from stallscope.simulate.apps.naglemark import run_trial

    path = fit.value("_path") or {}
    think = int(fit.value("think_ns") or 0)
    exchanges = _exchange_times(rows, fit.dir, path.get("loaded_rtt") or path.get("rtt"), think)
    trace = sorted(t for t in exchanges if t is not None)
    rate = fit.value("rate_bps")
    if not trace or not rate:
        return fit
    median_trace = trace[len(trace) // 2]
    slow_trace = sum(1 for t in trace if t > 3 * median_trace)
    lengths = fit.value("lengths") or []
    # The trial's client keeps its stack's default receive buffer (the trial has no knob for it):
    # where the trace's peer advertised more (Linux autotunes it), a response longer than the
    # trial's window takes it a round trip more, which no path explains: those are held out.
    peer_window = fit.value("_peer_window") or 0
    window = TRIAL_CLIENT_WINDOW if peer_window > TRIAL_CLIENT_WINDOW else max(lengths, default=0)
    scored = []
    for r in sorted({*(rate * k for k in RATE_FACTORS), UNLIMITED_BPS}):
        for delay, how in _delays(fit, rows, int(r)):
            args = fit.trial_args(rate_bps=int(r), delay_ns=delay)
            try:
                res = run_trial(**{k: v for k, v in args.items() if k != "link"}, link=args["link"])
            except (ValueError, KeyError, RuntimeError):
                continue
            times = [s.elapsed_ns for s in res.samples]
            pairs = [(m, t) for m, t, n in zip(times, exchanges, lengths) if t is not None and m > 0 and t > 0
                     and n <= window]
            if not pairs:
                continue
            slow = sum(1 for m, _ in pairs if m > 3 * median_trace)
            score = (sum(abs(math.log(m / t)) for m, t in pairs) / len(pairs)
                     + abs(slow - slow_trace) / max(slow_trace, 1))
            scored.append((score, int(r), delay, how))
    if not scored:
        return fit
    score, best, delay, how = min(scored, key=lambda x: x[0])
    values = dict(fit.values)
    old = values["rate_bps"]
    candidates = f"{len(scored)} rates and delays (the measured rate's multiples and 10 Gbit/s; the handshake's " \
                 "delay and the loaded one)" if any(h for *_, h in scored) else \
                 f"{len(scored)} rates (the measured one's multiples and 10 Gbit/s)"
    values["rate_bps"] = Fitted(best, f"chosen by simulation among {candidates}: the trial closest to the trace's "
                                f"response times, response by response, and its slow responses (distance {score:.3f}); "
                                f"first estimate {old.value} ({old.source})")
    if how:
        values["delay_ns"] = Fitted(delay, f"{how}: chosen with the rate (distance {score:.3f}); first estimate "
                                    f"{values['delay_ns'].value} ({values['delay_ns'].source})")
    return replace(fit, values=values)


def _ensemble(chosen: dict[str, Any], scored: list[tuple[float, int, dict[str, Any]]], name: str, varied: str,
              plausible: Callable[[dict[str, Any]], bool] = lambda m: True) -> list[dict[str, Any]]:
    """The path mechanisms (`name`: "atm_switch", "jumbo_nic") about as close to the trace as the
    chosen one: up to ENSEMBLE_SIZE within ENSEMBLE_MARGIN of the closest, the chosen first, each
    with its link. On a path this chaotic (a timeout comes or goes with a few cells or slots) a
    what-if's prediction is their median, not one run's. Two that differ only in `varied` (what a
    what-if sets) are one. An alternative `plausible` rejects is left out (the chosen one stays)."""
    if not scored:
        return []
    scored = [x for x in scored if x[2].get(name) == chosen.get(name) or plausible(x[2][name])]
    keep = ("link", "rate_bps", "delay_ns", name)
    out: dict[tuple, dict[str, Any]] = {}
    best = scored[0][0]
    mine = [x for x in scored if x[2].get(name) == chosen.get(name)]
    for sc, _, c in [*mine[:1], *scored]:
        key = tuple(sorted((k, v) for k, v in c[name].items() if k != varied))
        if (sc <= best + ENSEMBLE_MARGIN or c is chosen or c.get(name) == chosen.get(name)) and key not in out \
                and len(out) < ENSEMBLE_SIZE:
            out[key] = {k: c[k] for k in keep if k in c}
    return list(out.values())


def _holds_two_pdus(fit: Fit) -> Callable[[dict[str, Any]], bool]:
    """Whether a port's buffer holds a whole PDU of the trace's largest datagram and the cells of
    another behind it. The trace's flights of many full segments got through its port; a port of
    one PDU passes them only where its cells leave about as fast as the access link brings them
    (atm_small_buffer's 192-cell alternative, out at 153 Mbit/s from 155.52), so it fits the
    trace's losses by its rate, not its buffer, and a policy what-if on it acts on a buffer with no
    room for a second PDU: EPD's threshold (the buffer less one PDU) is 0 there, and it refuses
    every PDU that finds a cell queued (atm_small_buffer's `epd`: 0.8 Mbit/s, 166 timeouts)."""
    from stallscope.simulate.links.atm import aal5_cells

    pdu = aal5_cells(fit.value("mtu") or 9180)
    return lambda port: int(port.get("buffer_cells") or 0) >= 2 * pdu


# A longer transfer is calibrated on its first this many bytes: each candidate run then costs
# milliseconds, not the tenths of a second a 100 MB replay takes, and a trace's framing, stack and
# buffers show from its start.
CALIBRATION_BYTES = 8 * 1024 * 1024


def _prefix(fit: Fit, conn: ConnectionAnalysis, rows: Any) -> tuple[Fit, Target] | None:
    """For a transfer longer than CALIBRATION_BYTES: the fit cut to its first CALIBRATION_BYTES
    (whole writes; the losses in them replayed) and the trace's Target over the same bytes. None when the transfer is shorter or its packets are not at hand."""
    import polars as pl

    total, write = fit.value("bytes") or 0, fit.value("write") or 0
    d = conn.data_direction
    if rows is None or d is None or total <= 2 * CALIBRATION_BYTES or write <= 0 or fit.value("reply"):
        return None
    cut = -(-CALIBRATION_BYTES // write) * write
    new = (rows.filter((pl.col("dir") == fit.dir) & pl.col("new_data") & (pl.col("payload_len") > 0)
                       & (pl.col("seq_end") - 1 <= cut)).sort("ts_ns"))
    if new.height < 2:
        return None
    span = new["ts_ns"][-1] - new["ts_ns"][0]
    if span <= 0:
        return None
    goodput = (int(new["seq_end"].max()) - int(new["seq_rel"].min())) * 8 / (span / 1e9) / 1e6
    target = _target(conn, d.dir, goodput, span, int(new["frame"][-1]))
    if fit.value("_atm_path") or fit.value("_jumbo_path"):
        resent = rows.filter((pl.col("dir") == fit.dir) & (pl.col("payload_len") > 0) & pl.col("retransmission")
                             & (pl.col("seq_end") - 1 <= cut))
        target = replace(target, retransmissions=resent.height)
    values = {"bytes": Fitted(cut, f"the transfer's first {cut} bytes")}
    drops = (fit.value("impairments") or {}).get("drop_segments")
    if drops:
        values["impairments"] = Fitted({**fit.value("impairments"),
                                        "drop_segments": tuple(x for x in drops if x[0] < cut)}, "the losses in them")
    return fit.with_values(values), target


@dataclass
class _Search:
    """Where one run of the calibration's groups ended."""

    best_score: float
    chosen: dict[str, Any]
    tried: int
    passes: int
    joint_ran: bool
    ports: list[tuple[float, int, dict[str, Any]]]
    nics: list[tuple[float, int, dict[str, Any]]]


# Searches from different first stacks that end this close (distance with the ACKs counted) are
# as good as each other: the first estimate's stays.
RESTART_MARGIN = KEEP_FIRST_MARGIN
# A search run again from the joint host, reader and buffer search's closest run replaces the first
# only where it ends at most this share of the first's distance.
RESTART_SHARE = 0.5


def refine(fit: Fit, conn: ConnectionAnalysis, rows: Any = None, read_step: int | None = None) -> Fit:
    """The bulk fit with the link's framing, write and read sizes and send buffer chosen by
    simulation, one group after the other; a request/response fit's rate."""
    if fit.kind == "request_response":
        return _refine_request_response(fit, rows)
    if fit.kind != "bulk":
        return fit
    d = conn.data_direction
    goodput = (d.goodput_bps or 0) / 1e6 if d else 0
    if goodput <= 0 or d is None:
        return fit
    data_ns = (d.profile.get("bytes") or 0) * 8 / (goodput * 1e6) * 1e9
    if fit.value("_occasional_idle"):
        # Pauses the run does not replay (fit.pace.fit_pace): the run is held against the trace without them.
        idle = sum(s.time_lost_ns for s in conn.stalls if s.dir == d.dir and s.cause == IDLE)
        if 0 < idle < data_ns:
            goodput, data_ns = goodput * data_ns / (data_ns - idle), data_ns - idle
    cut, target, prefix = fit, _target(conn, d.dir, goodput, int(data_ns)), _prefix(fit, conn, rows)
    full_target = target
    if prefix is not None:
        cut, target = prefix
    if (fit.value("_atm_path") or fit.value("_jumbo_path")) and prefix is None:
        # A path mechanism is tried in place of the replayed losses: how often the sender had to
        # repeat itself counts too (over a prefix, its own: _prefix).
        target = replace(target, retransmissions=fit.value("_retransmissions"))
    acks_held = replace(target, acks=trace_acks(rows, fit.dir, cut.value("bytes") if prefix is not None else None))

    runs_scored: dict[tuple[str, int], float | None] = {}

    def run_score(changes: dict[str, Any], held: Target) -> float | None:
        """_run_score once per run and target: the simulator is deterministic, and the groups and
        passes ask again for runs already made (each group's first, the start's)."""
        key = (repr(sorted(changes.items())), id(held))
        if key not in runs_scored:
            runs_scored[key] = _run_score(cut, changes, held)
        return runs_scored[key]

    def far(changes: dict[str, Any]) -> bool:
        score = run_score(changes, target)
        return score is None or score > SECOND_PASS_SCORE

    def search(start: dict[str, Any]) -> _Search:
        """The groups one after the other from `start`, until a pass changes nothing or the run is close."""
        chosen: dict[str, Any] = dict(start)
        tried = 0
        best_score = math.inf
        # The applications' pace first: a pause or a slow reader changes the goodput more than a host
        # model does, and a host chosen to make up for a pause not yet replayed would stay.
        # An ATM switch port before the framing and host: a slow host chosen to make up for timeouts
        # not yet modelled would stay; the port sets its own (AAL5) link, the host is then tried with it.
        # The receiver's unseen tick phase first, where the start is far off: a phase that deadlocks
        # where the trace did not stall makes every later group make up for a stall that was never
        # there (and where the start is close, another phase only trades one fit for another).
        named = (("phase", lambda: _tick_phases(fit, chosen) if far(chosen) else [{}]),
                 ("phase_fine", lambda: _tick_phases(fit, chosen, True)),
                 ("pace", lambda: _pace(fit, chosen, read_step)), ("path", lambda: _path_mechanisms(fit, rows)),
                 ("writes", lambda: _writes(fit)), ("framing", lambda: _framed(fit, rows, chosen)),
                 ("stack", lambda: _stacks(fit, target)), ("buffers", lambda: _candidates(fit, read_step, chosen)),
                 ("joint", lambda: _joint(fit, rows, chosen, read_step, best_score)))
        names, groups = tuple(n for n, _ in named), tuple(g for _, g in named)
        passes = 0
        joint_ran = False
        ports: list[tuple[float, int, dict[str, Any]]] = []
        nics: list[tuple[float, int, dict[str, Any]]] = []
        for step, make in enumerate(groups * PASSES):
            if step and step % len(groups) == 0:
                # One group after the other can settle early on a choice made under a wrong stack (all
                # framings equally far from a trace a wrong stack deadlocks): far off, once more, each
                # group now starting from what is chosen.
                # And where a later group changed what an earlier one was chosen under (the stack,
                # the buffer after the link), until a pass changes nothing or the run is close.
                if best_score <= CONVERGED_SCORE or (best_score <= SECOND_PASS_SCORE and chosen == pass_start):
                    break
            if step % len(groups) == 0:
                pass_start = dict(chosen)
            passes = 1 + step // len(groups)
            group = make() if step < len(groups) else [{}, *make()]
            # A candidate's None takes the value back out (a reader chosen in the first pass, say).
            runs = [{k: v for k, v in {**chosen, **cand}.items() if v is not None} for cand in group]
            # Stacks are told apart by their receivers' ACKs too (Target.acks).
            held = acks_held if names[step % len(groups)] == "stack" and len(runs) > 1 else target
            if names[step % len(groups)] == "joint" and len(runs) > 2:
                joint_ran = True
            scores = [run_score(changes, held) for changes in runs]
            tried += len(runs)
            # An infinite distance rules a run out (no goodput, or a Nagle rule the trace does not
            # show); a group whose runs are all ruled out changes nothing (a few-packet trace).
            scored = [(round(score, 6), i, changes) for i, (score, changes) in enumerate(zip(scores, runs))
                      if score is not None and math.isfinite(score)]
            if scored:
                # Each group lists the first estimate first; it stays unless another run is clearly
                # closer (several stacks or buffers can give one goodput: the measured value decides).
                scored.sort(key=lambda x: (x[0], x[1]))
                if names[step % len(groups)] == "path":
                    ports = [x for x in scored if x[2].get("atm_switch")]
                    nics = [x for x in scored if x[2].get("jumbo_nic")]
                first = next((x for x in scored if x[1] == 0), None)
                if names[step % len(groups)] == "stack":
                    # Stacks about as close as the closest: the one the trace's own evidence named
                    # first (with its buffer where S did not show) stays.
                    first = min((x for x in scored if x[0] - scored[0][0] <= KEEP_FIRST_MARGIN), key=lambda x: x[1])
                if first is not None and first[0] - scored[0][0] <= KEEP_FIRST_MARGIN:
                    best_score, _, chosen = first
                else:
                    best_score, _, chosen = scored[0]
            log.debug("group %s: %d runs, distance %.4f, chosen %s", names[step % len(groups)], len(runs),
                      best_score, chosen)

        return _Search(best_score, chosen, tried, passes, joint_ran, ports, nics)

    # Where the segments named no stack among several the trace leaves, the groups run once from
    # each (calibrate._stack_names): the framing and host are chosen before the stack, and under a
    # stack picked only by order a wrong link can win by making up for it (a SunOS sender of 16 KB
    # writes every 30 ms over 10 Mbit/s Ethernet, fitted first as Linux 2.0: that stack's runs
    # stalled on every link but a gigabit one behind a Sun IPX's copies, where its ACK counts then
    # kept Linux 2.0). The search that ends closest, its ACKs counted as the stack group counts
    # them, wins; the first estimate's among those as close.
    stacks = _stack_names(fit)
    starts: list[dict[str, Any]] = [{}]
    # Stacks the sender's TTL alone rules out are still searched from: each search's stack group
    # chooses among the stacks left, and a start elsewhere can reach their closest run by another
    # way (a Linux 2.0 writer of 6000-byte messages settles on a 4.1 Mbit/s link searched from
    # Linux 2.0, and on Fast Ethernet, its own, searched from SunOS).
    by_ttl = fit.value("_stacks_ruled_out_by_ttl") or ()
    if (len(stacks) > 1 or by_ttl) and not fit.value("_stack_named"):
        theirs = fit.value("receiver_stacks_ruled_out") or ()
        starts += [{"personality": p, "receiver_personality": p} for p in (*stacks[1:], *by_ttl) if p not in theirs]
    found = [search(x) for x in starts]
    # (A search whose stack group found no run stays on its start: not on a stack ruled out.)
    found = [f for f in found if f.chosen.get("personality") not in by_ttl] or found[:1]
    tried = sum(f.tried for f in found)
    if len(found) > 1:
        closeness = [run_score(f.chosen, acks_held) if f.chosen else None for f in found]
        ranked = sorted((round(c, 6), i) for i, c in enumerate(closeness) if c is not None and math.isfinite(c))
        if ranked:
            # The first estimate's stack keeps its place among ends about as close; ends on another
            # stack are told apart by their distance (a search from SunOS that its stack group took to
            # Tru64 kept the link it chose under SunOS, 1.07 times the trace's goodput, where the one
            # from Tru64 ran at the measured rate).
            named = fit.value("personality")

            def own(x: tuple[float, int]) -> bool:
                return found[x[1]].chosen.get("personality", named) == named

            best = min((x for x in ranked if x[0] - ranked[0][0] <= RESTART_MARGIN),
                       key=lambda x: (not own(x), x[0] if not own(x) else 0, x[1]))
            found = [found[best[1]], *(f for i, f in enumerate(found) if i != best[1])]
    won = found[0]
    # Far off at the end: the host, the reader and the buffers together around what was chosen
    # (_hosted_buffers), and where one is closer, the groups once more from it; the closer end wins.
    restarted = False
    if won.best_score > SECOND_PASS_SCORE and won.chosen:
        around = [{k: v for k, v in {**won.chosen, **cand}.items() if v is not None}
                  for cand in _hosted_buffers(fit, rows, won.chosen, read_step, won.best_score)[1:]]
        scored = sorted((s, i) for i, s in enumerate(run_score(c, target) for c in around)
                        if s is not None and math.isfinite(s))
        tried += len(around)
        if scored and scored[0][0] < won.best_score:
            again = search(around[scored[0][1]])
            tried += again.tried
            log.debug("restart from %s (%.4f): ended at %.4f against %.4f", around[scored[0][1]], scored[0][0],
                      again.best_score, won.best_score)
            # Only a restart that ends at most half as far: one that ends a little closer by trading
            # the read or S leaves the fit's goodput where it was, and not its what-ifs (the captured
            # atm_small_buffer, 0.35 -> 0.30 with 4 KB reads for the whole window's: EPD's predicted
            # goodput 1.47 times the EPD capture's, 1.06 before).
            if again.best_score <= RESTART_SHARE * won.best_score:
                won, restarted = again, True
    best_score, chosen, passes, joint_ran, ports, nics = (won.best_score, won.chosen, won.passes, won.joint_ran,
                                                          won.ports, won.nics)
    if not chosen:
        return with_sndbuf_range(fit, conn, rows, full_target)
    over = (f" over the first {cut.value('bytes')} bytes (the trace's and each run's)" if prefix is not None
            else "")
    runs_how = (f"{tried} runs" + (f", {('two', 'three')[passes - 2]} passes" if passes > 1 else "")
                + (f", searched from each of {len(starts)} stacks" if len(starts) > 1 else ""))
    port_how = (", then an ATM switch port in place of the replayed losses" if fit.value("_atm_path") else
                ", then a NIC's jumbo receive slots or a smaller-MTU hop in place of the replayed losses"
                if fit.value("_jumbo_path")
                else "")
    phase_how = ("the receiver's delayed-ACK tick phase, unseen in the trace, then "
                 if chosen.get("seed", fit.value("seed")) != fit.value("seed") else "")
    why = (f"chosen by simulation ({runs_how}: {phase_how}the applications' pace{port_how}, then the link's framing and host, "
           f"then the stack among those with the same SYN options, then write x read x send buffer"
           + (", then, far off with the reads unseen, link x host x write x read together" if joint_ran else "")
           + (", then, still far off, host x reader's pace x read x send buffer together and the groups again from "
              "the closest of those" if restarted else "")
           + "): the run "
           f"closest to the trace's goodput, stall count and time lost per cause"
           + (" and its retransmissions" if target.retransmissions is not None else "")
           + f"{over} (distance {best_score:.3f})")
    values = dict(fit.values)
    for k, v in chosen.items():
        if k in values and values[k].value == v:
            continue
        old = values.get(k) or values.get(MEASURED_AS.get(k, ""))
        values[k] = Fitted(v, f"{why}; first estimate {old.value if old else None} ({old.source if old else 'none'})")
    if chosen.get("atm_switch"):
        port = chosen["atm_switch"]
        values["atm_switch"] = Fitted(port, f"an ATM switch port of {port['buffer_cells']} cells, discard policy "
                                      f"{port['policy']}, cells out at {port['out_rate_bps'] / 1e6:.2f} Mbit/s from a "
                                      f"{port['access_rate_bps'] / 1e6:.2f} Mbit/s access link, in place of the "
                                      f"trace's replayed losses ({fit.value('_atm_path')}); {why}")
        alternatives = _ensemble(chosen, ports, "atm_switch", "policy", _holds_two_pdus(fit))
        if len(alternatives) > 1:
            values["_ensemble"] = Fitted(alternatives, f"the {len(alternatives)} ports within {ENSEMBLE_MARGIN} of "
                                         "the closest one's distance")
    if chosen.get("pmtu_hop"):
        hop = chosen["pmtu_hop"]
        how = ("drops them without a word (a black hole)" if hop["mode"] == "blackhole"
               else "sends ICMP frag-needed back (RFC 1191)")
        probing = (", with the sender's black-hole detection on (RFC 4821, Linux's tcp_mtu_probing=1)"
                   if chosen.get("mtu_probing") else "")
        values["pmtu_hop"] = Fitted(hop, f"a hop with MTU {hop['mtu']} that {how}, for larger datagrams{probing}, in "
                                    f"place of the trace's replayed losses ({fit.value('_jumbo_path')}); {why}")
    if chosen.get("jumbo_nic"):
        nic = chosen["jumbo_nic"]
        release = ("each slot back when its frame's data is acknowledged" if nic["hold_until_acked"] else
                   f"each slot back {nic['replenish_ns'] / 1e6:g} ms after use")
        values["jumbo_nic"] = Fitted(nic, f"a receiving NIC with {nic['slots']} jumbo receive slots, {release}, in "
                                     f"place of the trace's replayed losses ({fit.value('_jumbo_path')}); {why}")
        alternatives = _ensemble(chosen, nics, "jumbo_nic", "slots")
        if len(alternatives) > 1:
            values["_ensemble"] = Fitted(alternatives, f"the {len(alternatives)} NICs within {ENSEMBLE_MARGIN} of "
                                         "the closest one's distance")
    return with_sndbuf_range(replace(fit, values=values), conn, rows, full_target)


# The send buffers a bulk fit's S is held against, as multiples of the fitted request: down to the
# flight's plateau, up to 64 times (where a larger buffer never shows, S is only a floor).
SNDBUF_STEPS_DOWN = (1 / 1.1, 1 / 1.25, 1 / 1.5, 1 / 2, 1 / 3, 1 / 4)
SNDBUF_STEPS_UP = (1.1, 1.25, 1.5, 2, 3, 4, 8, 16, 64)
# A buffer is as consistent with the trace as the fitted one when its run's distance from the trace
# (_score) is at most this much larger: the calibration's own indifference (KEEP_FIRST_MARGIN).
SNDBUF_MARGIN = KEEP_FIRST_MARGIN
# A fit claims S when the buffers consistent with the trace all lie within this share of it.
SNDBUF_CLAIM = 0.10
# How far a stack's flight can stand above its send buffer: OSF/1's sosend (Tru64) copies a whole
# 8 KB cluster once any room is left (the simulator's mbuf_threshold copy), so a 4 KB buffer carries
# 8 KB flights. Every other stack copies no more than the room (its flight is at most its buffer).
SNDBUF_OVERFILL = {"tru64": 8192}
# A buffer whose run's goodput is within this share of the fitted run's is taken into an interval or
# floor even where the run is further off by its stalls: S there did not change the goodput.
SNDBUF_SAME_GOODPUT = 0.05


def _scored(fit: Fit, changes: dict[str, Any], target: Target) -> tuple[float, int | None, float] | None:
    """A run's distance from the trace, the send buffer its stack settled on and its goodput
    (Mbit/s; None: no run)."""
    res = _bulk_run(fit, changes)
    if res is None:
        return None
    stalls, lost = sender_stalls(res)
    settled = (res.ground_truth.summary or {}).get("sndbuf")
    retrans = res.retransmits if target.retransmissions is not None else None
    goodput = sender_goodput(res)
    return _score(goodput, stalls, lost, target, retrans), settled, goodput


def sndbuf_range(fit: Fit, conn: ConnectionAnalysis, rows: Any, target: Target) -> Fitted | None:
    """What the trace tells of S: the send buffers (as the stack settles them) whose runs are as
    close to the trace as the fitted one's (within SNDBUF_MARGIN of its distance), walking down from
    the fitted request to the flight's plateau (a buffer holds at least its flight) and up to 64
    times it. A value is claimed when they all lie within SNDBUF_CLAIM of the fitted buffer;
    otherwise the interval is the claim (`high` None: no larger buffer changes the run, S is only
    a floor). None for a fit that is not bulk or cannot run."""
    if fit.kind != "bulk":
        return None
    d = conn.data_direction
    plateau = int((d.profile.get("send_buffer_estimate") or 0) if d is not None else 0)
    # The smallest buffer that could hold the flight the trace showed (a buffer holds its flight, but
    # for a stack that copies past it).
    floor = max(0, plateau - SNDBUF_OVERFILL.get(fit.value("personality"), 0))
    prefix = _prefix(fit, conn, rows)
    cut, target = prefix if prefix is not None else (fit, target)
    base = _scored(cut, {}, target)
    if base is None or not base[1]:
        return None
    settled0 = int(base[1])
    if base[0] > SECOND_PASS_SCORE:
        # A run this far from its trace cannot tell one buffer from another by how close it comes.
        return Fitted({"low": floor or None, "high": None, "fitted": settled0, "claims_value": False,
                       "floor": floor},
                      f"undetermined: the fitted run is too far from the trace (distance {base[0]:.3f}, above "
                      f"{SECOND_PASS_SCORE}) for runs with other send buffers to tell them apart; S is at least "
                      f"{floor} (the flight's plateau {plateau}: a buffer holds its flight"
                      + (", less the cluster its stack copies past it)" if floor != plateau else ")"))
    asked0 = fit.value("sndbuf")
    if not asked0:

        asked0 = settled0 // 2 if fit.value("personality") in SNDBUF_DOUBLED else settled0
    # Every step is run, not only up to the first that is further off: a buffer's effect on Nagle
    # and window-update stalls is not monotonic (Moldeklev), so the claim is the hull of the buffers
    # as close as the fitted one.
    # A buffer whose run is further from the trace but carries the fitted run's goodput (within
    # SNDBUF_SAME_GOODPUT: a stall more or less, or another stall's length) is not ruled out by it:
    # an interval or floor takes it in (the claim is that S within it does not change the run).
    close, far, same, runs, top, top_same = [settled0], [], [], 1, False, False
    for step in (*SNDBUF_STEPS_DOWN, *SNDBUF_STEPS_UP):
        asked = int(asked0 * step)
        if asked < 1024:
            continue
        got = _scored(cut, {"sndbuf": asked}, target)
        runs += 1
        if got is None or not got[1] or got[1] < floor:
            # Below the flight the trace showed: ruled out by the trace itself.
            continue
        alike = got[0] <= base[0] + SNDBUF_MARGIN
        (close if alike else far).append(int(got[1]))
        as_fast = bool(base[2]) and abs(got[2] / base[2] - 1) <= SNDBUF_SAME_GOODPUT
        if not alike and as_fast:
            same.append(int(got[1]))
        if step == SNDBUF_STEPS_UP[-1]:
            top, top_same = alike, alike or as_fast
    claims = (not top and min(close) >= (1 - SNDBUF_CLAIM) * settled0
              and max(close) <= (1 + SNDBUF_CLAIM) * settled0)
    hull = close if claims else close + same
    low, high = min(hull), (None if (top if claims else top_same) else max(hull))
    tried_low = min(close + far)
    if not claims and floor and tried_low in hull and tried_low > floor:
        # The smallest buffer tried (a quarter of the request) is as close: no run ruled out one
        # between it and the flight's plateau.
        low = floor
    below = max((x for x in far if x < low), default=None)
    above = min((x for x in far if high is not None and x > high), default=None)
    tried = (f"{runs} runs of the fit with other send buffers, each held against the trace (the fitted one's "
             f"distance {base[0]:.3f}; alike within {SNDBUF_MARGIN}"
             + (f", or with the fitted run's goodput within {SNDBUF_SAME_GOODPUT:.0%}: {len(same)} more" if same and not claims
                else "") + ")")
    if claims:
        how = (f"determined: {tried}; only buffers within {SNDBUF_CLAIM:.0%} of the fitted {settled0} are as close "
               f"(at {below if below else 'the floor ' + str(floor)} and {above} the runs are further off)")
    elif high is None:
        how = (f"undetermined above a floor: {tried}; the buffers as close to the trace span {low} (the flight's "
               f"plateau {plateau} makes {floor} a floor: a buffer holds its flight) to 64 times the fitted request: a window, "
               "the congestion window or the application held the flight, not the buffer")
    else:
        how = (f"an interval: {tried}; the buffers as close to the trace as the fitted {settled0} span {low} to "
               f"{high}" + (f" (at {below} and at {above} further off)" if below else f" (at {above} further off)"))
    return Fitted({"low": low, "high": high, "fitted": settled0, "claims_value": claims, "floor": floor}, how)


def with_sndbuf_range(fit: Fit, conn: ConnectionAnalysis, rows: Any, target: Target) -> Fit:
    """The fit with `sndbuf_range` (sndbuf_range) and `nagle_range` (nagle_range): how far the
    trace determines S and the sender's Nagle rule; where S is left open, the stack's default in
    it (stack_default_sndbuf)."""
    got = sndbuf_range(fit, conn, rows, target)
    if got is not None:
        fit, got = stack_default_sndbuf(fit, conn, rows, target, got)
    fit = fit if got is None else fit.with_values({"sndbuf_range": got})
    rule = nagle_range(fit, conn, rows, target)
    return fit if rule is None else fit.with_values({"nagle_range": rule})


# The default replaces the fitted S only where its run's goodput is this close to the fitted run's:
# the refitted goodput should not move for a choice the trace cannot make.
DEFAULT_SAME_GOODPUT = 0.02


def stack_default_sndbuf(fit: Fit, conn: ConnectionAnalysis, rows: Any, target: Target, got: Fitted
                         ) -> tuple[Fit, Fitted]:
    """Where the trace leaves S open (an interval or a floor, the fitted run close to the trace) and
    the stack's default send buffer lies in it, the default as the fitted value: any S in the range
    runs alike, and an application that sets no buffer, the common case, gets its stack's (a Tru64
    bulk sender's flight of 16 KB on a fast path, held by the ACK clock, is no 16 KB buffer: the
    default 32 KB runs the same). Only where the default's own run is as close as the fitted one's
    (SNDBUF_MARGIN) and carries its goodput (DEFAULT_SAME_GOODPUT)."""

    rng = got.value
    default = DEFAULT_SNDBUF.get(fit.value("personality"))
    if rng["claims_value"] or not default or default == fit.value("sndbuf"):
        return fit, got
    prefix = _prefix(fit, conn, rows)
    cut, held = prefix if prefix is not None else (fit, target)
    base, alt = _scored(cut, {}, held), _scored(cut, {"sndbuf": default}, held)
    if base is None or alt is None or base[0] > SECOND_PASS_SCORE or not alt[1] or not base[2]:
        return fit, got
    settled = int(alt[1])
    if (settled < (rng["low"] or 0) or (rng["high"] is not None and settled > rng["high"])
            or alt[0] > base[0] + SNDBUF_MARGIN or abs(alt[2] / base[2] - 1) > DEFAULT_SAME_GOODPUT):
        return fit, got
    old = fit.values["sndbuf"] if "sndbuf" in fit.values else Fitted(None, "none")
    span = f"{rng['low']} to {rng['high']}" if rng["high"] is not None else f"{rng['low']} or more"
    fit = fit.with_values({"sndbuf": Fitted(default, (
        f"{fit.value('personality')}'s default send buffer ({default}): the trace leaves S anywhere from {span} "
        f"(sndbuf_range), and the run with the default is as close to it (distance {alt[0]:.3f} against "
        f"{base[0]:.3f}); an application that sets no buffer gets it; first estimate {old.value} ({old.source})"))})
    return fit, Fitted({**rng, "fitted": settled}, got.source + f"; fitted at the stack's default, {settled}")


def own_nagle(personality: str | None) -> str:
    """A stack's own Nagle rule among the simulator's variants: Linux's test is Minshall's
    (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay), the others' the classic one."""
    return "MINSHALL" if personality == "linux" else "NAGLE"


def nagle_range(fit: Fit, conn: ConnectionAnalysis, rows: Any, target: Target) -> Fitted | None:
    """What the trace tells of the sender's Nagle rule, where it sent short segments: the fitted
    run again with each of the simulator's variants, each held against the trace; a variant whose
    run does not show the trace's small-segment behaviour (short segments behind an unacknowledged
    short one, behind full ones only, or never behind data: nagle_shown) is ruled out, and those as
    close to the trace as the fitted rule (within KEEP_FIRST_MARGIN) are the claim. The fitted rule
    stays the stack's own (or off, where the segments showed it): on the scoring corpus a variant
    chosen as the closest run was never the true one (docs/comparison.md). None for a fit that is
    not bulk, whose sender sent no short segment, or whose run's data sender is its receiver."""
    if fit.kind != "bulk" or "nagle" not in fit.values or data_side(fit.bulk_config()):
        return None
    prefix = _prefix(fit, conn, rows)
    cut, target = prefix if prefix is not None else (fit, target)
    shorts = trace_shorts(rows, fit.dir, cut.value("bytes") if prefix is not None else None)
    if not shorts or not shorts[0]:
        return None
    fitted = fit.value("nagle") or own_nagle(fit.value("personality"))
    if write_unseen(fit):
        # Where a short segment goes depends on the writes as much as on the rule: under a write
        # the segments did not show, the variants' runs tell nothing of the trace's rule (a 4.4BSD
        # sender of 8 KB writes over ATM, fitted with 24 KB ones, came 0.1 further with its own
        # rule than with Nagle off).
        return Fitted({"variants": list(NAGLE_VARIANTS), "fitted": fitted, "claims_value": False},
                      f"undetermined: the write did not show ({fit.values['write'].source}), and where a short "
                      "segment goes depends on the writes as much as on the Nagle rule")
    held = replace(target, shorts=shorts)
    base = _run_score(cut, {"nagle": fitted}, held)
    scores = {v: _run_score(cut, {"nagle": v}, held) for v in NAGLE_VARIANTS if v != fitted}
    scores[fitted] = base
    shows = [v for v in NAGLE_VARIANTS if scores.get(v) is not None and scores[v] != math.inf]
    if base is None or base == math.inf:
        # The fitted run itself does not show what the trace does: the rest of the fit decides
        # the short segments as much as the rule, and no variant is ruled out.
        return Fitted({"variants": list(NAGLE_VARIANTS), "fitted": fitted, "claims_value": False},
                      f"undetermined: the fitted run ({fitted}) does not show the trace's small-segment behaviour "
                      f"({nagle_shown(shorts)}: {shorts[0]} short segments, {shorts[1]} behind an unacknowledged "
                      f"short one, {shorts[2]} behind data), so its runs cannot rule a variant out (those that "
                      f"show it: {', '.join(shows) or 'none'})")
    far = base > SECOND_PASS_SCORE
    alike = list(NAGLE_VARIANTS) if far else [v for v in shows if scores[v] <= base + KEEP_FIRST_MARGIN]
    how = (f"{len(NAGLE_VARIANTS)} runs, one per Nagle variant of the simulator, each held against the trace; "
           f"the trace's short segments show {nagle_shown(shorts)} ({shorts[0]} short segments, {shorts[1]} behind an "
           f"unacknowledged short one, {shorts[2]} behind data), which {len(shows)} variants' runs show too")
    if far:
        how += (f"; undetermined: the fitted run is too far from the trace (distance {base:.3f}) to tell them apart "
                "or rule one out")
    else:
        how += f"; as close to the trace as the fitted {fitted} (distance {base:.3f}, within {KEEP_FIRST_MARGIN}): "
        how += ", ".join(alike)
    return Fitted({"variants": alike, "fitted": fitted, "claims_value": alike == [fitted],
                   "distances": {v: (None if x is None or x == math.inf else round(x, 4)) for v, x in scores.items()}},
                  how)
