"""The analysis pipeline: capture -> packet table -> sender state -> vantage, profiles, path
findings -> stalls and their causes -> typed findings.

    analysis = analyze_file("trace.pcap")          # Analysis; .to_json() is stallscope.analysis/1
    analysis.files[0].connections[0].stalls        # StallFinding list
    analysis.files[0].state                        # the per-packet sender-state table (Polars)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from stallscope.analyzers import artifacts, estimates, inference, peer_acks, timeline, vantage
from stallscope.analyzers.causes import RULES, windows
from stallscope.analyzers.causes import path as path_rules
from stallscope.analyzers.causes.loss import MAX_RTO_NS
from stallscope.analyzers.findings import (UNDETERMINED, Alternative, ConnectionAnalysis, ConnectionFinding,
                                           DirectionAnalysis, Note, StallFinding, Verdict)
from stallscope.analyzers.peer_acks import on_tick
from stallscope.analyzers.sender_state import PACKET_INPUT, STATE_COLUMNS, by_stream_time, sender_state
from stallscope.analyzers.causes.common import (acks_as_late, before, mss, peer_delay, release, sporadic_peer_delay,
                                                timer_driven, tolerance)
from stallscope.analyzers.stalls import (CLOCK_MULTIPLE, RTT_MULTIPLE, StallContext, build_context, candidates,
                                         threshold_ns)
from stallscope.packets.decoder import DecodeSummary, read_packets
from stallscope.packets.errors import CaptureDamaged, CaptureRejected
from stallscope.vocabulary import Cause

SCHEMA = "stallscope.analysis/1"
# Causes that stand even while ACKs kept coming: the sender held data it had (Nagle waits for the
# last ACK), or had none to send (the ACKs came with the peer's requests).
HOLD_CAUSES = frozenset({"nagle_delayed_ack", "nodelay_tail_held", "application_idle"})
# A full window or buffer is the path's pace, not a stall, while the path delivers earlier data
# (`_path_paced`); a segment the sender itself held back (Nagle, silly-window avoidance) is not.
PATH_FULL_CAUSES = frozenset({"receiver_window_limited", "window_update_deadlock", "send_buffer_limited"})
# Path findings in the order they explain a lost large segment.
PATH_PRIORITY = ("pmtu_blackhole", "mss_mismatch", "jumbo_slot_exhaustion")
# A capture clock this coarse or coarser raises the stall threshold (a millisecond clock leaves it
# at its 10 ms floor).
COARSE_CLOCK_NS = 10_000_000
# Outstanding bytes beyond this many times the peer's largest window mean the capture missed packets.
BEYOND_WINDOW_FACTOR = 1.5
# Columns the per-connection rules read (path, send buffer, peer ACKs, timeline, stall context).
_PART_COLUMNS = ["stream", "dir", "frame", "ts_ns", "payload_len", "flag_psh", "flag_syn", "flag_ack", "ip_id", "ip_len",
                 "new_data", "retrans_kind", "retransmission", "seq_end", "seq_rel", "snd_una", "snd_max", "in_flight",
                 "usable_window", "peer_window", "ack_delay_ns", "ack_segments", "ack_rel", "acks_new", "dup_ack",
                 "sack_left", "win_scaled", "superframe", "wscale_known", "opt_ts_val", "opt_ts_ecr", "rtt_ns",
                 "flag_fin", "flag_rst"]
# Columns the per-stall reader needs as Python lists.
_CONTEXT_COLUMNS = ["frame", "ts_ns", "dir", "payload_len", "flag_ack", "flag_psh", "ack_rel", "win_scaled", "acks_new",
                    "dup_ack", "ack_delay_ns", "sack_left", "retransmission", "seq_rel", "retrans_kind", "ip_len",
                    "snd_una", "snd_max", "seq_end", "peer_window", "in_flight", "usable_window", "ip_id",
                    "opt_ts_val", "opt_ts_ecr", "flag_syn", "flag_fin"]


# Per-connection facts the packet table repeats on every row: read once per (stream, dir) and
# kept out of the per-packet passes (gathering text columns costs more than the passes).
ENDPOINT_COLUMNS = ["src_addr", "dst_addr", "src_port", "dst_port"]


def _state_order() -> list[str]:
    """The packet table's columns in order: the sender state, what limited the sender after its
    windows (timeline.packet_limits), the timer estimate after the RTT samples and the spurious
    flag after the retransmission kind (analyzers/estimates.py), then the packet's own fields."""
    order: list[str] = []
    for c in STATE_COLUMNS:
        order.append(c)
        if c == "usable_window":
            order.append("limit")
        elif c == "retrans_kind":
            order.append("spurious_retransmission")
        elif c == "rtt_ns":
            order += ["rtt_ts_ns", "srtt_ns", "rttvar_ns", "rto_ns"]
    return order + [c for c in PACKET_INPUT if c not in STATE_COLUMNS]


