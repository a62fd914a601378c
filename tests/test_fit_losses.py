"""What the fit replays as the trace's losses (fit.losses.fit_losses; issue 13's "the losses the trace
shows replayed on the same segments"), on a scoring-corpus trace whose truth is known."""

from __future__ import annotations

import polars as pl

from stallscope.analyzers.analyze import analyze_one
from stallscope.analyzers.comparison.fit import fit_connection
from stallscope.analyzers.comparison.validate import validate_trace
from stallscope.analyzers.corpus import plan, run_trace


def test_a_spurious_timeout_is_no_loss_to_replay(tmp_path):
    """Linux 2.0 with an 8 KB send buffer over 10 Mbit/s and 50 ms: its timer fires once before
    the first ACK comes back (the analyzer's spurious_timeout: the data had arrived). The fit
    replayed that resend as a drop of the first segment, a loss the trace never had; now nothing
    is dropped, and the refitted run carries the trace's goodput (1.219 once a truer link was
    chosen around that drop; 1.006 without it)."""
    spec = {s.name: s for s in plan()}["sndbuf-linux20-snd8192"]
    run_trace(spec, tmp_path)
    file = analyze_one(str(tmp_path / f"{spec.name}.pcap"))
    conn = max(file.connections, key=lambda c: (c.data_direction.profile.get("bytes") or 0)
               if c.data_direction is not None else 0)
    assert any(s.cause == "spurious_timeout" for s in conn.stalls)
    fit = fit_connection(conn, file.state.filter(pl.col("stream") == conn.stream))
    assert not (fit.value("impairments") or {}).get("drop_segments"), fit.values["impairments"].source
    row = validate_trace(str(tmp_path / f"{spec.name}.pcap"))
    assert row["goodput_ok"], row["goodput_ratio"]
