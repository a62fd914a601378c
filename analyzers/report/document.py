"""The report page: the analysis of one or more captures as one self-contained HTML file.

Built from the analyzer's typed findings and per-packet table (figures.py draws the graphs), with a
Jinja2 template whose autoescaping covers every string taken from a capture (file names,
addresses, note and evidence texts). Figures are embedded as JSON in `<script type="application/json">`
blocks, with `<`, `>` and `&` written as JSON escapes so nothing in them can close the block;
plotly.js is inlined once. The page fetches nothing.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from stallscope import __version__
from stallscope.analyzers.analysis_text import rate
from stallscope.analyzers.report import figures

TEMPLATES = Path(__file__).resolve().parent / "templates"
# Connections drawn with graphs (the worst first); the others keep their card and findings.
MAX_GRAPHED = 12
# Stalls listed one by one per connection, and in the whole report (the worst connections first;
# the JSON document has all of them): a capture of thousands of connections stays readable and small.
MAX_LISTED_STALLS = 200
MAX_LISTED_TOTAL = 5000

CAUSE_MEANING = {
    "nagle_delayed_ack": "a segment shorter than the MSS held by Nagle's rule until the receiver's delayed ACK came",
    "window_update_deadlock": "the whole send buffer was in flight yet below the receiver's window-update threshold, "
                              "so only the receiver's delayed-ACK timer moved the sender (Moldeklev)",
    "sender_sws": "the sender waited for a window large enough to avoid silly-window syndrome",
    "nodelay_tail_held": "Nagle was off, yet a short tail was held until everything was acknowledged",
    "receiver_window_limited": "the peer's advertised window left no room (a slow reader)",
    "send_buffer_limited": "the sender's own buffer, not a window, capped the flight",
    "burst_loss_timeout": "several segments were lost and only a retransmission timeout repaired them",
    "single_loss_timeout": "one segment was lost and a retransmission timeout repaired it",
    "ack_loss_timeout": "the data was delivered but its ACKs were lost, so the timer fired",
    "spurious_timeout": "the retransmission timer fired before the ACK of delivered data came",
    "jumbo_slot_exhaustion": "large frames were lost for want of jumbo receive buffers while small ones passed",
    "pmtu_blackhole": "full-size segments were lost on a path with a smaller MTU and no ICMP back",
    "mss_mismatch": "an MSS was advertised and never used (GigaTCP's bug)",
    "application_idle": "the sender had nothing to send",
    "undetermined": "no rule explains it",
}
LINKTYPES = {0: "BSD loopback", 1: "Ethernet", 12: "raw IP", 14: "raw IP", 101: "raw IP", 108: "OpenBSD loopback",
             113: "Linux cooked (SLL)", 123: "SunATM", 19: "ATM (classical IP)", 228: "raw IPv4", 229: "raw IPv6",
             276: "Linux cooked v2 (SLL2)", 9: "PPP", 50: "PPP (HDLC)", 104: "Cisco HDLC", 105: "802.11",
             127: "802.11 radiotap"}


def duration(ns: int | None) -> str:
    if ns is None:
        return "-"
    if ns < 1_000_000:
        return f"{ns / 1e3:.0f} µs"
    if ns < 10_000_000_000:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e9:.2f} s"


def wireshark_filter(stream: int, first: int, last: int) -> str:
    return f"tcp.stream eq {stream} && frame.number >= {first} && frame.number <= {last}"


def evidence_words(s) -> str:
    """The evidence of one stall as a sentence (frames, sizes, delays)."""
    e = s.evidence
    parts = []
    if "write_size" in e:
        pace = f" every {e['write_period_ns'] / 1e6:g} ms" if e.get("write_period_ns") else ""
        what = "the last" if e.get("held_tail_from_offset") is not None else ""
        parts.append(f"{what + ' ' if what else ''}{e['held_bytes']} bytes of a write were held behind "
                     f"{e.get('outstanding_bytes')} unacknowledged bytes until the next write sent them (frame "
                     f"{e.get('held_segment_frame')}, {e.get('held_segment_len')} B); the writes are {e['write_size']} B"
                     f"{pace}, and no ACK released them")
    elif "held_segment_len" in e:
        parts.append(f"a {e['held_segment_len']}-byte segment (frame {e.get('held_segment_frame')}) was held behind "
                     f"{e.get('outstanding_bytes')} unacknowledged bytes" + (f" (full segment {e['mss']} B)" if e.get("mss") else ""))
    if "releasing_ack_frame" in e:
        delay = e.get("releasing_ack_delay_ns")
        parts.append(f"the peer's ACK in frame {e['releasing_ack_frame']} released it"
                     + (f", {delay / 1e6:.1f} ms after the data it covers reached the peer" if delay is not None else ""))
    if e.get("learned_ack_timer_ns"):
        parts.append(f"the peer's delayed-ACK timer learned from the trace is {e['learned_ack_timer_ns'] / 1e6:.0f} ms "
                     f"({e.get('learned_ack_timer')})")
    if "buffer_in_use" in e:
        parts.append(f"{e['buffer_in_use']} bytes of send buffer in use")
    if "window_before_release" in e and "held_segment_len" not in e:
        parts.append(f"the peer's window went from {e['window_before_release']} B "
                     f"({e.get('usable_window_before_release')} B usable) to {e.get('window_after_release')} B")
    if e.get("send_buffer_estimate"):
        parts.append(f"send buffer about {e['send_buffer_estimate']} B")
    if "first_timeout_frame" in e:
        parts.append(f"{e.get('timeouts', 1)} timeout(s); the first resend is frame {e['first_timeout_frame']} after "
                     f"{duration(e.get('silence_before_timeout_ns'))} of silence; {e.get('segments_resent')} segment(s) resent")
    if e.get("delivered"):
        parts.append(f"the data had been delivered ({e['delivered']})")
    if e.get("path_finding"):
        parts.append(f"attributed to the connection finding {e['path_finding']}")
    if e.get("turnaround"):
        parts.append(f"the data answered the peer's request in frame {e.get('peer_data_frame')} "
                     f"({e.get('peer_data_bytes')} B)")
    elif "resumed_frame" in e:
        parts.append(f"a write ended at frame {e.get('write_ended_frame')} and the writer resumed at frame {e['resumed_frame']}")
    elif "idle_after_acked_ns" in e:
        parts.append(f"idle {duration(e['idle_after_acked_ns'])} with everything acknowledged (frame {e.get('all_acked_frame')})")
    if "reason" in e:
        parts.append(str(e["reason"]))
    parts.append(f"{e.get('outstanding_at_start', 0)} B outstanding at the start, {e.get('peer_acks_during', 0)} peer ACK(s) during it")
    return "; ".join(parts) + "."


def verdict(c, d) -> str:
    """The connection's diagnosis in one sentence."""
    total = max(c.duration_ns, 1)
    lost = c.time_lost_ns
    top = c.top_cause()
    if top is None:
        if d is not None and d.limits:
            k, v = max(d.limits.items(), key=lambda kv: kv[1])
            return (f"No stall with a transport cause: the sender was mostly limited by {k.replace('stall:', 'stalls of ')} "
                    f"({v:.0%} of its active time).")
        return "No stall and no finding: nothing slowed this connection that the capture shows."
    n = sum(1 for s in c.stalls if s.cause == top)
    if lost == 0:
        f = next((f for f in c.findings if f.cause == top), None)
        why = f.evidence.get("why", "") if f is not None else ""
        return f"{top}: {why}" if why else f"Connection finding: {top} ({CAUSE_MEANING.get(top, '')})."
    share = lost / total
    return (f"Lost {duration(lost)} of {duration(c.duration_ns)} ({share:.0%}) to stalls, mostly {top} "
            f"({n} stall{'s' if n != 1 else ''}: {CAUSE_MEANING.get(top, top)}).")


