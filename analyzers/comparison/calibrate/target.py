"""What a candidate run is held against (the trace's goodput, stalls, ACKs and short segments), the
same read from a run, and the distance between the two."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from stallscope.simulate.run_bulk import SENDER_ADDR, run_bulk
from stallscope.vocabulary import UNDETERMINED

from ...findings import ConnectionAnalysis
from ..compare import IDLE
from ..fit import Fit, Fitted

# A candidate replaces the first estimate only when its distance is smaller by more than this.
KEEP_FIRST_MARGIN = 0.05


# Above this distance after the groups, they are gone through again, up to PASSES times in all.
SECOND_PASS_SCORE = 0.1


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
    from ...inference import NAGLE_OFF_MIN, NAGLE_OFF_SHARE

    n, behind_short, behind_any = shorts
    if not n:
        return "unknown"
    if behind_short >= max(NAGLE_OFF_MIN, NAGLE_OFF_SHARE * n):
        return "off"
    return "minshall" if behind_any else "classic"


def trace_target(conn: ConnectionAnalysis, dir_: int, goodput: float, duration_ns: int, last_frame: int | None = None
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


def candidate_score(fit: Fit, changes: dict[str, Any], target: Target) -> float | None:
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


# A longer transfer is calibrated on its first this many bytes: each candidate run then costs
# milliseconds, not the tenths of a second a 100 MB replay takes, and a trace's framing, stack and
# buffers show from its start.
CALIBRATION_BYTES = 8 * 1024 * 1024


def calibration_prefix(fit: Fit, conn: ConnectionAnalysis, rows: Any) -> tuple[Fit, Target] | None:
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
    target = trace_target(conn, d.dir, goodput, span, int(new["frame"][-1]))
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


def score_of(fit: Fit, changes: dict[str, Any], target: Target) -> tuple[float, int | None, float] | None:
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