@dataclass
class FileAnalysis:
    path: str
    status: str  # ok, damaged, rejected
    error: dict[str, Any] | None
    decode: dict[str, Any]
    notes: list[Note] = field(default_factory=list)
    connections: list[ConnectionAnalysis] = field(default_factory=list)
    # The per-packet table without its endpoint columns, and those per (stream, dir).
    core_state: pl.DataFrame | None = None
    endpoints: pl.DataFrame | None = None
    # With --compare: per connection, the reference simulator's fit, comparison and what-ifs
    # (analyzers/comparison: ConnectionReference); None when not asked for.
    reference: list[Any] | None = None

    @property
    def state(self) -> pl.DataFrame | None:
        """The per-packet sender-state table (docs/analysis-json.md), endpoints included."""
        return self.packet_table()

    def packet_table(self, derived: bool = True) -> pl.DataFrame | None:
        """The per-packet table, built on each call; without the `derived` columns (the limit, RTT
        estimate and spurious flag, analyzers/estimates.py) for readers that do not need them (the
        comparison: they cost a pass of their own over every row)."""
        if self.core_state is None or self.endpoints is None:
            return self.core_state
        order = _state_order()
        table = by_stream_time(self.core_state)
        if derived:
            table = estimates.add(table)
            sides = {(c.stream, d.dir): (d.profile, [x for x in c.stalls if x.dir == d.dir])
                     for c in self.connections for d in c.directions}
            table = table.with_columns(timeline.packet_limits(table, sides))
        return table.join(self.endpoints, on=["stream", "dir"], how="left", maintain_order="left").select(
            [c for c in order if c in table.columns or c in ENDPOINT_COLUMNS])

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "error": self.error,
            "decode": self.decode,
            "notes": [n.to_json() for n in self.notes],
            "connections": [c.to_json() for c in self.connections],
            **({"reference": [r.to_json() for r in self.reference]} if self.reference is not None else {}),
        }


@dataclass
class Analysis:
    files: list[FileAnalysis]

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "files": [f.to_json() for f in self.files]}

    @property
    def stalls(self) -> list[StallFinding]:
        return [s for f in self.files for c in f.connections for s in c.stalls]


def analyze_file(path: str | Path, *, stream: int | None = None) -> Analysis:
    return Analysis([analyze_one(path, stream=stream)])


def analyze_one(path: str | Path, *, stream: int | None = None) -> FileAnalysis:
    text = str(path)
    try:
        packets, summary = read_packets(path, columns=PACKET_INPUT + [artifacts.SEQ_RAW, inference.TTL])
        status, error = "ok", None
    except CaptureRejected as e:
        return FileAnalysis(text, "rejected", {"kind": e.kind, "offset": e.offset, "message": e.reason}, {})
    except CaptureDamaged as e:
        packets, summary = e.packets, e.summary
        status, error = "damaged", {"kind": e.kind, "offset": e.offset, "message": e.reason}
    height = packets.height
    # The packet table is handed over, not kept: the passes free each stage's table once the next
    # is built, which this frame's reference would hold until the end (~145 MB of the 2.1 M-packet
    # bench capture's peak).
    box = [packets]
    del packets
    result = _analyze_box(box, text, summary, stream=stream)
    result.status, result.error = status, error
    if error is not None:
        result.notes.insert(0, Note("damaged_capture", f"the capture is damaged at byte {error['offset']}: "
                                    f"{error['message']}; the analysis covers the {height} packets before it"))
    return result


def _decode_facts(summary: DecodeSummary | None) -> dict[str, Any]:
    if summary is None:
        return {}
    return {"format": summary.format, "records": summary.records, "tcp_packets": summary.tcp_packets,
            "not_tcp": summary.not_tcp, "not_decoded": summary.not_decoded, "anomalies": summary.anomalies}


def analyze_packets(packets: pl.DataFrame, path: str, summary: DecodeSummary | None = None, *,
                    stream: int | None = None) -> FileAnalysis:
    """Analyze an already decoded packet table (columns PACKET_INPUT at least)."""
    return _analyze_box([packets], path, summary, stream=stream)


