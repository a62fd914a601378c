"""The limiting-factor timeline (analyzers/timeline.py): what held each sender, as shares of its
active time. A flight at its plateau is a send buffer's only where the sender refilled it on the
peer's ACKs; a sender that only ever sent when the peer's data came (a request, an answer) was
held by its application, whatever its largest message."""

from __future__ import annotations

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
