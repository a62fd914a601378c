"""Compare a trace's connection with its reference run: goodput, stalls by cause and time lost,
each stall found in both / only in the trace / only in the model, and how far apart the two
progress curves are. Where the real stack stalls and the reference does not, the trace shows
something the reference stack does not do: the suspected defect (as Salamon's held tail)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from stallscope.vocabulary import UNDETERMINED, Cause

from ..findings import ConnectionAnalysis, StallFinding

# The verdict's tolerances: the reference reproduces the trace when its goodput is within this
# share of the trace's and no cause costs the trace this share of its duration more than the model.
GOODPUT_TOLERANCE = 0.25
CAUSE_TIME_TOLERANCE = 0.10
# Two stalls are the same one when they stall at about the same point of the byte stream: within
# this many full segments of each other, with the same cause.
MATCH_SEGMENTS = 2
IDLE = Cause.APPLICATION_IDLE.value


@dataclass
class StallMatch:
    cause: str
    where: str  # "both", "trace", "model"
    trace: dict[str, Any] | None = None
    model: dict[str, Any] | None = None


@dataclass
class Comparison:
    goodput_trace_bps: float | None
    goodput_model_bps: float | None
    time_lost_trace: dict[str, int]
    time_lost_model: dict[str, int]
    stalls: list[StallMatch] = field(default_factory=list)
    curve_distance: float | None = None
    # Request/response and message exchanges: messages the trace took much longer over than the model.
    slow_messages: list[dict[str, Any]] = field(default_factory=list)
    messages_compared: int = 0
    verdict: str = ""
    matches: bool = False
    reasons: list[str] = field(default_factory=list)

    @property
    def goodput_ratio(self) -> float | None:
        if not self.goodput_trace_bps or self.goodput_model_bps is None:
            return None
        return self.goodput_model_bps / self.goodput_trace_bps

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, dict[str, int]] = {}
        for m in self.stalls:
            counts.setdefault(m.cause, {"both": 0, "trace": 0, "model": 0})[m.where] += 1
        return {
            "goodput_trace_bps": self.goodput_trace_bps, "goodput_model_bps": self.goodput_model_bps,
            "goodput_ratio": None if self.goodput_ratio is None else round(self.goodput_ratio, 4),
            "time_lost_trace_ns": dict(sorted(self.time_lost_trace.items())),
            "time_lost_model_ns": dict(sorted(self.time_lost_model.items())),
            "stall_counts": dict(sorted(counts.items())),
            "stalls_only_in_trace": [m.trace for m in self.stalls if m.where == "trace"][:50],
            "stalls_only_in_model": [m.model for m in self.stalls if m.where == "model"][:50],
            "curve_distance": None if self.curve_distance is None else round(self.curve_distance, 4),
            "messages_compared": self.messages_compared,
            "messages_slower_in_trace": len(self.slow_messages),
            "slow_messages": self.slow_messages[:20],
            "matches": self.matches, "verdict": self.verdict, "reasons": list(self.reasons),
        }


def time_lost(conn: ConnectionAnalysis | None, dir_: int | None) -> dict[str, int]:
    """Time lost per cause over the stalls of direction `dir_` (every direction: None)."""
    out: dict[str, int] = {}
    if conn is None:
        return out
    for s in conn.stalls:
        if dir_ is None or s.dir == dir_:
            out[s.cause] = out.get(s.cause, 0) + s.time_lost_ns
    return out


def _stall_points(conn: ConnectionAnalysis, dir_: int, rows: pl.DataFrame | None) -> list[tuple[StallFinding, int]]:
    """Each stall of `dir_` with the byte offset it stalled at: the highest sequence the sender had
    sent by the stall's first frame (-1 when the packet rows are not at hand)."""
    stalls = [s for s in conn.stalls if s.dir == dir_ and s.cause != IDLE]
    if rows is None or not stalls:
        return [(s, -1) for s in stalls]
    sent = (rows.filter((pl.col("dir") == dir_) & pl.col("snd_max").is_not_null())
            .select("frame", "snd_max").sort("frame"))
    frames = sent["frame"].to_list()
    highs = sent["snd_max"].to_list()
    import bisect

    points = []
    for s in stalls:
        i = bisect.bisect_right(frames, s.start_frame) - 1
        points.append((s, int(highs[i]) if i >= 0 else -1))
    return points


def _brief(s: StallFinding, offset: int) -> dict[str, Any]:
    return {"cause": s.cause, "detail": s.detail, "start_frame": s.start_frame, "time_lost_ns": s.time_lost_ns,
            "offset": offset}