def _analyze_box(box: list[pl.DataFrame], path: str, summary: DecodeSummary | None = None, *,
                 stream: int | None = None) -> FileAnalysis:
    """analyze_packets on the one table in `box`, which it takes out (the caller keeps no reference)."""
    packets = box.pop()
    result = FileAnalysis(path, "ok", None, _decode_facts(summary))
    result.notes.extend(artifacts.decode_notes(summary))
    if stream is not None:
        packets = packets.filter(pl.col("stream") == stream)
    if packets.height == 0:
        result.notes.append(Note("no_tcp", "the capture holds no TCP packets" if stream is None
                                 else f"no TCP stream {stream} in the capture"))
        return result
    result.endpoints = packets.group_by(["stream", "dir"]).agg(pl.col(c).first() for c in ENDPOINT_COLUMNS)
    ttls = inference.ttl_max(packets)
    id_counters = inference.id_counters(packets, result.endpoints, ttls)
    loopback = artifacts.loopback_streams(result.endpoints)
    packets, file_notes, conn_notes = artifacts.clean(packets.drop(ENDPOINT_COLUMNS + [inference.TTL], strict=False),
                                                      loopback)
    result.notes.extend(file_notes)
    state = sender_state(packets)
    del packets
    for s_, notes in artifacts.unseen_notes(state).items():
        conn_notes.setdefault(s_, []).extend(notes)
    timings = vantage.timings(state, ttls, loopback)
    clock = vantage.clock_step_ns(state["ts_ns"])
    if clock >= COARSE_CLOCK_NS:
        timings = {k: replace(t, clock_ns=clock) for k, t in timings.items()}
        result.notes.append(Note("timestamps_coarse", f"every timestamp is a multiple of {clock / 1e6:g} ms (the "
                                 f"capture's clock): a silence shorter than {CLOCK_MULTIPLE * clock / 1e6:g} ms is not "
                                 f"read as a stall, and every time is off by up to {clock / 1e6:g} ms"))
    floors: dict[tuple[int, int], int] = {}
    if not state["wscale_known"].all():
        # Windows of unknown scale (no SYN) that the flight ran past: read with the smallest scale
        # that holds it, a floor of the real window (artifacts.window_scale_floors). The flight as
        # the sender knew it: a receiver's tap sees its own ACKs leave at once, a flight of a segment.
        # (Only the streams of unknown scale are re-read as the sender saw them: a full sender view
        # of a large capture costs a pass over every row.)
        unknown = state.filter(~pl.col("wscale_known"))["stream"].unique().implode()
        floors = artifacts.window_scale_floors(vantage.sender_view(state.filter(pl.col("stream").is_in(unknown)),
                                                                   timings))
        state = artifacts.apply_scale_floors(state, floors)
        for (s_, owner), scale in floors.items():
            conn_notes.setdefault(s_, []).append(Note(
                "window_scale_floor", f"direction {owner}'s windows are read times 2^{scale}: the peer's flight ran "
                f"past the raw window, which a scale of {scale} or more explains; the windows are floors of the real "
                "ones (room they show is there; a limit they show may not be)", scale))
    # Nagle's evidence is read as the tap saw it (at the sender that is exact, elsewhere it can only
    # err towards "on"); flights are read as the sender knew them.
    profiles = inference.direction_profiles(state)
    inference.settle_id_counting(profiles, id_counters, any(n.kind == "data_only" for n in file_notes))
    for (s_, owner), scale in floors.items():
        if (s_, 1 - owner) in profiles:
            profiles[(s_, 1 - owner)]["_window_floor_scale"] = scale  # the peer's windows are floors
    raw_state = state
    # (Read as the tap saw the packets: the sender's view below is rebuilt from that order.)
    disordered = artifacts.disordered_streams(raw_state)
    for s_, (n, lead) in disordered.items():
        conn_notes.setdefault(s_, []).append(Note(
            "clock_offset", f"{n} times this connection's packets are out of the order any single tap sees them "
            "(an ACK before the data it acknowledges, or data past every window edge before the ACK that opened "
            f"it), by a median {lead / 1e6:.3f} ms: a capture merged from two points whose clocks differ, or one "
            "that stamps one direction late; no stall of it is given a cause", n))
    state = vantage.sender_view(state, timings)
    result.core_state = state
    for key, flight in inference.flight_fields(state).items():
        profiles[key].update(flight)
    ip_max = state.select("stream", "dir", "ip_len", "superframe").filter(~pl.col("superframe")).group_by(
        ["stream", "dir"]).agg(pl.col("ip_len").max())
    for prof in profiles.values():
        prof["max_ip_len"] = None  # stays null when every datagram of the direction was a super-frame
    for r in ip_max.iter_rows(named=True):
        profiles[(r["stream"], r["dir"])]["max_ip_len"] = r["ip_len"]
    for key, prof in profiles.items():
        prof["ttl_max"] = ttls.get(key)  # the stack's initial TTL less the routers before the tap
    window_known = dict(state.group_by("stream").agg(pl.col("wscale_known").all()).iter_rows())
    unscaled = {} if all(window_known.values()) else artifacts.unscaled_windows(state)
    # (A stream whose windows were floored ran past the raw ones: not unscaled, whatever the floors hold.)
    floored = {k[0] for k in floors}
    unscaled = {s: n for s, n in unscaled.items() if s not in floored}
    for s in unscaled:
        window_known[s] = True
    cands = candidates(state, timings)
    # Each connection's candidates as rows, in the table's order (a partition per connection cost
    # 40 us each: a quarter of a second for 6,667 short connections with one candidate each).
    cands_of: dict[int, list[dict[str, Any]]] = {}
    for cand in cands.iter_rows(named=True):
        cands_of.setdefault(cand["stream"], []).append(cand)
    part_of = _stream_parts(state)
    delays = peer_acks.ack_delays(state, timings)
    acks = _PeerAcks(peer_acks.split_delays(delays), peer_acks.every_second_shares(state),
                     peer_acks.delay_summaries(delays))
    del delays
    conns = _connection_rows(state, result.endpoints)
    sampled = artifacts.sampled_streams(state)
    for c in conns:
        s = c["stream"]
        part = part_of(s)
        conn = ConnectionAnalysis(
            stream=s, initiator=c["initiator"], responder=c["responder"], start_captured=c["start_captured"],
            first_frame=c["first_frame"], last_frame=c["last_frame"], duration_ns=c["duration_ns"],
            vantage={str(d): timings[(s, d)].to_json() for d in (0, 1) if (s, d) in timings},
        )
        conn.notes.extend(conn_notes.get(s, []))
        if s in unscaled:
            conn.notes.append(unscaled[s])
        if not c["start_captured"]:
            conn.notes.append(Note("no_syn", "the capture starts mid-connection: no SYN, so the MSS, window scale "
                                   "and SACK were not seen and windows may be unscaled"))
        if c["directions_seen"] < 2:
            conn.notes.append(Note("one_direction", "only one direction of this connection is in the capture: "
                                   "no ACKs, so no stall cause can be named (the sender's own timeouts are "
                                   "reported as undetermined stalls)"))
        for d in (0, 1):
            if (s, d) in profiles:
                profiles[(s, d)]["_capture_missed"] = s in sampled
                _complete_profile(conn, c, d, part, profiles, timings, bool(window_known.get(s, False)), acks)
        result.connections.append(conn)
    # Nagle's evidence needs each direction's full segment size, which needs its path findings.
    inference.nagle_evidence(raw_state, profiles)
    for prof in profiles.values():
        if "own_delayed_ack" in prof:
            prof["stack"] = inference.stack_guess(prof, prof["own_delayed_ack"])
    contexts = _context_rows(part_of, [c["stream"] for c in conns if c["stream"] in cands_of])
    for c, conn in zip(conns, result.connections):
        s = c["stream"]
        if s in cands_of:
            s_, rows = next(contexts)
            assert s_ == s
            recovering: dict[int, tuple[int, int]] = {}  # dir -> (index of its unseen-loss stall, seq it resends to)
            for cand in cands_of[s]:
                d = cand["dir"]
                ctx = build_context(rows, cand, timings[(s, d)], profiles[(s, d)])
                stall = _classify(ctx, _direction(c, d)) if c["directions_seen"] == 2 else _unanswered(ctx, _direction(c, d))
                if stall is not None and s in sampled:
                    stall = _capture_missed(ctx, stall, *sampled[s])
                if stall is not None and s in disordered:
                    stall = _out_of_order(ctx, stall, disordered[s][0])
                if _continues_unseen_recovery(conn.stalls, recovering.get(d), ctx, stall):
                    continue
                recovering.pop(d, None)
                if stall is not None:
                    conn.stalls.extend(_split_idle_tail(ctx, stall))
                    if "ids_unseen" in stall.evidence and stall.cause in REPAIR_CAUSES | PATH_LOSS_CAUSES:
                        recovering[d] = (len(conn.stalls) - 1,
                                         ctx.snd_max_before_end + stall.evidence["ids_unseen"] * max(ctx.segment_size, 1))
    for conn in result.connections:
        _far_side_silences(conn, part_of, timings)
    sides = {(c["stream"], d): (profiles[(c["stream"], d)], [x for x in conn.stalls if x.dir == d])
             for c, conn in zip(conns, result.connections) for d in (0, 1) if (c["stream"], d) in profiles}
    # The short connections in one pass, each long one in its own (window functions over millions
    # of rows cost more than a pass per connection).
    long = set(part_of.long)
    limits = timeline.limit_shares(part_of.short, {k: v for k, v in sides.items() if k[0] not in long})
    for s in long:
        limits.update(timeline.limit_shares(part_of(s), {k: v for k, v in sides.items() if k[0] == s}))
    for c, conn in zip(conns, result.connections):
        for d in (0, 1):
            if (c["stream"], d) in profiles:
                conn.directions.append(_direction_summary(conn, c, d, profiles, limits[(c["stream"], d)]))
    return result


