"""The HTML diagnostic report: one self-contained file (plotly.js inlined once, no network fetch)
that shows why each connection of one or more captures was slow.

    from stallscope.analyzers.report import report_files, write_report
    report_files(["trace.pcap"], "report.html")      # analyse and write
    write_report(analysis, "report.html")            # an Analysis already made

figures.py builds the Plotly figures from a connection's findings and per-packet table;
document.py assembles the page from templates/ (Jinja2, autoescaped).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


def write_report(analysis, out: str | Path, **kw: Any) -> dict[str, Any]:
    """Write the report of an `Analysis` to `out`; returns facts (bytes, connections, graphs, seconds)."""
    from stallscope.analyzers.report.document import write

    return write(analysis, out, **kw)


def report_files(paths: Sequence[str | Path], out: str | Path, *, stream: int | None = None, **kw: Any):
    """Analyse each capture and write one report of them all; returns (Analysis, facts)."""
    from stallscope.analyzers.analyze import Analysis, analyze_one

    analysis = Analysis([analyze_one(p, stream=stream) for p in paths])
    return analysis, write_report(analysis, out, **kw)
