"""The `cork` what-if (TCP_CORK around each application message, docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay).

Before the simulator uncorked at a message's end, a corked response tail waited for the BSD
persist timer: on fixtures/nagle_4k_jumbo.pcap the prediction was 79 kbit/s with 632 s of
application_idle for a 0.5 s trace. Corked around each response, the 4 KB writes of a response
coalesce into full segments and the tail leaves when the response is written, so cork removes the
Nagle and delayed-ACK holds as TCP_NODELAY does.
"""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers.analyze import analyze_one
from stallscope.analyzers.comparison import compare_file
from stallscope.simulate.apps.naglemark import run_trial

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_cork_what_if_on_a_request_response_trace_is_sane():
    analysis = analyze_one(FIXTURES / "nagle_4k_jumbo.pcap")
    (ref,) = compare_file(analysis, what_if="cork,nodelay,minshall", jobs=1)
    assert ref.fit.kind == "request_response"
    got = {p.name: p for p in ref.what_ifs}
    cork, nodelay, minshall = got["cork"], got["nodelay"], got["minshall"]
    assert cork.error is None and cork.goodput_bps and nodelay.goodput_bps
    # Cork coalesces a response's writes and sends its tail at the response's end: about what
    # TCP_NODELAY gets, and well above Linux's Nagle, which holds tails for the delayed ACK.
    assert cork.goodput_bps >= 0.5 * nodelay.goodput_bps
    assert cork.goodput_bps >= 1.5 * minshall.goodput_bps
    assert "nagle_delayed_ack" not in cork.time_lost_ns
    # No what-if idles many times the trace's length (the old cork: 632 s for a 0.5 s trace).
    duration = analysis.connections[0].duration_ns
    for p in ref.what_ifs:
        assert sum(p.time_lost_ns.values()) <= 2 * duration, (p.name, p.time_lost_ns)
    # Every response completes within a few milliseconds, none near the 200 ms probe timer.
    assert max(cork.responses_ns) < 50_000_000


def test_a_corked_naglemark_server_sends_full_segments_and_each_response_tail_at_once():
    """naglemark's server writes each response in app_buf chunks; corked, the chunks of a
    response coalesce and the tail leaves with the response's last write: no response waits
    for an ACK or a timer, unlike classic Nagle's."""
    kw = dict(personality="linux", link="ethernet10", sockbuf=65536, app_buf=1000, trial="R",
              lengths=[5000, 2500, 7300, 999] * 5, seed=3)
    corked = run_trial(variant="CORK", **kw)
    nodelay = run_trial(variant="OFF", **kw)
    nagle = run_trial(variant="NAGLE", **kw)
    assert len(corked.samples) == 20
    # 10 Mbit/s: a 7300-byte response takes about 6 ms on the wire; none waits for a timer.
    assert max(s.elapsed_ns for s in corked.samples) < 30_000_000
    total = sum(s.elapsed_ns for s in corked.samples)
    assert total <= 1.1 * sum(s.elapsed_ns for s in nodelay.samples)
    assert total < 0.5 * sum(s.elapsed_ns for s in nagle.samples)
