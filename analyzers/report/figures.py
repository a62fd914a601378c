"""Plotly figures of one connection, from its findings and its slice of the per-packet table.

`connection_figure` is one figure of five rows sharing the time axis (zooming one zooms all):
the time-sequence graph in tcptrace's style, bytes in flight against the peer's window and the send
buffer, RTT samples, goodput, and the limiting factor over time. `ack_delay_figure` is the
histogram of the peer's ACK delays with the learned delayed-ACK timer marked.

Large connections are decimated for the screen: each continuous series keeps, per pixel column of
`COLUMNS`, its lowest and highest point (so every peak and dip stays drawn), and is drawn with WebGL
(Scattergl). Events are not decimated below one per pixel cell: every retransmission, SACK block,
zero or full window and stall stays drawn (stalls exactly, from the findings).

Figures are plain plotly.js specifications (dicts), not plotly.graph_objects: validating
graph objects cost more than everything else in the report of a large capture. Numeric arrays are
written as plotly.js typed arrays (base64), NaN being a gap.

No capture-derived text (addresses, file names) goes into a figure: Plotly renders its own subset
of HTML in labels, so figures name directions by number and the page around them (autoescaped by
Jinja) carries the names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import base64
import json

import numpy as np
import polars as pl

# Okabe & Ito's colour-blind-safe palette (Color Universal Design).
OKABE_ITO = {
    "black": "#000000", "orange": "#E69F00", "sky_blue": "#56B4E9", "bluish_green": "#009E73",
    "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "reddish_purple": "#CC79A7",
    "grey": "#999999",
}
_C = OKABE_ITO
# One colour per family of causes (hover and the legend name the exact cause).
CAUSE_COLOURS = {
    "nagle_delayed_ack": _C["orange"], "nodelay_tail_held": _C["orange"],
    "window_update_deadlock": _C["reddish_purple"],
    "receiver_window_limited": _C["sky_blue"], "sender_sws": _C["yellow"],
    "send_buffer_limited": _C["bluish_green"],
    "burst_loss_timeout": _C["vermillion"], "single_loss_timeout": _C["vermillion"],
    "ack_loss_timeout": _C["vermillion"], "spurious_timeout": _C["vermillion"],
    "jumbo_slot_exhaustion": _C["blue"], "pmtu_blackhole": _C["blue"], "mss_mismatch": _C["blue"],
    "application_idle": _C["grey"], "undetermined": _C["black"],
}
LIMIT_COLOURS = {"application": _C["grey"], "cwnd": _C["blue"], "peer_window": _C["sky_blue"],
                 "send_buffer": _C["bluish_green"], "loss": _C["vermillion"]}

# Pixel columns a series is decimated to (a wide screen), and the size above which it is.
COLUMNS = 2000
DECIMATE_ABOVE = 2 * COLUMNS
# A series of a large connection with more points than this (after decimation) is drawn with WebGL.
WEBGL_ABOVE = 1000
# Rows of the grid events are thinned to when there are more than EVENTS_MAX of one kind.
EVENT_ROWS = 400
EVENTS_MAX = 20_000
# Columns the figure reads from the per-packet table.
STATE_COLUMNS = ["frame", "ts_ns", "stream", "dir", "seq_rel", "seq_end", "ack_rel", "win_scaled", "flag_ack",
                 "payload_len", "new_data", "retransmission", "retrans_kind", "in_flight", "peer_window",
                 "usable_window", "rtt_ns", "ack_delay_ns", "sack_left", "sack_right"]
ROWS = ("time-sequence", "in flight", "RTT", "goodput", "limit")


def cause_colour(cause: str) -> str:
    return CAUSE_COLOURS.get(cause, _C["black"])


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    return f"rgba({int(h[0:2], 16)},{int(h[2:4], 16)},{int(h[4:6], 16)},{alpha})"


def minmax_indices(x: np.ndarray, y: np.ndarray, x0: float, x1: float, columns: int | None = None) -> np.ndarray:
    """Indices (in order) of the lowest and highest point of each pixel column (COLUMNS unless
    given): all of them when there are few points. `x` must be sorted."""
    columns = columns or COLUMNS
    n = len(x)
    if n <= 2 * columns or x1 <= x0:
        return np.arange(n)
    col = np.clip(((x - x0) / (x1 - x0) * columns).astype(np.int64), 0, columns - 1)
    order = np.lexsort((y, col))
    sc = col[order]
    first = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
    last = np.r_[first[1:] - 1, n - 1]
    return np.unique(np.concatenate([order[first], order[last]]))


def event_indices(x: np.ndarray, y: np.ndarray, x0: float, x1: float, y0: float, y1: float) -> np.ndarray:
    """All events when there are at most EVENTS_MAX; else one per cell of a COLUMNS x EVENT_ROWS
    grid, so that every cell holding an event still shows one."""
    n = len(x)
    if n <= EVENTS_MAX:
        return np.arange(n)
    cx = np.clip(((x - x0) / max(x1 - x0, 1e-12) * COLUMNS).astype(np.int64), 0, COLUMNS - 1)
    cy = np.clip(((y - y0) / max(y1 - y0, 1e-12) * EVENT_ROWS).astype(np.int64), 0, EVENT_ROWS - 1)
    _, idx = np.unique(cx * EVENT_ROWS + cy, return_index=True)
    return np.sort(idx)


@dataclass
class Series:
    """One direction's rows of a connection as numpy arrays (time in seconds from the start)."""

    t: np.ndarray
    cols: dict[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cols[name]


def _numpy(df: pl.DataFrame, t0: int, names: list[str]) -> Series:
    t = ((df["ts_ns"] - t0).cast(pl.Float64) / 1e9).to_numpy()
    return Series(t, {n: df[n].to_numpy() for n in names})


class _Builder:
    def __init__(self, part: pl.DataFrame, conn, d: int, t0: int, t1: int) -> None:
        self.part, self.conn, self.d, self.t0 = part, conn, d, t0
        self.x0, self.x1 = 0.0, max((t1 - t0) / 1e9, 1e-6)
        self.large = part.height > DECIMATE_ABOVE
        self.decimated = False
        profile = next((x.profile for x in conn.directions if x.dir == d), {})
        self.profile = profile
        self.mss = profile.get("max_segment") or 1

    def scatter(self, **kw: Any) -> dict[str, Any]:
        n = len(kw.get("x", ()))
        return trace("scattergl" if self.large and n > WEBGL_ABOVE else "scatter", **kw)

    def series(self, x: np.ndarray, y: np.ndarray, *extra: np.ndarray) -> tuple[np.ndarray, ...]:
        idx = minmax_indices(x, y, self.x0, self.x1)
        if len(idx) < len(x):
            self.decimated = True
        return (x[idx], y[idx], *(e[idx] for e in extra))


def trace(kind: str, **kw: Any) -> dict[str, Any]:
    return {"type": kind, **kw}


def _typed(v: np.ndarray) -> Any:
    """A numeric numpy array as a plotly.js typed array (base64); other arrays as lists."""
    if v.dtype.kind == "f":
        a = v.astype("<f8")
        return {"dtype": "f8", "bdata": base64.b64encode(a.tobytes()).decode("ascii")}
    if v.dtype.kind in "iub":
        if len(v) and (v.min() < -(2 ** 31) or v.max() >= 2 ** 31):
            return _typed(v.astype(np.float64))
        return {"dtype": "i4", "bdata": base64.b64encode(v.astype("<i4").tobytes()).decode("ascii")}
    return [None if x is None else x for x in v.tolist()]


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return _typed(obj)
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and obj != obj:
        return None
    return obj


def to_json(fig: dict[str, Any]) -> str:
    """A figure ({data, layout}) as JSON text for plotly.js."""
    return json.dumps(_jsonable(fig), separators=(",", ":"), allow_nan=False)


def _axes_layout(rows: int, heights: list[float], spacing: float, titles: list[str]) -> dict[str, Any]:
    """Rows of subplots stacked top to bottom sharing one x axis (each matches the bottom one)."""
    usable = 1 - spacing * (rows - 1)
    layout: dict[str, Any] = {"annotations": []}
    top = 1.0
    for r in range(1, rows + 1):
        h = usable * heights[r - 1] / sum(heights)
        lo = max(0.0, top - h)
        sx = "" if r == 1 else str(r)
        layout[f"xaxis{sx}"] = {"anchor": f"y{sx}", "domain": [0, 1], "showticklabels": r == rows, **_AXIS,
                                **({"matches": f"x{rows}"} if r < rows else {})}
        layout[f"yaxis{sx}"] = {"anchor": f"x{sx}", "domain": [lo, top], **_AXIS}
        layout["annotations"].append({"text": titles[r - 1], "x": 0.5, "xref": "paper", "xanchor": "center",
                                      "y": top, "yref": "paper", "yanchor": "bottom", "showarrow": False,
                                      "font": {"size": 13}})
        top = lo - spacing
    return layout


_AXIS = {"automargin": True, "showline": True, "linecolor": "#444", "ticks": "outside", "zeroline": False, "showgrid": True,
         "gridcolor": "#eeeeee"}
_LAYOUT = {"paper_bgcolor": "white", "plot_bgcolor": "white", "font": {"size": 11},
           "colorway": ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#000000"]}


def _segments(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertical segments (x, lo)-(x, hi) as one line trace with gaps."""
    n = len(x)
    xs = np.empty(3 * n)
    ys = np.empty(3 * n)
    xs[0::3], xs[1::3], xs[2::3] = x, x, np.nan
    ys[0::3], ys[1::3], ys[2::3] = lo, hi, np.nan
    return xs, ys


def _boxes(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Closed rectangles [start, end] x [lo, hi] as one filled trace with gaps."""
    n = len(starts)
    xs = np.empty(6 * n)
    ys = np.empty(6 * n)
    for k, (xv, yv) in enumerate(((starts, lo), (starts, hi), (ends, hi), (ends, lo), (starts, lo), (np.nan, np.nan))):
        xs[k::6] = xv
        ys[k::6] = yv
    return xs, ys


def _bars(starts: np.ndarray, ends: np.ndarray, label: str) -> tuple[np.ndarray, list[Any]]:
    n = len(starts)
    xs = np.empty(3 * n)
    xs[0::3], xs[1::3], xs[2::3] = starts, ends, np.nan
    return xs, [label, label, None] * n


class _Figure:
    """Just enough of plotly's Figure API to stack rows of subplots, as a plain specification."""

    def __init__(self, rows: int, heights: list[float], spacing: float, titles: list[str]) -> None:
        self.data: list[dict[str, Any]] = []
        self.layout: dict[str, Any] = {**_LAYOUT, **_axes_layout(rows, heights, spacing, titles)}

    def add_trace(self, tr: dict[str, Any], row: int = 1, col: int = 1) -> None:
        sx = "" if row == 1 else str(row)
        tr = {**tr, "xaxis": f"x{sx}", "yaxis": f"y{sx}"}
        if "line_shape" in tr:
            tr["line"] = {**tr.get("line", {}), "shape": tr.pop("line_shape")}
        self.data.append(tr)

    def _axis(self, key: str, row: int, title_text: str | None, kw: dict[str, Any]) -> None:
        if title_text:
            kw["title"] = {"text": title_text}
        self.layout[key + ("" if row == 1 else str(row))].update(kw)

    def update_yaxes(self, row: int, col: int = 1, title_text: str | None = None, **kw: Any) -> None:
        self._axis("yaxis", row, title_text, kw)

    def update_xaxes(self, row: int, col: int = 1, title_text: str | None = None, **kw: Any) -> None:
        self._axis("xaxis", row, title_text, kw)

    def to_dict(self) -> dict[str, Any]:
        return {"data": self.data, "layout": self.layout}


def connection_figure(conn, part: pl.DataFrame, d: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The linked time graphs of connection `conn` for its data direction `d`. `part` is the
    connection's rows of the per-packet table, in time order. Returns the figure and facts about
    how it was drawn (points, decimation)."""
    t0 = int(part["ts_ns"][0])
    t1 = int(part["ts_ns"][-1])
    b = _Builder(part, conn, d, t0, t1)
    a = 1 - d
    fig = _Figure(5, [0.40, 0.17, 0.13, 0.13, 0.17], 0.035,
                  [f"time-sequence (dir {d}: data; dir {a}: ACKs, window, SACK)",
                   "bytes in flight, peer window, send buffer", "RTT samples", "goodput", "limiting factor"])
    data = part.filter(pl.col("dir") == d)
    acks = part.filter((pl.col("dir") == a) & pl.col("flag_ack"))
    dn = _numpy(data, t0, ["frame", "seq_rel", "seq_end", "payload_len", "new_data", "retransmission",
                           "in_flight", "peer_window", "usable_window", "rtt_ns"])
    an = _numpy(acks, t0, ["frame", "ack_rel", "win_scaled", "ack_delay_ns"])
    seg = (dn["payload_len"] > 0)
    y_top = float(max(np.nanmax(dn["seq_end"]) if len(dn.t) else 0,
                      np.nanmax(an["ack_rel"] + an["win_scaled"]) if len(an.t) else 0, 1))

    # Stalls shaded by cause (behind everything: first traces).
    for cause in sorted({s.cause for s in conn.stalls if s.dir == d}):
        ss = [s for s in conn.stalls if s.dir == d and s.cause == cause]
        starts = np.array([(s.start_ns - t0) / 1e9 for s in ss])
        ends = np.array([(s.end_ns - t0) / 1e9 for s in ss])
        xs, ys = _boxes(starts, ends, 0.0, y_top)
        fig.add_trace(trace("scatter", x=xs, y=ys, mode="lines", fill="toself", name=f"stall: {cause}",
                                 legendgroup=f"stall:{cause}", line=dict(width=0, color=cause_colour(cause)),
                                 fillcolor=_rgba(cause_colour(cause), 0.22), hoverinfo="skip"), row=1, col=1)
    # Data segments: vertical lines seq..seq_end (tcptrace); decimated to min/max of seq_end.
    x, lo, hi, fr = dn.t[seg], dn["seq_rel"][seg], dn["seq_end"][seg], dn["frame"][seg]
    if len(x) <= DECIMATE_ABOVE:
        xs, ys = _segments(x, lo, hi)
        fig.add_trace(b.scatter(x=xs, y=ys, mode="lines+markers", name=f"data (dir {d})",
                                line=dict(color=_C["blue"], width=1.5), marker=dict(size=3, color=_C["blue"]),
                                customdata=np.repeat(fr, 3), hovertemplate="frame %{customdata}<br>seq %{y}<extra></extra>"),
                      row=1, col=1)
    else:
        xd, yd, fd = b.series(x, hi, fr)
        fig.add_trace(b.scatter(x=xd, y=yd, mode="markers", name=f"data (dir {d})",
                                marker=dict(size=3, color=_C["blue"]), customdata=fd,
                                hovertemplate="frame %{customdata}<br>seq end %{y}<extra></extra>"), row=1, col=1)
    # The ACK line and the advertised window line (ack + window), as steps.
    if len(an.t):
        xa, ya, fa = b.series(an.t, an["ack_rel"].astype(np.float64), an["frame"])
        fig.add_trace(b.scatter(x=xa, y=ya, mode="lines", line_shape="hv", name=f"ACK (dir {a})",
                                line=dict(color=_C["bluish_green"], width=1.5), customdata=fa,
                                hovertemplate="ACK frame %{customdata}<br>ack %{y}<extra></extra>"), row=1, col=1)
        edge = (an["ack_rel"] + an["win_scaled"]).astype(np.float64)
        xw, yw = b.series(an.t, edge)
        fig.add_trace(b.scatter(x=xw, y=yw, mode="lines", line_shape="hv", name="advertised window (ack + window)",
                                line=dict(color=_C["black"], width=1, dash="dot"),
                                hovertemplate="window edge %{y}<extra></extra>"), row=1, col=1)
    # Retransmissions (every one, thinned only to one per pixel cell past EVENTS_MAX).
    rx = dn["retransmission"] & seg
    if rx.any():
        x, y, fr = dn.t[rx], dn["seq_end"][rx].astype(np.float64), dn["frame"][rx]
        idx = event_indices(x, y, b.x0, b.x1, 0, y_top)
        fig.add_trace(trace("scatter", x=x[idx], y=y[idx], mode="markers", name="retransmission",
                                 marker=dict(symbol="x", size=8, color=_C["vermillion"]), customdata=fr[idx],
                                 hovertemplate="retransmission frame %{customdata}<br>seq end %{y}<extra></extra>"),
                      row=1, col=1)
    # SACK blocks reported by the peer: vertical bars left..right at the ACK's time.
    sacks = acks.filter(pl.col("sack_left").list.len() > 0)
    if sacks.height:
        ex = sacks.select("ts_ns", "frame", "sack_left", "sack_right").explode(["sack_left", "sack_right"])
        x = ((ex["ts_ns"] - t0).cast(pl.Float64) / 1e9).to_numpy()
        l, r = ex["sack_left"].to_numpy().astype(np.float64), ex["sack_right"].to_numpy().astype(np.float64)
        idx = event_indices(x, r, b.x0, b.x1, 0, y_top)
        xs, ys = _segments(x[idx], l[idx], r[idx])
        fig.add_trace(trace("scatter", x=xs, y=ys, mode="lines", name="SACK block", line=dict(color=_C["sky_blue"], width=3),
                                 hovertemplate="SACK %{y}<extra></extra>"), row=1, col=1)
    fig.update_yaxes(title_text="sequence (bytes)", row=1, col=1)

    # Bytes in flight against the peer's window, and the inferred send buffer.
    if len(dn.t):
        xf, yf = b.series(dn.t, dn["in_flight"].astype(np.float64))
        fig.add_trace(b.scatter(x=xf, y=yf, mode="lines", line_shape="hv", name="bytes in flight",
                                line=dict(color=_C["blue"], width=1.5)), row=2, col=1)
        pw = dn["peer_window"].astype(np.float64)
        ok = ~np.isnan(pw)
        xp, yp = b.series(dn.t[ok], pw[ok])
        fig.add_trace(b.scatter(x=xp, y=yp, mode="lines", line_shape="hv", name="peer window",
                                line=dict(color=_C["black"], width=1, dash="dot")), row=2, col=1)
        # Window events: zero windows and sends with less than a segment of usable window.
        uw = dn["usable_window"].astype(np.float64)
        full = (uw < b.mss) & ~np.isnan(uw) & (dn["payload_len"] > 0)
        zero = (pw == 0)
        for mask, label, colour, symbol in ((full, "window full (< 1 segment usable)", _C["sky_blue"], "triangle-down"),
                                            (zero, "zero window", _C["vermillion"], "square")):
            if mask.any():
                x, y, fr = dn.t[mask], dn["in_flight"][mask].astype(np.float64), dn["frame"][mask]
                idx = event_indices(x, y, b.x0, b.x1, 0, float(np.nanmax(pw[ok])) if ok.any() else 1.0)
                fig.add_trace(trace("scatter", x=x[idx], y=y[idx], mode="markers", name=label, customdata=fr[idx],
                                         marker=dict(symbol=symbol, size=6, color=colour),
                                         hovertemplate=label + ": frame %{customdata}<extra></extra>"), row=2, col=1)
    sbuf = b.profile.get("send_buffer_estimate")
    if sbuf:
        fig.add_trace(trace("scatter", x=[b.x0, b.x1], y=[sbuf, sbuf], mode="lines", name=f"send buffer (inferred, {sbuf} B)",
                                 line=dict(color=_C["bluish_green"], width=2, dash="dash")), row=2, col=1)
    fig.update_yaxes(title_text="bytes", row=2, col=1)

    # RTT samples (Karn).
    rtt = dn["rtt_ns"].astype(np.float64)
    ok = ~np.isnan(rtt)
    if ok.any():
        xr, yr, fr = b.series(dn.t[ok], rtt[ok] / 1e6, dn["frame"][ok])
        fig.add_trace(b.scatter(x=xr, y=yr, mode="markers", name="RTT sample", marker=dict(size=4, color=_C["orange"]),
                                customdata=fr, hovertemplate="frame %{customdata}<br>%{y:.2f} ms<extra></extra>"),
                      row=3, col=1)
    fig.update_yaxes(title_text="ms", row=3, col=1)

    # Goodput: new bytes per bin.
    new = dn["new_data"] & seg
    if new.any():
        bins = 200
        width = (b.x1 - b.x0) / bins
        k = np.clip((dn.t[new] / width).astype(np.int64), 0, bins - 1)
        per_bin = np.bincount(k, weights=dn["payload_len"][new].astype(np.float64), minlength=bins)
        xb = b.x0 + (np.arange(bins) + 0.5) * width
        fig.add_trace(trace("scatter", x=xb, y=per_bin * 8 / width / 1e6, mode="lines", line_shape="hvh",
                                 name=f"goodput ({width * 1e3:.3g} ms bins)", line=dict(color=_C["bluish_green"], width=1.5),
                                 hovertemplate="%{y:.2f} Mbit/s<extra></extra>"), row=4, col=1)
    fig.update_yaxes(title_text="Mbit/s", row=4, col=1)

    # Limiting factor over time, and the stalls by cause on their own rows.
    for label, starts, ends in _limit_runs(part, d, b):
        xs, ys = _bars(starts, ends, label)
        fig.add_trace(trace("scatter", x=xs, y=ys, mode="lines", name=f"limit: {label}", showlegend=False,
                                 line=dict(color=LIMIT_COLOURS.get(label, _C["black"]), width=10),
                                 hovertemplate=label + "<extra></extra>"), row=5, col=1)
    for cause in sorted({s.cause for s in conn.stalls if s.dir == d}):
        ss = [s for s in conn.stalls if s.dir == d and s.cause == cause]
        xs, ys = _bars(np.array([(s.start_ns - t0) / 1e9 for s in ss]), np.array([(s.end_ns - t0) / 1e9 for s in ss]),
                       f"stall: {cause}")
        # Hover names each stall: cause, detail, frames, time lost (no capture text in it).
        words = [f"{s.cause}{'/' + s.detail if s.detail else ''}: frames {s.start_frame}-{s.end_frame}, "
                 f"{s.duration_ns / 1e6:.1f} ms ({s.time_lost_ns / 1e6:.1f} ms lost)" for s in ss]
        text = [w for w in words for w in (w, w, None)]
        fig.add_trace(trace("scatter", x=xs, y=ys, mode="lines", name=f"stall: {cause}", legendgroup=f"stall:{cause}",
                            showlegend=False, line=dict(color=cause_colour(cause), width=10), text=text,
                            hovertemplate="%{text}<extra></extra>"), row=5, col=1)
    fig.update_yaxes(type="category", row=5, col=1)
    fig.update_xaxes(title_text="seconds since the connection's first packet", row=5, col=1)
    fig.layout.update(height=1100, margin=dict(l=70, r=20, t=40, b=50), hovermode="closest",
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    points = sum(len(tr["x"]) for tr in fig.data)
    return fig.to_dict(), {"points": points, "decimated": b.decimated,
                           "webgl": any(tr["type"] == "scattergl" for tr in fig.data), "packets": part.height}


def _limit_runs(part: pl.DataFrame, d: int, b: _Builder) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """The limit in force between packets (the rule of analyzers/timeline.py: loss recovery,
    nothing outstanding, less than a segment of usable window, the flight at the send-buffer
    plateau, else the congestion window), as runs per label; outside the data direction's active
    time nothing. Past COLUMNS runs, the limit at each pixel column's start is drawn."""
    plateau = b.profile.get("send_buffer_estimate")
    own = pl.col("dir") == d
    df = part.select(
        "ts_ns",
        pl.when(own).then(pl.col("in_flight")).forward_fill().alias("flight"),
        pl.when(own).then(pl.col("usable_window")).forward_fill().alias("usable"),
        pl.when(own & pl.col("retransmission")).then(pl.lit(True)).when(own & pl.col("new_data")).then(pl.lit(False))
        .forward_fill().fill_null(False).alias("recovering"),
        (own & (pl.col("payload_len") > 0)).alias("data"),
    )
    active = df.filter(pl.col("data"))["ts_ns"]
    if active.len() < 2:
        return []
    first, last = int(active.min()), int(active.max())
    df = df.filter((pl.col("ts_ns") >= first) & (pl.col("ts_ns") <= last))
    labels = ["loss", "application", "peer_window", "send_buffer", "cwnd"]
    code = (pl.when(pl.col("recovering")).then(0)
            .when(pl.col("flight").fill_null(0) == 0).then(1)
            .when(pl.col("usable").fill_null(1 << 40) < b.mss).then(2)
            .when(pl.lit(bool(plateau)) & (pl.col("flight") >= (plateau or 0) - b.mss)).then(3)
            .otherwise(4))
    codes = df.select(code.alias("c"))["c"].to_numpy()
    t = ((df["ts_ns"] - b.t0).cast(pl.Float64) / 1e9).to_numpy()
    change = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    if len(change) > COLUMNS:
        grid = np.linspace(t[0], t[-1], COLUMNS + 1)
        pos = np.clip(np.searchsorted(t, grid[:-1], side="right") - 1, 0, len(t) - 1)
        codes, t = codes[pos], grid[:-1]
        t = np.r_[t, grid[-1]]
        change = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        ends_at = np.r_[t[change[1:]], t[-1]]
    else:
        ends_at = np.r_[t[change[1:]], t[-1]]
    out = []
    run_codes = codes[change]
    for c, label in enumerate(labels):
        m = run_codes == c
        if m.any():
            out.append((label, t[change][m], ends_at[m]))
    return out


def ack_delay_figure(conn, part: pl.DataFrame, d: int) -> dict[str, Any] | None:
    """Histogram of the delays of the peer's ACKs of direction d's data (at the tap: from the
    newest data an ACK covers to the ACK), with the delayed-ACK timer learned for that peer."""
    a = 1 - d
    delays = part.filter((pl.col("dir") == a) & pl.col("ack_delay_ns").is_not_null())["ack_delay_ns"]
    if delays.len() == 0:
        return None
    ms = delays.cast(pl.Float64).to_numpy() / 1e6
    profile = next((x.profile for x in conn.directions if x.dir == d), {})
    peer = profile.get("peer_delayed_ack") or {}
    timer = peer.get("timer_ns")
    top = float(max(np.percentile(ms, 99.9), (timer or 0) / 1e6 * 1.3, 1e-3))
    counts, edges = np.histogram(np.clip(ms, 0, top), bins=80, range=(0, top))
    data = [trace("bar", x=(edges[:-1] + edges[1:]) / 2, y=counts, width=float(edges[1] - edges[0]),
                  marker=dict(color=_C["blue"]), name="ACKs", hovertemplate="%{x:.2f} ms: %{y} ACKs<extra></extra>")]
    layout: dict[str, Any] = {
        **_LAYOUT, "height": 300, "bargap": 0, "margin": dict(l=70, r=20, t=30, b=50), "showlegend": False,
        "xaxis": {**_AXIS, "title": {"text": f"ACK delay at the tap, ms (dir {a}'s ACKs of dir {d}'s data; "
                                              f"last bin: {top:.1f} ms or more)"}},
        "yaxis": {**_AXIS, "title": {"text": "ACKs"},
                  "type": "log" if counts.max() > 100 * max(1, np.median(counts[counts > 0])) else "linear"},
        "shapes": [], "annotations": []}
    if timer:
        label = f"learned delayed-ACK timer: {timer / 1e6:.1f} ms ({peer.get('timer', '')})"
        layout["shapes"].append({"type": "line", "x0": timer / 1e6, "x1": timer / 1e6, "xref": "x", "y0": 0, "y1": 1,
                                 "yref": "paper", "line": dict(color=_C["vermillion"], width=2, dash="dash")})
        layout["annotations"].append({"x": timer / 1e6, "y": 1, "xref": "x", "yref": "paper", "text": label,
                                      "showarrow": False, "xanchor": "right", "yanchor": "top",
                                      "font": dict(color=_C["vermillion"])})
    return {"data": data, "layout": layout}
