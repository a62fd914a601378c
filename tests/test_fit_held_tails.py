"""The fit reads the write size from the tails Nagle held where the PSH flags cannot give it
(comparison/fit/buffers.py `fit_held_tails`): a 4.4BSD bulk writer of 15836 bytes under its 8 KB
default buffer over FDDI (drawn corpus 3). BSD sets PSH wherever its buffer ran empty (82 of 87
segments), which made 3196-byte writes that tear no tail: the refitted run's goodput was 36 times
the trace's. Every held 3548-byte tail ends at a multiple of the write, which is no multiple of a
2 KB cluster (sosend's copies could have made those)."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers import corpus, corpus_drawn
from stallscope.analyzers.comparison.validate import validate_trace


def test_a_bulk_writers_size_is_the_gcd_of_the_tails_nagle_held(tmp_path: Path) -> None:
    (spec,) = [s for s in corpus_drawn.plan(3) if s.name.startswith("bulk-bsd44-fddi-w15836")]
    corpus.run_trace(spec, tmp_path)
    row = validate_trace(str(tmp_path / f"{spec.name}.pcap"))
    assert row["fit_write"] == 15836
    assert row["goodput_ok"] and abs(row["goodput_ratio"] - 1) <= 0.05
