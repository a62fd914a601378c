"""The analysis for a person: a terminal summary (Rich) and Markdown. Every string that came from
the capture (file name, addresses, note texts that quote them) is escaped for its medium: Rich
markup for the terminal, Markdown table syntax and HTML for Markdown.
"""

from __future__ import annotations

import html
import io
import re
from typing import Any

from stallscope.untrusted_text import printable

SHOW_STALLS = 8
SUMMARY_COLUMNS = ("file", "stream", "connection", "goodput", "time lost", "top cause")


def rate(bps: float | None) -> str:
    """A bit rate for a person: Gbit/s, Mbit/s, kbit/s or bit/s."""
    if bps is None:
        return "-"
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.2f} {unit}"
    return f"{bps:.0f} bit/s"


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.1f} ms" if ns < 10_000_000_000 else f"{ns / 1e9:.2f} s"


def summary_rows(analysis) -> list[dict[str, str]]:
    rows = []
    for f in analysis.files:
        for c in f.connections:
            d = c.data_direction
            rows.append({
                "file": f.path, "stream": str(c.stream), "connection": f"{c.initiator} -> {c.responder}",
                "goodput": rate(d.goodput_bps if d else None), "time lost": _ms(c.time_lost_ns),
                "top cause": c.top_cause() or "-",
            })
    return rows


def stall_groups(c) -> list[tuple[str, str | None, int, int, list]]:
    """(cause, detail, count, time lost, stalls) per cause and detail, most time lost first."""
    groups: dict[tuple[str, str | None], list] = {}
    for s in c.stalls:
        groups.setdefault((s.cause, s.detail), []).append(s)
    out = [(k[0], k[1], len(v), sum(s.time_lost_ns for s in v), v) for k, v in groups.items()]
    return sorted(out, key=lambda g: (-g[3], g[0], g[1] or ""))


def _evidence_line(s) -> str:
    e = s.evidence
    parts = []
    if "write_size" in e:
        # Nagle held a write (or its tail) until the next write: no ACK released it.
        pace = f" every {e['write_period_ns'] / 1e6:g} ms" if e.get("write_period_ns") else ""
        what = "a write's tail" if e.get("held_tail_from_offset") is not None else "a write"
        parts.append(f"{what} of {e['held_bytes']} B held behind {e['outstanding_bytes']} B until the next write "
                     f"(frame {e['held_segment_frame']}, {e['held_segment_len']} B; writes of {e['write_size']} B{pace})")
    elif "held_segment_len" in e:
        parts.append(f"held {e['held_segment_len']} B (frame {e['held_segment_frame']}) behind {e['outstanding_bytes']} B")
    if "releasing_ack_frame" in e:
        delay = e.get("releasing_ack_delay_ns")
        parts.append(f"released by ACK frame {e['releasing_ack_frame']}"
                     + (f" delayed {delay / 1e6:.1f} ms" if delay is not None else ""))
    if "window_before_release" in e and "held_segment_len" not in e:
        after = e["window_after_release"]
        parts.append(f"peer window {e['window_before_release']} B ({e['usable_window_before_release']} B usable) "
                     f"-> {'reopened (scale unknown)' if after is None else f'{after} B'}, "
                     f"{e['outstanding_bytes']} B outstanding")
    if e.get("window_reopened") is False:
        parts.append(f"peer window zero from frame {e['zero_window_frame']}, probed until frame "
                     f"{e['probes_until_frame']}, never reopened in the capture")
    if "released_by" in e:
        parts.append(f"{e['next_segment_len']} B sent into a {e['usable_window_before_release']} B window by "
                     f"{e['released_by']}")
    if "first_timeout_frame" in e:
        parts.append(f"timeout resend frame {e['first_timeout_frame']}, {e['segments_resent']} segments resent")
    if "ids_unseen" in e:
        parts.append(f"{e['ids_unseen']} packet(s) sent and not seen here before frame {e['unseen_before_frame']} "
                     "(IPv4 ids skipped)")
    if "ip_ids_skipped" in e:
        # A black hole seen away from the sender (analyze._far_side_silences).
        parts.append(f"the sender's data never reached this tap; {e['ip_ids_skipped']} packet(s) it numbered in "
                     "the silence were never seen (IPv4 ids skipped)")
    elif s.cause == "pmtu_blackhole" and "why" in e and not parts:
        parts.append("the sender's data never reached this tap")
    if "first_resend_frame" in e:
        parts.append(f"frame {e['first_resend_frame']} resent data this tap saw acknowledged "
                     f"{_ms(e['acked_before_resend_ns'])} before")
    if "turnaround" in e:
        parts.append(f"waited for the peer's data (frame {e['peer_data_frame']})")
    elif "resumed_frame" in e:
        parts.append(f"the writer resumed at frame {e['resumed_frame']}")
    elif "idle_after_acked_ns" in e:
        parts.append(f"idle {_ms(e['idle_after_acked_ns'])} with everything acknowledged")
    if "answered_after_ns" in e:
        parts.append(f"answered the peer's data (frame {e['peer_data_frame']}) {_ms(e['answered_after_ns'])} after it")
    if "reason" in e:
        parts.append(e["reason"])
    return "; ".join(parts)


