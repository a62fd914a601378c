"""The limiting-factor timeline (analyzers/timeline.py): what held each sender, as shares of its
active time. A flight at its plateau is a send buffer's only where the sender refilled it on the
peer's ACKs; a sender that only ever sent when the peer's data came (a request, an answer) was
held by its application, whatever its largest message."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from stallscope.analyzers.analyze import analyze_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _sender_limits(path: Path) -> list[dict[str, float]]:
    return [d.limits for c in analyze_file(path).files[0].connections for d in c.directions
            if d.role == "data sender" and d.limits]


def test_a_responder_that_sends_each_answer_whole_is_held_by_its_application() -> None:
    """nagle_128k_buffer: each 128 KB response goes out in one burst on the client's 4-byte request,
    then the server waits for the next one. Its largest response was once read as a send buffer's
    plateau (8 %) and the rest as the congestion window's (88 %)."""
    limits = _sender_limits(FIXTURES / "nagle_128k_buffer.pcap")
    assert limits
    for lim in limits:
        assert "send_buffer" not in lim and lim.get("cwnd", 0) < 0.05, lim
        assert lim.get("application", 0) > 0.9, lim


def test_a_sender_that_refills_its_buffer_on_acks_is_held_by_it() -> None:
    """small_sndbuf_long_rtt: a 32 KB send buffer on a 100 ms round trip, refilled as ACKs drain it."""
    (lim,) = _sender_limits(FIXTURES / "small_sndbuf_long_rtt.pcap")
    assert lim.get("send_buffer", 0) > 0.5, lim


@pytest.mark.parametrize("name", ["sndbuf-tru64-snd8192", "sndbuf-linux-snd8192"])
def test_a_writer_woken_only_when_its_buffer_drains_is_held_by_the_buffer(tmp_path, name: str) -> None:
    """Simulated 8 KB send buffers (the scoring corpus's traces): Tru64's writer sleeps until every
    byte is acknowledged, then fills the buffer again at once on that pure ACK; Linux's refills on
    each ACK. Both are the buffer's limit, not the application's."""
    from stallscope.analyzers.corpus import plan, run_trace

    spec = {s.name: s for s in plan()}[name]
    run_trace(spec, tmp_path)
    (lim,) = _sender_limits(tmp_path / f"{name}.pcap")
    assert lim.get("send_buffer", 0) > 0.5 and lim.get("application", 0) < 0.1, lim


def _directions(analysis, offset: int = 0) -> dict:
    return {(c.stream + offset, d.dir): (d.profile, [x for x in c.stalls if x.dir == d.dir])
            for c in analysis.connections for d in c.directions}


def test_shares_read_for_all_connections_at_once_are_each_connections_own() -> None:
    """The timeline runs one pass per direction over every connection (window functions over the
    stream): two captures' connections interleaved packet by packet in one table give each
    connection the shares its own rows give, and the analysis's own figures. A state carried
    across connections (a forward fill, a shifted row, a stall of another connection) would show."""
    import polars as pl

    from stallscope.analyzers.timeline import limit_shares

    a = analyze_file(FIXTURES / "nagle_4k_jumbo.pcap").files[0]
    b = analyze_file(FIXTURES / "small_sndbuf_long_rtt.pcap").files[0]
    offset = 1000
    sa, sb = a.core_state, b.core_state
    # b's packets moved onto a's clock, so that the two interleave when sorted by time.
    shift = sa["ts_ns"].min() - sb["ts_ns"].min()
    sb = sb.with_columns((pl.col("stream") + offset).cast(sa.schema["stream"]), pl.col("ts_ns") + shift)
    merged = pl.concat([sa, sb.select(sa.columns)]).sort("ts_ns", maintain_order=True)
    assert merged["stream"].head(200).n_unique() > 1  # interleaved, not one after the other
    moved = {k: (p, [replace(x, start_ns=x.start_ns + shift, end_ns=x.end_ns + shift) for x in st])
             for k, (p, st) in _directions(b, offset).items()}
    moved = {k: ({**p, **({"_buffer_bound_from_ns": p["_buffer_bound_from_ns"] + shift}
                          if p.get("_buffer_bound_from_ns") else {})}, st) for k, (p, st) in moved.items()}
    together = limit_shares(merged, {**_directions(a), **moved})
    alone = {**limit_shares(sa, _directions(a)), **limit_shares(sb, moved)}
    assert together == alone
    assert any(k.startswith("stall:") for v in together.values() for k in v)  # stalls were charged
    for c in a.connections:
        for d in c.directions:
            assert together[(c.stream, d.dir)] == d.limits