@dataclass
class FileFacts:
    path: str
    size: int | None
    format: str
    status: str
    error: dict[str, Any] | None
    links: list[str]
    snaplens: list[int]
    interfaces: list[str]
    first_ns: int | None
    last_ns: int | None
    decode: dict[str, Any]
    drops: dict[str, int] = field(default_factory=dict)


_PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">", b"\x4d\x3c\xb2\xa1": "<",
                b"\xa1\xb2\x3c\x4d": ">"}


def _pcap_header(path: str) -> dict[str, Any] | None:
    """A classic pcap file's link type and snaplen from its 24-byte header (gzip or not); None for
    anything else (pcapng, standard input)."""
    import gzip
    import struct

    if path == "-":
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rb") as fh:
            header = fh.read(24)
    except OSError:
        return None
    order = _PCAP_MAGICS.get(header[:4])
    if order is None or len(header) < 24:
        return None
    snaplen, linktype = struct.unpack(order + "II", header[16:24])
    return {"interfaces": [{"linktype": linktype & 0x0FFFFFFF, "snaplen": snaplen, "name": None}]}


def capture_facts(path: str) -> dict[str, Any]:
    """The container's facts (link types, snaplens, interface names, drop counters): a classic
    pcap's from its header; otherwise from a pass of the decoder that decodes one column only."""
    from stallscope.packets.decoder import iter_batches

    quick = _pcap_header(path)
    if quick is not None:
        return quick
    if path == "-":
        return {}
    from stallscope.packets.errors import CaptureDamaged, CaptureRejected

    batches = iter_batches(path, columns=["frame"])
    try:
        for _ in batches:
            pass
    except (CaptureDamaged, CaptureRejected):
        pass
    summary = batches.summary
    return summary.container if summary is not None else {}


