"""The fit reads the writes as the analyzer read them (analyzers/writes.py), on simulated traces
whose configuration is known: a Linux writer of 4 KB every 10 ms (its every other write held by
Nagle behind the peer's 40 ms delayed ACK) and a 4.4BSD writer of 16 KB writes with a 30 ms think
time (each write's 324-byte tail held past it, every other pause)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallscope.analyzers import corpus, corpus_holdout
from stallscope.analyzers.comparison.validate import validate_trace

NAMES = ("idle-linux-think10ms-w4096", "idle-bsd44-think30ms")


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("writer_clock")
    for spec in list(corpus_holdout.plan()) + list(corpus.plan()):
        if spec.name in NAMES:
            corpus.run_trace(spec, out)
    return out


def test_a_clocked_writer_is_replayed_on_its_clock(traces: Path) -> None:
    """Its pauses on the wire are only its first 70 ms (before the peer's ACKs slowed): fitted from
    them the writer was occasional (goodput 1.12); the ACKs, one per 20 ms, read as a 3.3 Mbit/s
    link, under which the fitted run never showed the clock (its comparison deviated)."""
    row = validate_trace(str(traces / "idle-linux-think10ms-w4096.pcap"))
    assert (row["fit_write"], row["fit_think_ns"]) == (4096, 10_000_000)
    assert row["goodput_ok"] and abs(row["goodput_ratio"] - 1) <= 0.05
    assert row["fit_rate_bps"] > 50_000_000  # FDDI's 100 Mbit/s, not the writer's pace
    assert row["matches"]


def test_the_write_size_comes_from_the_lattice_not_the_pauses(traces: Path) -> None:
    """Every other pause holds a write's tail (nagle_delayed_ack): the idle periods alone are two
    writes apart and made a 32 KB write (goodput 0.89)."""
    row = validate_trace(str(traces / "idle-bsd44-think30ms.pcap"))
    assert row["fit_write"] == 16384
    assert "constant write size" in row["write_source"]
    assert row["goodput_ok"]