def terminal(analysis, width: int | None = None) -> str:
    from rich.console import Console
    from rich.table import Table

    from stallscope.output import RICH_TABLE_MAX_ROWS, plain_table
    from stallscope.untrusted_text import terminal as escape  # (markup and control characters)

    buf = io.StringIO()
    # emoji=False: a name like ":smile:.pcap" is text, not an emoji code.
    console = Console(file=buf, width=width or 160, force_terminal=False, color_system=None, highlight=False,
                      emoji=False)
    rows = summary_rows(analysis)
    if len(rows) > RICH_TABLE_MAX_ROWS:
        # Rich measures every cell: 20,000 connections took seconds. Plain aligned columns, as
        # every long listing is written (stallscope/output.py).
        import polars as pl

        buf.write(plain_table(pl.DataFrame(rows, schema={c: pl.Utf8 for c in SUMMARY_COLUMNS}), "TCP connections"))
    else:
        table = Table(title="TCP connections", show_lines=False)
        for name in SUMMARY_COLUMNS:
            table.add_column(name, overflow="fold")
        for r in rows:
            table.add_row(*(escape(v) for v in r.values()))
        console.print(table)
    # The findings as one text per file (a print per line cost 0.4 ms: 11 s for 6,667 connections
    # with a stall each); markup escaped, so a capture's text is never read as markup.
    for f in analysis.files:
        lines = [f"note ({escape(f.path)}): {escape(n.message)}" for n in f.notes]
        for c in f.connections:
            if not c.stalls and not c.findings and not c.notes:
                continue
            lines.append(f"\n[bold]{escape(f.path)} stream {c.stream}[/bold]: {escape(c.initiator)} -> {escape(c.responder)}")
            for d in c.directions:
                if d.role == "data sender" and d.limits:
                    shares = ", ".join(f"{k} {v:.0%}" for k, v in sorted(d.limits.items(), key=lambda kv: -kv[1]) if v >= 0.01)
                    lines.append(f"  limits ({escape(d.direction)}): {escape(shares)}")
            for fnd in c.findings:
                lines.append(f"  finding {escape(fnd.cause)} ({escape(fnd.direction)}): {escape(str(fnd.evidence.get('why', '')))}")
            for cause, detail, n, lost, stalls in stall_groups(c):
                label = cause + (f"/{detail}" if detail else "")
                lines.append(f"  {n} x {escape(label)}: {_ms(lost)} lost")
                for s in stalls[:SHOW_STALLS]:
                    lines.append(f"    frames {s.start_frame}-{s.end_frame} {_ms(s.duration_ns)}: {escape(_evidence_line(s))}")
                if len(stalls) > SHOW_STALLS:
                    lines.append(f"    ... and {len(stalls) - SHOW_STALLS} more")
            for n in c.notes:
                lines.append(f"  note: {escape(n.message)}")
        if lines:
            console.print("\n".join(lines))
    return buf.getvalue()


# An underscore emphasises only at a word's edge (CommonMark): inside burst_loss_timeout it is text.
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def _md(text: Any) -> str:
    """Markdown table cell or heading text: HTML-escaped; backslashes, pipes, backticks, brackets,
    emphasis (*, ~, an underscore at a word's edge) neutralised as character references; one line."""
    # Other control characters (a capture's) as visible text: a terminal showing the file acts on none.
    s = html.escape(printable(str(text).replace("\r", " ").replace("\n", " ")), quote=True)
    for ch, ref in (("\\", "&#92;"), ("|", "&#124;"), ("`", "&#96;"), ("[", "&#91;"), ("]", "&#93;"),
                    ("*", "&#42;"), ("~", "&#126;")):
        s = s.replace(ch, ref)
    return _EDGE_UNDERSCORE.sub("&#95;", s)


def markdown(analysis) -> str:
    out = ["# stallscope analysis", "", "| file | stream | connection | goodput | time lost | top cause |",
           "|---|---|---|---|---|---|"]
    for r in summary_rows(analysis):
        out.append("| " + " | ".join(_md(v) for v in r.values()) + " |")
    for f in analysis.files:
        for c in f.connections:
            if not c.stalls and not c.findings:
                continue
            out += ["", f"## {_md(f.path)} stream {c.stream}", "", "| cause | detail | stalls | time lost | example frames |",
                    "|---|---|---|---|---|"]
            for cause, detail, n, lost, stalls in stall_groups(c):
                ex = ", ".join(f"{s.start_frame}-{s.end_frame}" for s in stalls[:3])
                out.append(f"| {_md(cause)} | {_md(detail or '')} | {n} | {_md(_ms(lost))} | {_md(ex)} |")
            for fnd in c.findings:
                out.append(f"| {_md(fnd.cause)} | connection finding | - | - | {_md(fnd.evidence.get('why', ''))} |")
    return "\n".join(out) + "\n"

