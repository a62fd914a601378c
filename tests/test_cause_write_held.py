"""A write (or a write's tail) that Nagle held until the next write, with no ACK releasing it
(analyzers/writes.py, causes/nagle.py `_held_until_write`), scored against the simulator's truth on
traces of writers of one size: 4.4BSD tearing 4 KB writes every 10 ms, Linux holding every other
4 KB write of a 10 ms clock behind its peer's delayed ACK, and 4.4BSD holding each 16 KB write's
324-byte tail past a 30 ms think time. Negative controls: writers on the same 10 ms clock whose
peers never made them hold (SunOS, FreeBSD, Tru64), where every silence is the writer's."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl
import pytest

import pcap_edit as pe
from stallscope.analyzers import corpus, corpus_holdout, scoring, writes
from stallscope.analyzers.analyze import _CONTEXT_COLUMNS, analyze_one

HELD = {"idle-bsd44-think10ms-w4096": 18, "idle-linux-think10ms-w4096": 28, "idle-bsd44-think30ms": 7}
NEVER_HELD = ("idle-sunos41-think10ms-w4096", "idle-freebsd4-think10ms-w4096", "idle-tru64-think10ms-w4096")


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("write_held")
    wanted = set(HELD) | set(NEVER_HELD)
    for spec in list(corpus_holdout.plan()) + list(corpus.plan()):
        if spec.name in wanted:
            corpus.run_trace(spec, out)
    return out


def _score(traces: Path, name: str) -> dict:
    pcap = traces / f"{name}.pcap"
    return scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]


def _cause(score: dict, cause: str) -> dict:
    return score["causes"].get(cause, {"true": 0, "reported": 0, "matched": 0})


def _writer(traces: Path, name: str) -> writes.Writer | None:
    f = analyze_one(str(traces / f"{name}.pcap"))
    rows = f.state.filter(pl.col("stream") == 0).select(_CONTEXT_COLUMNS).to_dict(as_series=False)
    return writes.writer(rows, 0, 0)


@pytest.mark.parametrize("name", sorted(HELD))
def test_every_write_held_until_the_next_one_is_a_nagle_stall(traces: Path, name: str) -> None:
    """Before, each of these silences read as the writer pausing (`application_idle`: a full
    segment after a completed write) or `undetermined`; the truth holds Nagle responsible."""
    score = _score(traces, name)
    nagle = _cause(score, "nagle_delayed_ack")
    assert nagle["true"] == HELD[name]
    assert nagle["matched"] == HELD[name]
    assert nagle["reported"] == HELD[name]
    idle = _cause(score, "application_idle")
    assert idle["matched"] == idle["reported"]  # no held write left among the writer's pauses


@pytest.mark.parametrize("name", ["idle-bsd44-think10ms-w4096", "idle-linux-think10ms-w4096"])
def test_without_the_handshake_the_lattice_is_read_from_the_writes_ends(traces: Path, name: str) -> None:
    """A capture that starts after the SYNs: the first byte seen need not begin a write, so the
    lattice is read from the differences between the writes' ends (and its phase from them)."""
    pcap = traces / f"{name}.pcap"
    cut = traces / f"{name}.nosyn.pcap"
    pe.drop_syns(pe.read(pcap)).write(cut)
    score = scoring.score_files(cut, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    nagle = _cause(score, "nagle_delayed_ack")
    assert nagle["matched"] == nagle["reported"] == HELD[name]


def test_the_writes_size_and_clock_are_read_from_the_trace(traces: Path) -> None:
    assert _writer(traces, "idle-bsd44-think30ms") == writes.Writer(16384, None)
    assert _writer(traces, "idle-bsd44-think10ms-w4096").size == 4096
    # Linux's writes keep a 10 ms clock (its sends every 10 ms before the peer's ACKs slowed, every
    # 20 ms after): two writes per send from then on, the clock's own.
    assert _writer(traces, "idle-linux-think10ms-w4096") == writes.Writer(4096, 10_000_000)


@pytest.mark.parametrize("name", NEVER_HELD)
def test_a_writer_on_the_same_clock_that_nothing_held_stays_idle(traces: Path, name: str) -> None:
    score = _score(traces, name)
    assert _cause(score, "nagle_delayed_ack")["reported"] == 0
    idle = _cause(score, "application_idle")
    assert idle["matched"] == idle["true"] >= 50


def test_writes_of_varying_sizes_show_no_lattice() -> None:
    """Pauses after everything was acknowledged at offsets 1000, 2500 and 4200 (and the close at
    6000): their gcd is 100 bytes, no write size."""
    rows: dict[str, list] = {k: [] for k in ("ts_ns", "dir", "payload_len", "seq_rel", "seq_end", "retransmission",
                                             "ack_rel", "flag_ack", "win_scaled", "flag_fin", "flag_psh")}

    def add(ts: int, d: int, seq: int, n: int, ack: int | None = None, fin: bool = False) -> None:
        for k, v in (("ts_ns", ts), ("dir", d), ("payload_len", n), ("seq_rel", seq), ("seq_end", seq + n + fin),
                     ("retransmission", False), ("ack_rel", ack), ("flag_ack", ack is not None),
                     ("win_scaled", 65535 if ack is not None else None), ("flag_fin", fin), ("flag_psh", False)):
            rows[k].append(v)

    t = 0
    for start, n in ((1, 1000), (1001, 1500), (2501, 1700), (4201, 1800)):
        add(t, 0, start, n)
        add(t + 1_000_000, 1, 1, 0, ack=start + n)
        t += 50_000_000
    add(t, 0, 6001, 0, fin=True)
    assert writes.writer(rows, 0, 0) is None
    # The same pauses at multiples of 1500 are a lattice.
    rows = {k: [] for k in rows}
    t = 0
    for start in (1, 1501, 3001, 4501):
        add(t, 0, start, 1500)
        add(t + 1_000_000, 1, 1, 0, ack=start + 1500)
        t += 50_000_000
    add(t, 0, 6001, 0, fin=True)
    assert writes.writer(rows, 0, 0) == writes.Writer(1500, None)
    # Without the handshake the first byte may be inside a write: the ends' differences give the
    # step, and the first end its phase (the three pauses, the close making a fourth end).
    assert writes.writer(rows, 0, 0, start_seen=False) == writes.Writer(1500, None, 0)
    shifted = dict(rows, seq_rel=[q + 700 if q else q for q in rows["seq_rel"]],
                   seq_end=[q + 700 for q in rows["seq_end"]], ack_rel=[a + 700 if a else a for a in rows["ack_rel"]])
    assert writes.writer(shifted, 0, 0, start_seen=False) == writes.Writer(1500, None, 700)


def test_the_verdict_names_what_was_held(traces: Path) -> None:
    f = analyze_one(str(traces / "idle-linux-think10ms-w4096.pcap"))
    held = [s for c in f.connections for s in c.stalls if s.cause == "nagle_delayed_ack"]
    assert held
    ev = held[0].evidence
    assert ev["write_size"] == 4096 and ev["write_period_ns"] == 10_000_000
    assert ev["writes_due_in_silence"] == 1 and ev["held_bytes"] == 4096
    assert "releasing_ack_frame" not in ev and ev["held_segment_len"] == 4300
    assert Counter(a.cause for a in held[0].alternatives)["application_idle"] == 1


def test_the_terminal_line_says_what_was_held_and_what_sent_it(traces: Path) -> None:
    from stallscope.analyzers.analysis_text import _evidence_line

    f = analyze_one(str(traces / "idle-bsd44-think30ms.pcap"))
    held = [s for c in f.connections for s in c.stalls if s.cause == "nagle_delayed_ack"]
    line = _evidence_line(held[0])
    assert line.startswith("a write's tail of 324 B held behind 1460 B until the next write (frame ")
    assert line.endswith("1460 B; writes of 16384 B)")


def test_the_report_sentence_says_no_ack_released_it(traces: Path) -> None:
    from stallscope.analyzers.report.document import evidence_words

    f = analyze_one(str(traces / "idle-linux-think10ms-w4096.pcap"))
    held = [s for c in f.connections for s in c.stalls if s.cause == "nagle_delayed_ack"]
    words = evidence_words(held[0])
    assert words.startswith("4096 bytes of a write were held behind 4096 unacknowledged bytes until the next write")
    assert "the writes are 4096 B every 10 ms, and no ACK released them" in words