# A connection with at least this many rows is gathered from the table when its turn comes, not
# held in a partition beside it; smaller ones are partitioned together (a gather per connection
# costs ~0.1 ms: 2,000 one-packet scans would pay 0.3 s for nothing).
BIG_PART_ROWS = 100_000


@dataclass
class _Parts:
    """Each connection's rows (the _PART_COLUMNS), by stream: the short ones sorted by stream
    (stably: each keeps its time order), each a slice of that table (a partition of 20,000
    connections cost a second; a slice is a view); the long ones (BIG_PART_ROWS) gathered from the
    table when asked for. A partition of the whole table held beside it was the largest single
    allocation of an analysis of a few long connections (316 of the 1,480 MB of the 2.1 M-packet
    bench capture's peak)."""

    columns: pl.DataFrame
    short: pl.DataFrame
    spans: dict[int, tuple[int, int]]
    long_rows: dict[tuple[int], pl.DataFrame]

    def __call__(self, s: int) -> pl.DataFrame:
        if (s,) in self.long_rows:
            return self.columns[self.long_rows[(s,)]["_row"]]
        return self.short.slice(*self.spans[s])

    @property
    def long(self) -> list[int]:
        return [k[0] for k in self.long_rows]


def _stream_parts(state: pl.DataFrame) -> _Parts:
    big = state.group_by("stream").len().filter(pl.col("len") >= BIG_PART_ROWS)["stream"].to_list()
    columns = state.select(_PART_COLUMNS)
    short = (columns.filter(~pl.col("stream").is_in(big)) if big else columns).sort("stream", maintain_order=True)
    at, spans = 0, {}
    for s, n in short.group_by("stream", maintain_order=True).len().iter_rows():
        spans[s] = (at, n)
        at += n
    long_rows = (state.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_row"), "stream")
                 .filter(pl.col("stream").is_in(big)).partition_by("stream", as_dict=True)) if big else {}
    return _Parts(columns, short, spans, long_rows)


# Short connections' context rows are read together, up to this many rows at a time.
CONTEXT_BATCH_ROWS = 50_000


def _context_rows(part_of: Callable[[int], pl.DataFrame], streams: list[int]) -> Iterator[tuple[int, dict[str, list]]]:
    """(stream, its _CONTEXT_COLUMNS as Python lists) for each of `streams`, in that order, for the
    per-stall reader. Short connections are read in batches (a query and a conversion per
    connection were a third of the time of 6,667 short connections with a stall candidate each);
    long ones alone (lists of a million rows times 27 columns take gigabytes)."""
    batch: list[tuple[int, pl.DataFrame]] = []
    held = 0

    def flush() -> Iterator[tuple[int, dict[str, list]]]:
        lists = pl.concat([p for _, p in batch]).select(_CONTEXT_COLUMNS).to_dict(as_series=False)
        at = 0
        for s, p in batch:
            yield s, {k: v[at:at + p.height] for k, v in lists.items()}
            at += p.height

    for s in streams:
        part = part_of(s)
        if part.height >= CONTEXT_BATCH_ROWS:
            yield s, part.select(_CONTEXT_COLUMNS).to_dict(as_series=False)
            continue
        if held + part.height > CONTEXT_BATCH_ROWS:
            yield from flush()
            batch, held = [], 0
        batch.append((s, part))
        held += part.height
    if batch:
        yield from flush()


EMPTY_DELAYS = pl.Series("ack_delay_ns", [], dtype=pl.Int64)


@dataclass
class _PeerAcks:
    """Every direction's ACK delays and every-second-ACK share, read once for all connections."""

    delays: dict[tuple[int, int], pl.Series]
    shares: dict[tuple[int, int], float]
    summaries: dict[tuple[int, int], peer_acks.DelaySummary]


def _once(read: Callable[[], pl.DataFrame]) -> Callable[[], pl.DataFrame]:
    """`read`, run on the first call only (functools.cache's wrapper costs 10 us to build)."""
    box: list[pl.DataFrame] = []

    def get() -> pl.DataFrame:
        if not box:
            box.append(read())
        return box[0]
    return get