def _file_facts(f, container: dict[str, Any] | None) -> FileFacts:
    if container is None:
        container = capture_facts(f.path) if f.status != "rejected" else {}
    ifs = container.get("interfaces") or []
    links = sorted({f"{LINKTYPES.get(i.get('linktype'), 'link type')} ({i.get('linktype')})" for i in ifs})
    snaps = sorted({i.get("snaplen") for i in ifs if i.get("snaplen") is not None})
    names = [str(i["name"]) for i in ifs if i.get("name")]
    try:
        size = Path(f.path).stat().st_size
    except OSError:
        size = None
    first = last = None
    if f.core_state is not None and f.core_state.height:
        ts = f.core_state["ts_ns"]
        first, last = int(ts.min()), int(ts.max())
    drops = {k: container[k] for k in ("if_drop", "os_drop", "epb_dropcount") if container.get(k)}
    return FileFacts(f.path, size, f.decode.get("format", "-"), f.status, f.error, links, snaps, names, first, last,
                     f.decode, drops)


def utc(ns: int | None) -> str:
    if ns is None:
        return "-"
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _vantage_words(c) -> str:
    parts = []
    for key, v in sorted(c.vantage.items()):
        rtt = v.get("path_rtt_ns")
        parts.append(f"dir {key}: at the {v.get('vantage')}" + (f", path RTT {duration(rtt)}" if rtt else "")
                     + f" (from the {v.get('from')})")
    return "; ".join(parts) or "unknown"


def _file_vantage(f) -> str:
    """Where the tap sat, as seen from each connection's data sender, counted over the file."""
    counts: dict[str, int] = {}
    for c in f.connections:
        d = c.data_direction
        v = (c.vantage.get(str(d.dir)) or {}).get("vantage", "unknown") if d is not None else "unknown"
        counts[v] = counts.get(v, 0) + 1
    if not counts:
        return "-"
    n = sum(counts.values())
    return ", ".join(f"at the {v}" + (f" of the data ({k} of {n} connections)" if n > 1 else " of the data")
                     if v in ("sender", "receiver") else f"{v} ({k} of {n})" if n > 1 else v
                     for v, k in sorted(counts.items(), key=lambda kv: -kv[1]))


