"""A Linux 2.0 sender with TCP_NODELAY whose message fills the peer's window exactly: its short
tail goes with the write's own full segments unacknowledged, which Linux 2.0's Nagle rule never
allows (docs/tcp-rules.md, Linux 2.0 partial segment), so the fit tries Nagle off. The window-edge
exclusion of fit.stack.classic_nagle_broken had taken every such tail for what a window cut from more
data. A trace from the scoring corpus (analyzers/corpus.py), checked as `validate` does."""

from __future__ import annotations

from stallscope.analyzers.comparison.validate import validate_trace
from stallscope.analyzers.corpus import plan, run_trace


def test_a_window_filling_tail_sent_behind_its_write_is_fitted_as_nodelay(tmp_path):
    """32768-byte messages, a 4-byte answer each, over Fast Ethernet, into Linux's 32768-byte
    window: each 648-byte tail fills it. Before, the fit kept Nagle on, settled on an ATM link and
    4 KB writes to make up for it, and claimed every variant but OFF (distance 0.13 against 0.04);
    now Nagle off, the measured 32 KB messages kept, and the refitted goodput within 1 %."""
    name = "nodelay-linux20-msg32768-linux"
    (spec,) = [s for s in plan() if s.name == name]
    run_trace(spec, tmp_path)
    row = validate_trace(str(tmp_path / f"{name}.pcap"))
    assert row["personality"] == "linux20" and row["nagle_true"] == "OFF", row
    assert row["fit_nagle"] == "OFF" and row["nagle_claim_ok"] and row["fit_write"] == 32768, row
    assert abs(row["goodput_ratio"] - 1) < 0.01, row["goodput_ratio"]