def match_stalls(trace: ConnectionAnalysis, tdir: int, trows: pl.DataFrame | None, model: ConnectionAnalysis,
                 mdir: int, mrows: pl.DataFrame | None, segment: int) -> list[StallMatch]:
    """Pair the stalls of the two runs: same cause, stalled within MATCH_SEGMENTS full segments of
    the same byte offset; without offsets, by order within each cause."""
    t_points, m_points = _stall_points(trace, tdir, trows), _stall_points(model, mdir, mrows)
    out: list[StallMatch] = []
    causes = sorted({s.cause for s, _ in t_points} | {s.cause for s, _ in m_points})
    for cause in causes:
        ts = [(s, o) for s, o in t_points if s.cause == cause]
        ms = [(s, o) for s, o in m_points if s.cause == cause]
        used: set[int] = set()
        for s, o in ts:
            best = None
            for j, (ms_, mo) in enumerate(ms):
                if j in used:
                    continue
                if o >= 0 and mo >= 0:
                    if abs(o - mo) <= MATCH_SEGMENTS * segment and (best is None or abs(o - mo) < best[1]):
                        best = (j, abs(o - mo))
                elif best is None:
                    best = (j, 0)
            if best is None:
                out.append(StallMatch(cause, "trace", trace=_brief(s, o)))
            else:
                used.add(best[0])
                out.append(StallMatch(cause, "both", trace=_brief(s, o), model=_brief(*ms[best[0]])))
        out += [StallMatch(cause, "model", model=_brief(s, o)) for j, (s, o) in enumerate(ms) if j not in used]
    return out