def _lost_bar(c, d) -> list[dict[str, Any]]:
    """Time the data direction lost by cause over the connection's duration, as segments of one
    bar (widths in %); the rest is time it made progress (or had not begun)."""
    total = max(c.duration_ns, 1)
    lost: dict[str, int] = {}
    for s in c.stalls:
        if d is not None and s.dir != d.dir:
            continue
        lost[s.cause] = lost.get(s.cause, 0) + s.time_lost_ns
    segs = [{"cause": k, "ns": v, "pct": 100 * v / total, "colour": figures.cause_colour(k), "text": duration(v)}
            for k, v in sorted(lost.items(), key=lambda kv: (kv[0] == "application_idle", -kv[1])) if v > 0]
    rest = max(0, total - sum(lost.values()))
    segs.append({"cause": "the rest", "ns": rest, "pct": 100 * rest / total, "colour": "#ffffff", "text": duration(rest)})
    return segs


def _stall_groups(c) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str | None, int], list] = {}
    for s in c.stalls:
        groups.setdefault((s.cause, s.detail, s.dir), []).append(s)
    out = []
    for (cause, detail, d), ss in sorted(groups.items(), key=lambda kv: (kv[0][0] == "application_idle",
                                                                         -sum(s.time_lost_ns for s in kv[1]), kv[0][0])):
        out.append({"cause": cause, "detail": detail, "dir": d, "count": len(ss), "lost": duration(sum(s.time_lost_ns for s in ss)),
                    "meaning": CAUSE_MEANING.get(cause, ""), "colour": figures.cause_colour(cause)})
    return out


def _stall_rows(c, limit: int) -> tuple[list[dict[str, Any]], int]:
    if limit <= 0:
        return [], len(c.stalls)
    # Transport causes first (most time lost), application idle after.
    ordered = sorted(c.stalls, key=lambda s: (s.cause == "application_idle", -s.time_lost_ns, s.start_ns))
    rows = []
    for s in ordered[:limit]:
        rows.append({"cause": s.cause, "detail": s.detail, "dir": s.dir, "frames": f"{s.start_frame}–{s.end_frame}",
                     "duration": duration(s.duration_ns), "lost": duration(s.time_lost_ns),
                     "confidence": f"{s.confidence:.2f}", "evidence": evidence_words(s),
                     "filter": wireshark_filter(c.stream, s.start_frame, s.end_frame),
                     "alternatives": [f"{a.cause}{'/' + a.detail if a.detail else ''} ({a.confidence:.2f})"
                                      + (f": {a.why}" if a.why else "") for a in s.alternatives],
                     "colour": figures.cause_colour(s.cause)})
    return rows, max(0, len(ordered) - limit)


def _finding_rows(c) -> list[dict[str, Any]]:
    rows = []
    for f in c.findings:
        frames = [v for k, v in f.evidence.items() if k.endswith("frame") and isinstance(v, int)]
        extra = {k: v for k, v in f.evidence.items() if k not in ("why",) and v is not None}
        rows.append({"cause": f.cause, "dir": f.dir, "confidence": f"{f.confidence:.2f}", "why": f.evidence.get("why", ""),
                     "evidence": ", ".join(f"{k} {v}" for k, v in extra.items()),
                     "filter": (wireshark_filter(c.stream, min(frames), max(frames)) if frames
                                else wireshark_filter(c.stream, c.first_frame, c.last_frame)),
                     "colour": figures.cause_colour(f.cause)})
    return rows


