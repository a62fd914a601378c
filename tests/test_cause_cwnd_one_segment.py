"""Without the SYN the MSS is unknown, and a sender whose every segment is one of its writes (SunOS
copies 4 KB at a time under ATM's 9 KB MSS) seems to send full segments: one out, the next held
until the receiver's delayed-ACK timer reads as its congestion window holding a segment. But a
congestion window of one segment is slow start's first round only (RFC 5681: each ACK of new data
opens it), shut again only by a loss or an idle restart, so a sender that had a segment
acknowledged and went on without either was held by Nagle (causes/windows.py
`_window_past_one_segment`), or by Moldeklev's deadlock where its whole buffer stays below the
receiver's window-update threshold.

Scored against the simulator's truth with the SYN and SYN/ACK cut (tests/pcap_edit.py): a SunOS
writer of 4 KB under an 8 KB buffer into a 16 KB window (Nagle's, every stall; read as the window's
before) and, as the negative control, FreeBSD's 4 KB writes under an 8 KB buffer into a 32 KB window
(the deadlock's: 8 KB never reaches 35 % of 32 KB)."""

from __future__ import annotations

from pathlib import Path

import pytest

import pcap_edit as pe
from stallscope.analyzers import corpus, corpus_drawn, corpus_holdout, scoring

NAGLE = "moldeklev-sunos41-S8192-R16384-io4096"  # drawn corpus 2
DEADLOCK = "moldeklev-freebsd4-S8192-R32768-w4096"  # the holdout


@pytest.fixture(scope="module")
def cut(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cwnd_one_segment")
    specs = [s for s in corpus_drawn.plan(2) if s.name.startswith(NAGLE)]
    specs += [s for s in corpus_holdout.plan() if s.name == DEADLOCK]
    assert len(specs) == 2
    for spec in specs:
        corpus.run_trace(spec, out)
        pcap = out / f"{spec.name}.pcap"
        pe.drop_syns(pe.read(pcap)).write(pcap)
    return out


def _causes(cut: Path, stem: str) -> dict:
    (pcap,) = cut.glob(f"{stem}*.pcap")
    return scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]["causes"]


def test_a_sunos_writer_of_4k_copies_without_its_syn_is_held_by_nagle(cut: Path) -> None:
    """Before: 125 `window_update_deadlock` (detail congestion_window), none matched."""
    causes = _causes(cut, NAGLE)
    nagle = causes["nagle_delayed_ack"]
    assert nagle["true"] == 126
    assert nagle["matched"] >= 120 and nagle["reported"] == nagle["matched"]


def test_a_buffer_below_the_update_threshold_stays_the_deadlock(cut: Path) -> None:
    causes = _causes(cut, DEADLOCK)
    wud = causes["window_update_deadlock"]
    assert wud["true"] == 126 and wud["matched"] >= 120
    assert causes.get("nagle_delayed_ack", {"reported": 0})["reported"] == 0