def compare(trace: ConnectionAnalysis, trows: pl.DataFrame | None, model: ConnectionAnalysis | None,
            mrows: pl.DataFrame | None, unreadable: str | None = None) -> Comparison:
    """The comparison of a trace's connection with the reference's (None: the reference failed).
    `trows`, `mrows`: each run's per-packet sender state for that connection (FileAnalysis.state
    rows of its stream), for the stalls' byte offsets and the progress curves."""
    td = trace.data_direction
    md = model.data_direction if model is not None else None
    lt, lm = time_lost(trace, td.dir if td else None), time_lost(model, md.dir if md else None)
    cmp = Comparison(td.goodput_bps if td else None, md.goodput_bps if md else None, lt, lm)
    if td is None or md is None or model is None:
        cmp.verdict = "no reference: the simulator could not run the fitted configuration"
        return cmp
    if unreadable is None and any(n.kind == "one_direction" for n in trace.notes):
        unreadable = ("only one direction of the connection is in the capture (no ACKs: the path and the peer are "
                      "unseen, and the reference runs on defaults for them)")
    if unreadable:
        # No ACKs in the capture (one direction, or a filter that kept only data): the path, the
        # peer and every stall's cause are unseen, so the run the fit configured holds defaults
        # where the trace said nothing; a difference from it says nothing of the trace's stack.
        cmp.reasons = [unreadable]
        cmp.verdict = f"not compared: {unreadable}"
        return cmp
    segment = td.profile.get("common_segment") or td.profile.get("max_segment") or 1460
    cmp.stalls = match_stalls(trace, td.dir, trows, model, md.dir, mrows, segment)
    if trows is not None and mrows is not None:
        cmp.curve_distance = curve_distance(progress(trows, td.dir), progress(mrows, md.dir))
    reasons = []
    ratio = cmp.goodput_ratio
    # Too little data for the trace's own goodput (a request of a few bytes, a connection the
    # capture cut): the goodput is held against nothing, which is no deviation; the stalls still are.
    unmeasured = not td.goodput_bps
    if not unmeasured and (ratio is None or abs(ratio - 1) > GOODPUT_TOLERANCE):
        reasons.append(f"goodput: the model's is {ratio:.2f} x the trace's" if ratio is not None
                       else "goodput: not measured in the model's run")
    duration = max(trace.duration_ns, 1)
    for cause in sorted(set(lt) | set(lm)):
        # (Idle time is the application's; undetermined time is what the analyzer could not read,
        # a capture's gap as often as not: neither is a cause the reference should have had.)
        if cause in (IDLE, UNDETERMINED):
            continue
        extra = lt.get(cause, 0) - lm.get(cause, 0)
        if abs(extra) > CAUSE_TIME_TOLERANCE * duration:
            who = "the trace" if extra > 0 else "the model"
            reasons.append(f"{cause}: {who} loses {abs(extra) / 1e6:.1f} ms more ({abs(extra) / duration:.0%} of the trace)")
    if trows is not None and mrows is not None:
        tm, mm = messages(trows, td.dir), messages(mrows, md.dir)
        cmp.messages_compared = min(len(tm), len(mm))
        cmp.slow_messages = slow_messages(tm, mm)
        if cmp.messages_compared and len(cmp.slow_messages) > SLOW_SHARE * cmp.messages_compared:
            extra = sorted(m["extra_ns"] for m in cmp.slow_messages)[len(cmp.slow_messages) // 2]
            reasons.append(f"{len(cmp.slow_messages)} of {cmp.messages_compared} messages took longer in the trace "
                           f"(median {extra / 1e6:.1f} ms more), their last segment sent late")
    cmp.reasons = reasons
    cmp.matches = not reasons and not unmeasured
    only_trace = [m for m in cmp.stalls if m.where == "trace" and m.cause != UNDETERMINED]
    if unmeasured and not reasons:
        n = td.profile.get("data_packets") or 0
        cmp.verdict = (f"not compared: the trace's data ({td.profile.get('bytes') or 0} bytes in {n} "
                       f"packet{'' if n == 1 else 's'}) is too little to measure its goodput, and no stall differs")
    elif cmp.matches:
        cmp.verdict = (f"matches the reference within {GOODPUT_TOLERANCE:.0%} goodput and {CAUSE_TIME_TOLERANCE:.0%} "
                       "time lost per cause")
    elif cmp.slow_messages and len(cmp.slow_messages) > SLOW_SHARE * cmp.messages_compared:
        cmp.verdict = (f"deviates: {len(cmp.slow_messages)} of {cmp.messages_compared} messages held longer in the trace "
                       "than in the reference (the tail of each waited): the suspected defect; " + "; ".join(reasons))
    elif only_trace and any(lt.get(m.cause, 0) - lm.get(m.cause, 0) > CAUSE_TIME_TOLERANCE * duration
                            for m in only_trace):
        # Stalls the model has too, at other bytes and as long in all, are no defect of the trace's
        # stack: only a cause the trace loses more time to than the tolerance names one.
        causes = sorted({m.cause for m in only_trace if lt.get(m.cause, 0) - lm.get(m.cause, 0)
                         > CAUSE_TIME_TOLERANCE * duration})
        only_trace = [m for m in only_trace if m.cause in causes]
        cmp.verdict = (f"deviates: {len(only_trace)} stall(s) only in the trace ({', '.join(causes)}), which the "
                       "reference stack does not have: the suspected defect; " + "; ".join(reasons))
    else:
        cmp.verdict = "deviates: " + "; ".join(reasons)
    return cmp


# A message is slower in the trace when it took this much longer (and this share longer) than the
# model's same message; the deviation counts when more than SLOW_SHARE of the messages are.
SLOW_MIN_NS = 2_000_000
SLOW_FACTOR = 1.5
SLOW_SHARE = 0.2


def messages(rows: pl.DataFrame, dir_: int) -> list[dict[str, int]]:
    """The sender's messages in an exchange: the new data it sent between two packets of new data
    from the peer, each with its first and last data packet's time and frame and its bytes."""
    new = (rows.filter(pl.col("new_data") & (pl.col("payload_len") > 0)).sort("ts_ns")
           .select("ts_ns", "frame", "dir", "payload_len"))
    if new.is_empty() or new.filter(pl.col("dir") != dir_).is_empty():
        return []
    new = new.with_columns(msg=(pl.col("dir") != dir_).cum_sum())
    out = (new.filter(pl.col("dir") == dir_).group_by("msg", maintain_order=True)
           .agg(first_ns=pl.col("ts_ns").first(), last_ns=pl.col("ts_ns").last(), last_frame=pl.col("frame").last(),
                bytes=pl.col("payload_len").sum()))
    return out.to_dicts()


def slow_messages(trace: list[dict[str, int]], model: list[dict[str, int]]) -> list[dict[str, Any]]:
    """Messages (by index, same size) that took much longer from first to last byte in the trace
    than in the model: what the trace's stack held that the reference did not."""
    out = []
    for i, (t, m) in enumerate(zip(trace, model)):
        if t["bytes"] != m["bytes"]:
            continue
        td, md = t["last_ns"] - t["first_ns"], m["last_ns"] - m["first_ns"]
        if td - md >= SLOW_MIN_NS and td >= SLOW_FACTOR * md:
            out.append({"message": i, "bytes": t["bytes"], "trace_ns": td, "model_ns": md, "extra_ns": td - md,
                        "last_frame": t["last_frame"]})
    return out


def progress(rows: pl.DataFrame, dir_: int) -> tuple[list[int], list[int]]:
    """The progress curve of a direction: (ns since its first new data, highest byte sent)."""
    new = rows.filter((pl.col("dir") == dir_) & pl.col("new_data") & (pl.col("payload_len") > 0)).sort("ts_ns")
    if new.is_empty():
        return [], []
    t = (new["ts_ns"] - new["ts_ns"][0]).to_list()
    high = new["seq_end"].cum_max()
    return t, (high - (new["seq_end"][0] - new["payload_len"][0])).to_list()


def curve_distance(a: Any, b: Any) -> float | None:
    """How far apart two progress curves are: the mean, over the trace's byte milestones, of the
    time difference at which each run reached it, as a share of the trace's duration. 0: the
    model reaches every point when the trace did; 0.5: on average half the transfer's time apart."""
    import numpy as np

    (ta, ba), (tb, bb) = a, b
    if len(ta) < 2 or len(tb) < 2 or ba[-1] <= 0:
        return None
    marks = np.linspace(0, min(ba[-1], bb[-1]), 50)[1:]
    when_a = np.interp(marks, ba, ta)
    when_b = np.interp(marks, bb, tb)
    return float(np.mean(np.abs(when_a - when_b)) / max(ta[-1], 1))