def _complete_profile(conn: ConnectionAnalysis, c: dict[str, Any], d: int, part: pl.DataFrame,
                      profiles: dict, timings: dict, window_known: bool, acks: _PeerAcks) -> None:
    """Adds to one direction's profile what needs the peer (its ACK timer), the stack guess, and
    the connection findings about the path; the stall rules read all of it."""
    s = c["stream"]
    prof, peer_prof = profiles[(s, d)], profiles.get((s, 1 - d), {})
    delays = acks.delays.get((s, 1 - d), EMPTY_DELAYS)
    prof["peer_delayed_ack"] = peer_acks.delayed_ack_profile(acks.summaries.get((s, 1 - d)), acks.shares.get((s, 1 - d)))
    prof["_peer_delays"] = delays  # how rare a given delay is among its ACKs (causes.common.acks_as_late)
    prof["own_delayed_ack"] = peer_acks.delayed_ack_profile(acks.summaries.get((s, d)), acks.shares.get((s, d)))
    prof["window_known"] = window_known
    prof["acked_unseen"] = any(n.kind == "acked_unseen" for n in conn.notes)
    prof["peer_data_packets"] = peer_prof.get("data_packets", 0)
    prof["_peer_plain_packets"] = peer_prof.get("_plain_packets", 0)
    found = []
    # No ACKs (one direction captured): flights grow without bound and windows are unseen.
    if c["directions_seen"] == 2:
        # Read only by a rule that gets past what the profile already counted (most do not).
        own_rows = _once(lambda: part.filter(pl.col("dir") == d))
        found = path_rules.findings(own_rows, prof, timings.get((s, d)))
        if prof["data_packets"]:
            peer_acks_rows = _once(lambda: part.filter((pl.col("dir") == 1 - d) & pl.col("flag_ack")).select("ts_ns"))
            sb = windows.send_buffer_finding(own_rows, prof, timings.get((s, d)), peer_prof.get("data_packets", 0),
                                             peer_acks_rows)
            found += [sb] if sb else []
            if sb and "ceiling_from_ns" in sb[2]:
                prof["_buffer_bound_from_ns"] = sb[2]["ceiling_from_ns"]  # the timeline's send_buffer share
    for cause, conf, ev in found:
        conn.findings.append(ConnectionFinding(d, _direction(c, d), cause, None, conf, ev))
    causes = [f.cause for f in conn.findings if f.dir == d]
    prof["path_cause"] = next((p for p in PATH_PRIORITY if p in causes), None)
    # The datagram size a black hole was shown to drop (a hop's MTU may be below Ethernet's: 1280).
    hole = next((f for f in conn.findings if f.dir == d and f.cause == Cause.PMTU_BLACKHOLE.value), None)
    prof["_path_lost_ip_len"] = hole.evidence.get("segment_ip_len") if hole is not None else None


def _direction_summary(conn: ConnectionAnalysis, c: dict[str, Any], d: int, profiles: dict,
                       limits: dict[str, float]) -> DirectionAnalysis:
    """Goodput, time lost by cause, limits and role of one direction, once its stalls are known."""
    s = c["stream"]
    prof = profiles[(s, d)]
    own_stalls = [x for x in conn.stalls if x.dir == d]
    lost: dict[str, int] = {}
    for x in own_stalls:
        lost[x.cause] = lost.get(x.cause, 0) + x.time_lost_ns
    span = prof["_data_span_ns"]
    goodput = prof["bytes"] * 8e9 / span if span and prof["bytes"] else None
    sent = max(prof["bytes"] or 0, (prof["sequence_span"] or 0) - 2)
    role = "data sender" if sent and sent >= _peer_bytes(profiles, s, d) else "acknowledger"
    return DirectionAnalysis(d, _direction(c, d), role, prof, limits, dict(sorted(lost.items())), goodput)


def _peer_bytes(profiles, s, d) -> int:
    p = profiles.get((s, 1 - d)) or {}
    return max(p.get("bytes") or 0, (p.get("sequence_span") or 0) - 2)


def _direction(c: dict[str, Any], d: int) -> str:
    return f"{c['initiator']} -> {c['responder']}" if d == 0 else f"{c['responder']} -> {c['initiator']}"


def _endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def _connection_rows(state: pl.DataFrame, endpoints: pl.DataFrame) -> list[dict[str, Any]]:
    first = state.group_by("stream", maintain_order=True).agg(
        pl.col("dir").first().alias("first_dir"),
        (pl.col("flag_syn") & ~pl.col("flag_ack") & (pl.col("dir") == 0)).any().alias("start_captured"),
        pl.col("frame").min().alias("first_frame"), pl.col("frame").max().alias("last_frame"),
        (pl.col("ts_ns").max() - pl.col("ts_ns").min()).alias("duration_ns"),
        pl.col("dir").n_unique().alias("directions_seen"),
    ).sort("stream")
    # Direction 0 is sent by the initiator: its source is the initiator whichever packet is read.
    ends = {(r["stream"], r["dir"]): r for r in endpoints.iter_rows(named=True)}
    out = []
    for r in first.iter_rows(named=True):
        e = ends.get((r["stream"], r["first_dir"]))
        a, b = _endpoint(e["src_addr"], e["src_port"]), _endpoint(e["dst_addr"], e["dst_port"])
        if r["first_dir"] == 1:
            a, b = b, a
        out.append({**r, "initiator": a, "responder": b})
    return out


def _network_paced(ctx: StallContext) -> bool:
    """Shorter than two *typical* round trips (queueing included), released by an ordinary ACK and
    with no timeout: the sender was waiting at the pace of its ACK clock, not stalled."""
    typical = ctx.timing.typical_rtt_ns or ctx.timing.path_rtt_ns or 0
    if any(r.kind == "timeout" for r in ctx.resends) or ctx.duration_ns >= RTT_MULTIPLE * typical:
        return False
    rel = ctx.releasing_ack(tolerance(ctx))
    return rel is not None and rel.payload == 0 and not timer_driven(ctx, rel)