def _json_for_script(fig) -> str:
    """A figure's JSON, safe inside a <script type="application/json"> element."""
    text = figures.to_json(fig)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _parts_by_stream(f, streams: set[int]) -> dict[int, pl.DataFrame]:
    """The graphed connections' rows (`streams`), by stream, each in time order."""
    from stallscope.analyzers.sender_state import by_stream_time

    state = f.core_state
    if state is None or state.height == 0:
        return {}
    cols = [c for c in figures.STATE_COLUMNS if c in state.columns]
    out = {}
    # Only the graphed ones: a partition of 20,000 connections cost a second for 12 graphs.
    wanted = state.select(cols).filter(pl.col("stream").is_in(sorted(streams)))
    # Per connection, then in time order (rows are in file order; most captures are in time order).
    for k, part in wanted.partition_by("stream", as_dict=True, maintain_order=True).items():
        if not part["ts_ns"].is_sorted():
            part = by_stream_time(part)
        out[int(k[0])] = part
    return out


def build(analysis, *, containers: list[dict[str, Any] | None] | None = None, title: str | None = None,
          max_graphed: int = MAX_GRAPHED) -> tuple[str, dict[str, Any]]:
    """The report's HTML for an Analysis, and facts about it (connections drawn, points, seconds)."""
    import jinja2
    import plotly.offline

    started = time.perf_counter()
    files = []
    connections = []
    for i, f in enumerate(analysis.files):
        facts = _file_facts(f, containers[i] if containers else None)
        files.append({"facts": facts, "notes": f.notes, "index": i, "first": utc(facts.first_ns), "last": utc(facts.last_ns),
                      "span": duration(None if facts.first_ns is None else facts.last_ns - facts.first_ns),
                      "accounting": _accounting(f.decode), "vantage": _file_vantage(f)})
        for c in f.connections:
            connections.append((i, f, c))
    # Worst first: most time lost, then longest.
    connections.sort(key=lambda t: (-t[2].time_lost_ns, -t[2].duration_ns, t[0], t[2].stream))
    graphed = {(i, c.stream) for i, _, c in connections[:max_graphed]}
    parts_cache: dict[int, dict[int, pl.DataFrame]] = {}
    cards = []
    figs_out = []
    points = 0
    listed_budget = MAX_LISTED_TOTAL
    for rank, (i, f, c) in enumerate(connections):
        d = c.data_direction
        anchor = f"conn-{i}-{c.stream}"
        card = {"anchor": anchor, "file": f.path, "file_index": i, "stream": c.stream, "initiator": c.initiator,
                "responder": c.responder, "duration": duration(c.duration_ns), "duration_ns": c.duration_ns,
                "lost": duration(c.time_lost_ns), "lost_ns": c.time_lost_ns,
                "lost_share": c.time_lost_ns / max(c.duration_ns, 1), "top": c.top_cause() or "-",
                "goodput": rate(d.goodput_bps if d else None), "goodput_bps": (d.goodput_bps or 0) if d else 0,
                "data_dir": d.direction if d else "-", "dir": d.dir if d else None,
                "verdict": verdict(c, d), "bar": _lost_bar(c, d), "groups": _stall_groups(c),
                "findings": _finding_rows(c), "notes": c.notes, "vantage": _vantage_words(c),
                "stall_count": len(c.stalls), "frames": f"{c.first_frame}–{c.last_frame}",
                "filter": f"tcp.stream eq {c.stream}",
                "limits": sorted(((k, f"{v:.0%}") for k, v in (d.limits.items() if d else []) if v >= 0.005),
                                 key=lambda kv: -float(kv[1].rstrip('%'))),
                "profile": _profile_rows(d), "figure": None, "ack_figure": None, "figure_facts": None}
        card["stalls"], card["more_stalls"] = _stall_rows(c, min(MAX_LISTED_STALLS, listed_budget))
        listed_budget -= len(card["stalls"])
        if (i, c.stream) in graphed and d is not None:
            if i not in parts_cache:
                parts_cache = {i: _parts_by_stream(f, {s for j, s in graphed if j == i})}  # one file's at a time
            part = parts_cache[i].get(c.stream)
            if part is not None and part.height >= 2:
                fig, ffacts = figures.connection_figure(c, part, d.dir)
                fid = f"fig-{len(figs_out)}"
                figs_out.append({"id": fid, "json": _json_for_script(fig)})
                card["figure"], card["figure_facts"] = fid, ffacts
                points += ffacts["points"]
                hist = figures.ack_delay_figure(c, part, d.dir)
                if hist is not None:
                    hid = f"fig-{len(figs_out)}"
                    figs_out.append({"id": hid, "json": _json_for_script(hist)})
                    card["ack_figure"] = hid
        card["rank"] = rank + 1
        cards.append(card)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    damaged = [ff for ff in files if ff["facts"].status != "ok"]
    html = env.get_template("report.html.j2").render(
        title=title or ("stallscope report: " + (", ".join(Path(f.path).name for f in analysis.files)
                                                  if len(analysis.files) <= 3 else f"{len(analysis.files)} captures")),
        version=__version__, generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        files=files, damaged=damaged, cards=cards, figures=figs_out, graphed=len(graphed), total=len(cards),
        max_graphed=max_graphed, max_listed_total=MAX_LISTED_TOTAL,
        css=(TEMPLATES / "report.css").read_text(encoding="utf-8"),
        script=(TEMPLATES / "report.js").read_text(encoding="utf-8"),
        plotlyjs=plotly.offline.get_plotlyjs(), palette=figures.OKABE_ITO)
    return html, {"connections": len(cards), "graphed": len(figs_out), "points": points,
                  "seconds": time.perf_counter() - started}