# The ACK that ended a silence is the path's usual pace when at least PACED_SHARE of the peer's
# measured ACKs (of at least PACED_MIN_ACKS) came within PACED_MARGIN as late after their data.
PACED_SHARE = 0.02
PACED_MIN_ACKS = 20
PACED_MARGIN = 1.5


def _path_paced(ctx: StallContext) -> bool:
    """The ACK that ended the silence acknowledged data sent before it, two segments or more sent
    before the silence were still outstanding after it, and it came as late after its data as the
    peer's ACKs often did: all through the silence the path was delivering the sender's earlier
    data at its own pace, its window or congestion window full (a queue in front of a slow link: an
    upload through a 370 kbit/s uplink, every ACK 0.7 s after its data on a 14 ms path). Not a
    stall: the path was busy. (A delayed-ACK timer's ACK leaves nothing behind it: with data
    arriving, the receiver would have acknowledged every second segment at once; a Nagle hold
    ends only when all is acknowledged.)"""
    if ctx.resends or not ctx.ended_by_new_data or ctx.repaired_after or ctx.lost_after[0]:
        return False  # (data behind the ACK that was lost, resent after it, was not in the pipe)
    rel = release(ctx)
    m = mss(ctx)
    if rel is None or rel.dup or not m:
        return False
    tick = ctx.profile.get("_peer_tick")
    if tick and on_tick(rel.ts_ns, tick):
        return False  # on the phase of the clock the peer's held ACKs keep: its timer sent it
    ack_before = before(ctx, rel)[0]
    if rel.ack <= ack_before or ctx.snd_max_before_end - rel.ack < 2 * m:
        return False
    held = peer_delay(ctx, rel)
    if held is None:
        return False
    late, measured = acks_as_late(ctx, int(held / PACED_MARGIN))
    return measured >= PACED_MIN_ACKS and late >= PACED_SHARE * measured


def _capture_gap(ctx: StallContext) -> str | None:
    """Why the capture cannot show what held the sender in this stall, if it cannot: an ACK in it
    covers data the capture never showed, or more is outstanding than any window allowed."""
    # (Against what had been sent when the silence began: the segment that ends it starts past a gap.)
    sent = ctx.una_at_start + ctx.in_flight_at_start
    unseen = next((a for a in ctx.acks if a.ack > sent + 1), None)
    if unseen is not None and not ctx.resends:
        return (f"ACK frame {unseen.frame} covers {unseen.ack - sent} bytes the capture never showed: the "
                "capture missed packets here, so what held the sender cannot be read")
    # The segment that ended the silence starts past the last data seen, and nothing resent the data
    # between later (no loss repaired it): the sender sent it during the silence and the tap missed it.
    skipped = ctx.snd_max_before_end - sent
    if ctx.ended_by_new_data and skipped > 1 and not ctx.resends and not ctx.repaired_after:
        return (f"frame {ctx.held_frame} starts {skipped} bytes past the last data the capture showed, and "
                "no resend of the bytes between followed: the sender sent them during this silence and the "
                "capture missed them, so what held the sender cannot be read")
    beyond = _beyond_any_window(ctx)
    if beyond is not None:
        return (f"{beyond} bytes were outstanding, half again more than any window the peer advertised "
                f"({ctx.profile.get('peer_receive_window_max')}): the capture missed packets here, so what "
                "held the sender cannot be read")
    return None


def _beyond_any_window(ctx: StallContext) -> int | None:
    """The bytes outstanding in the stall, where they exceed every window the peer ever
    advertised (scales known) by half of it: no sender gets there (a SACK recovery at a Linux sender
    goes two segments past it), so the capture missed the data's ACKs or the data between (a
    sampled or cut capture); None otherwise."""
    peer_max = ctx.profile.get("peer_receive_window_max")
    # Away from the sender the flight is the sender's view rebuilt from the tap's times, which can
    # run a window ahead on a long path (a client's tap, 70 ms from a server bursting at 10 Mbit/s).
    if not ctx.profile.get("window_known") or not peer_max or ctx.timing.vantage != "sender":
        return None
    out = max(ctx.in_flight_at_start, ctx.snd_max_before_end - ctx.una_at_start)
    return out if out > BEYOND_WINDOW_FACTOR * peer_max + mss(ctx) else None


def _classify(ctx: StallContext, direction: str) -> StallFinding | None:
    reason = _capture_gap(ctx)
    if reason is not None:
        # Window, loss and Nagle rules all read the flight: with the capture's own gap in it, none applies.
        return _undetermined(ctx, direction, reason)
    verdicts: list[Verdict] = []
    for _name, rule in RULES:
        v = rule(ctx)
        if v is not None:
            verdicts.append(v)
    if (not verdicts or verdicts[0].cause in PATH_FULL_CAUSES) and _path_paced(ctx):
        return None
    held = bool(verdicts) and verdicts[0].cause in HOLD_CAUSES
    if not held and not any(r.kind == "timeout" for r in ctx.resends) and (ctx.ack_clocked() or ctx.in_recovery()):
        # snd_una kept advancing (progress at the ACK clock's pace), or duplicate ACKs show loss
        # repair under way: not a stall with a cause of its own, unless a short segment was held
        # back through it (Nagle waits for the *last* ACK, however fast the others come).
        return None
    timed_out = any(r.kind == "timeout" for r in ctx.resends)
    rel = ctx.releasing_ack(tolerance(ctx))
    repairing = (ctx.repaired_after and not ctx.lost_after[0]) or (rel is not None and rel.dup)
    if not verdicts and (_network_paced(ctx) or not timed_out and (ctx.resends or ctx.in_recovery() or ctx.ack_clocked()
                                                                   or repairing)):
        # Repaired by fast retransmission or SACK (within the interval, or right after it when the
        # flight was lost and only the receiver's ACK timer restarted the clock; released by a
        # duplicate ACK, the sender was in that recovery), or clocked by a
        # slow ACK stream: loss repair or the network's pace, not a stall with a cause of its own
        # (the simulator's ground truth counts repairs the same way).
        return None
    if not verdicts:
        return _undetermined(ctx, direction, _why_undetermined(ctx))
    best = verdicts[0]
    alts = list(best.alternatives) + [Alternative(v.cause, v.detail, v.confidence * 0.5, "a later rule also fits")
                                      for v in verdicts[1:]]
    alts.sort(key=lambda a: -a.confidence)
    return StallFinding(ctx.stream, ctx.dir, direction, ctx.start_ns, ctx.end_ns, ctx.start_frame, ctx.end_frame,
                        _time_lost(ctx), best.cause, best.detail, best.confidence, {**_basic(ctx), **best.evidence}, tuple(alts))


# Stalls whose wait ends when the peer acknowledges what was resent: any silence after that is
# the writer's.
REPAIR_CAUSES = frozenset({"burst_loss_timeout", "single_loss_timeout", "spurious_timeout", "ack_loss_timeout"})


# Path findings a loss the tap did not see may be named after (causes/loss._sent_unseen).
PATH_LOSS_CAUSES = frozenset({"pmtu_blackhole", "jumbo_slot_exhaustion", "mss_mismatch"})


def _continues_unseen_recovery(stalls: list[StallFinding], recovering: tuple[int, int] | None,
                               ctx: StallContext, stall: StallFinding | None) -> bool:
    """Whether the silence of `ctx` is the rest of the loss stall `recovering` names (its index in
    `stalls`, and the sequence number up to which the sender had sent what the tap never saw), and if
    so extend that stall over it. Before a receiver's tap the lost packets never show, so their
    resends arrive as new data and end the silence early; a sender resending after a timeout waits
    on each resend's ACK (a window of one segment, the receiver's delayed ACK of it: 100 ms), where
    a tap beside it sees one silence until new data (an ATM tail lost before the receiver's tap:
    1.0 s and a separate 100 ms "deadlock"). A silence that began with such a resend, one of the
    unseen packets' data, is that episode's; unless the application's (everything acknowledged and
    the next data on its own: an FTP session's 4.7 s after its resend), which no loss explains."""
    if recovering is None or stall is None or stall.cause == Cause.APPLICATION_IDLE.value:
        return False
    at, resent_to = recovering
    prev = stalls[at]
    if ctx.start_frame != prev.end_frame or ctx.first_end > resent_to:
        return False
    rtt = ctx.timing.path_rtt_ns or 0
    stalls[at] = replace(prev, end_ns=ctx.end_ns, end_frame=ctx.end_frame,
                         time_lost_ns=max(0, ctx.end_ns - prev.start_ns - rtt),
                         evidence={**prev.evidence, "recovery_until_frame": ctx.end_frame})
    return True


def _unnamed(ctx: StallContext, stall: StallFinding, reason: str, reading: str,
             keep: frozenset[str] = frozenset({UNDETERMINED})) -> StallFinding:
    """`stall` as `undetermined` for `reason`, the rules' cause kept as an alternative (`reading`
    says what it rests on), unless its cause is in `keep`."""
    if stall.cause in keep:
        return stall
    alt = Alternative(stall.cause, stall.detail, stall.confidence * 0.5, reading)
    return replace(_undetermined(ctx, stall.direction, reason), alternatives=(alt, *stall.alternatives))


def _capture_missed(ctx: StallContext, stall: StallFinding, unseen: int, advanced: int) -> StallFinding:
    """A stall of a connection the capture missed data of throughout (artifacts.sampled_streams): no
    cause from the packets seen (an application's idle time stays: it needs only the silence)."""
    return _unnamed(ctx, stall, f"the capture missed {unseen} of this connection's data packets (acknowledged, never "
                    f"shown; {advanced} ACKs advanced): a sampled or lossy capture, whose missing packets could have "
                    "held or released the sender here", "what the packets seen show",
                    frozenset({UNDETERMINED, Cause.APPLICATION_IDLE.value}))


def _out_of_order(ctx: StallContext, stall: StallFinding, events: int) -> StallFinding:
    """A stall of a connection whose packets are not in the order a single tap sees them
    (artifacts.disordered_streams): what released or held the sender, even whether it was idle, is
    read from that order, so no cause is named."""
    return _unnamed(ctx, stall, f"{events} times this connection's packets are out of the order a single tap sees "
                    "them (two capture points merged with clocks apart, or one direction stamped late): which packet "
                    "came first, which every rule reads, is not known here", "what the packets' order as captured shows")


def _far_side_silences(conn: ConnectionAnalysis, part_of: Callable[[int], pl.DataFrame],
                       timings: dict[tuple[int, int], vantage.Timing]) -> None:
    """The silence a black hole seen away from the sender caused (its finding's `silence_*`
    bounds, causes.path._far_side_blackhole), as a stall where no other covers it: the tap saw no
    data outstanding (none of it arrived), so no candidate marked the sender's wait."""
    for f in conn.findings:
        ev = f.evidence
        if f.cause != Cause.PMTU_BLACKHOLE.value or "silence_to_ns" not in ev:
            continue
        start, end = ev["silence_from_ns"], ev["silence_to_ns"]
        if any(x.dir == f.dir and x.start_ns < end and x.end_ns > start for x in conn.stalls):
            continue
        timing = timings[(conn.stream, f.dir)]
        rows = part_of(conn.stream)
        at_start = rows.filter((pl.col("dir") == f.dir) & (pl.col("frame") == ev["silence_from_frame"]))["in_flight"]
        acks = rows.filter((pl.col("dir") == 1 - f.dir) & pl.col("flag_ack") & (pl.col("ts_ns") > start)
                           & (pl.col("ts_ns") < end)).height
        conn.stalls.append(StallFinding(
            conn.stream, f.dir, f.direction, start, end, ev["silence_from_frame"], ev["silence_to_frame"],
            max(0, end - start - (timing.path_rtt_ns or 0)), f.cause, None, f.confidence,
            {"outstanding_at_start": int(at_start[0] or 0) if at_start.len() else 0, "peer_acks_during": acks,
             "threshold_ns": threshold_ns(timing),
             **{k: ev[k] for k in ("ip_ids_skipped", "packets_never_seen") if k in ev},
             "why": "the sender's data never reached the tap while its small packets did: " + ev["why"]}))
        conn.stalls.sort(key=lambda x: (x.start_ns, x.dir))