def _accounting(decode: dict[str, Any]) -> dict[str, Any]:
    if not decode:
        return {}
    not_tcp = sum(decode.get("not_tcp", {}).values())
    not_dec = sum(decode.get("not_decoded", {}).values())
    return {"records": decode.get("records", 0), "tcp": decode.get("tcp_packets", 0), "not_tcp": not_tcp,
            "not_decoded": not_dec, "balanced": decode.get("records", 0) == decode.get("tcp_packets", 0) + not_tcp + not_dec,
            "not_tcp_by": decode.get("not_tcp", {}), "not_decoded_by": decode.get("not_decoded", {}),
            "anomalies": decode.get("anomalies", {})}


def _profile_rows(d) -> list[tuple[str, str]]:
    if d is None:
        return []
    p = d.profile
    rows = [("MSS offered by the peer / largest segment", f"{p.get('mss_offered_by_peer') or '-'} / {p.get('max_segment') or '-'} B"),
            ("send buffer (inferred)", f"{p.get('send_buffer_estimate') or '-'} B"),
            ("peer's largest window", f"{p.get('peer_receive_window_max') or '-'} B"),
            ("Nagle", f"{p.get('nagle')}: {p.get('nagle_evidence', '')}"),
            ("retransmissions", f"{p.get('retransmitted_packets', 0)} ({p.get('timeouts', 0)} after a timeout, "
                                f"{p.get('fast_retransmissions', 0)} fast)")]
    peer = p.get("peer_delayed_ack") or {}
    if peer:
        rows.append(("peer's delayed ACK", f"{peer.get('timer')}" + (f", {peer['timer_ns'] / 1e6:.1f} ms" if peer.get("timer_ns") else "")
                     + f" ({peer.get('delayed_acks', 0)} of {peer.get('acks_measured', 0)} ACKs delayed"
                     + (f"; {peer['quick_acks_at_start']} quick ACKs at the start" if peer.get("quick_acks_at_start") else "")
                     + (f"; {peer['every_second_segment']:.0%} covered two segments or more"
                        if peer.get("every_second_segment") is not None else "") + ")"))
    stack = p.get("stack") or {}
    if stack:
        rows.append(("stack (guess)", f"{stack.get('guess')}: " + "; ".join(stack.get("evidence", []))))
    return rows


def write(analysis, out: str | Path, **kw: Any) -> dict[str, Any]:
    """Write the report of `analysis` to `out`; returns facts about it (bytes, seconds, ...)."""
    html, facts = build(analysis, **kw)
    data = html.encode("utf-8")
    Path(out).write_bytes(data)
    facts["bytes"] = len(data)
    return facts