def _split_idle_tail(ctx: StallContext, stall: StallFinding) -> list[StallFinding]:
    """A timeout's stall ends when the peer has acknowledged everything the sender had sent: a
    sender with more to write goes on at once. Where the next data came a threshold or more after
    that ACK, and not in reaction to it, the rest was the application's (a telnet user who typed
    nothing for 5.5 s after a spurious timeout of 0.37 s): two stalls, the timeout's and an
    `application_idle` one, so that no time the writer spent idle is charged to the loss."""
    if stall.cause not in REPAIR_CAUSES or not ctx.ended_by_new_data or not ctx.resends:
        return [stall]
    last_resend = max(r.ts_ns for r in ctx.resends)
    acked = next((a for a in ctx.acks if a.ts_ns >= last_resend and a.ack >= ctx.snd_max_before_end), None)
    if acked is None or ctx.end_ns - acked.ts_ns < ctx.threshold_ns:
        return [stall]
    if ctx.releasing_ack(tolerance(ctx)) is acked:
        return [stall]
    rtt = ctx.timing.path_rtt_ns or 0
    repair = replace(stall, end_ns=acked.ts_ns, end_frame=acked.frame,
                     time_lost_ns=max(0, acked.ts_ns - ctx.start_ns - rtt))
    idle = StallFinding(ctx.stream, ctx.dir, stall.direction, acked.ts_ns, ctx.end_ns, acked.frame, ctx.end_frame,
                        ctx.end_ns - acked.ts_ns, Cause.APPLICATION_IDLE.value, None, 0.7, {
                            "all_acked_frame": acked.frame, "idle_after_acked_ns": ctx.end_ns - acked.ts_ns,
                            "after_stall": stall.cause,
                            "why": "everything the sender had sent was acknowledged, and its next data came "
                                   "on its own later: the writer had nothing to send"}, ())
    return [repair, idle]


def _unanswered(ctx: StallContext, direction: str) -> StallFinding | None:
    """A stall in a connection captured one way only: with no ACK to read, only the sender's own
    retransmission timeouts show it waited (on data, ACKs or a peer lost: the capture cannot say)."""
    timeouts = [r for r in ctx.resends if r.kind == "timeout"]
    if not timeouts or timeouts[0].ts_ns - ctx.start_ns > MAX_RTO_NS:
        return None  # (a longer silence is no timer's: a clock that jumped, captures joined)
    return _undetermined(ctx, direction, (
        f"the sender's timer resent data {len(timeouts)} time(s) (first at frame {timeouts[0].frame}) and the "
        "capture holds no packet of the peer's: the data, its ACKs or the peer lost, or the capture sees one way only"))


def _time_lost(ctx: StallContext) -> int:
    """The stall's length less the round trip a sender waits anyway."""
    return max(0, ctx.duration_ns - (ctx.timing.path_rtt_ns or 0))


def _undetermined(ctx: StallContext, direction: str, reason: str) -> StallFinding:
    return StallFinding(ctx.stream, ctx.dir, direction, ctx.start_ns, ctx.end_ns, ctx.start_frame, ctx.end_frame,
                        _time_lost(ctx), UNDETERMINED, None, 0.0, {"reason": reason, **_basic(ctx)})


def _basic(ctx: StallContext) -> dict[str, Any]:
    return {"outstanding_at_start": ctx.in_flight_at_start, "peer_acks_during": len(ctx.acks),
            "threshold_ns": ctx.threshold_ns}


def _why_undetermined(ctx: StallContext) -> str:
    if not ctx.ended_by_new_data:
        return "the capture ends while the sender is still silent, with no timeout seen"
    if ctx.releasing_ack(max(2_000_000, ctx.timing.lag_ns // 2)) is None:
        if ctx.flight_lost_unanswered():
            return (f"no ACK came, and what was out then went unacknowledged until the timer resent it (frame "
                    f"{ctx.lost_after[1]}): frame {ctx.held_frame}, sent with no ACK, was a write or a tail-loss "
                    "probe (RFC 8985) in a loss of data or of its ACKs that the capture cannot tell apart here")
        return ("data was outstanding, yet the next segment did not follow an ACK: no rule explains what "
                "released it (a write, a persist probe, a timer not seen)")
    rel = release(ctx)
    if rel is not None and sporadic_peer_delay(ctx, rel):
        held = peer_delay(ctx, rel) or 0
        late, measured = acks_as_late(ctx, held)
        return (f"released by an ACK the peer sent {held / 1e6:.1f} ms late, a delay only {late} of its {measured} "
                "ACKs show and no delayed-ACK timer explains: the peer's host or the path paused")
    if rel is not None and before(ctx, rel)[1] is None:
        return ("released by the first of the peer's ACKs in the capture: the window before it was not seen (the "
                "capture starts after the handshake), so whether a window held the sender cannot be told")
    return "released by an ACK, but neither a window limit nor a held short segment is visible"
