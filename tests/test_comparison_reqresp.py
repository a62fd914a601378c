"""The comparison on request/response captures (issue 13): real Linux through the capture rig's
link emulator (fixtures/nagle_4k_jumbo*, nagle_128k_buffer), and a simulated trial whose client
thinks. docs/comparison.md, "Request/response captures", says what each figure rests on."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from stallscope.analyzers.analyze import analyze_one
from stallscope.analyzers.comparison import compare_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _measured_responses(name: str) -> list[int]:
    """The response times the capture's client measured (request sent to last byte read), ns."""
    truth = json.loads((FIXTURES / f"{name}.json").read_text())
    return [t for _, t in truth["workload"]["client"]["response_times"]]


def test_nodelay_on_nagle_4k_jumbo_predicts_the_nodelay_capture():
    """A real capture pair: nagle_4k_jumbo (Linux's Nagle, 4 KB writes, 23 responses held ~45 ms
    by the client's delayed ACK) with the `nodelay` what-if against nagle_4k_jumbo_nodelay (the same
    rig and workload with TCP_NODELAY), as its client measured it: no response of 30 ms or more,
    and the median response time within 25 % (before: 4.6 ms against 3.4 ms, 1.36x: the fitted
    link was the host's pace and the delay the handshake's)."""
    (ref,) = compare_file(analyze_one(FIXTURES / "nagle_4k_jumbo.pcap"), what_if="nodelay", jobs=1)
    (nodelay,) = ref.what_ifs
    assert nodelay.error is None and len(nodelay.responses_ns) == 126
    assert max(nodelay.responses_ns) < 30_000_000
    measured = _measured_responses("nagle_4k_jumbo_nodelay")
    assert max(measured) < 30_000_000
    ratio = statistics.median(nodelay.responses_ns) / statistics.median(measured)
    assert abs(ratio - 1) <= 0.25, ratio
    # The fitted run itself keeps the trace's held responses and its goodput.
    assert abs(ref.comparison.goodput_ratio - 1) <= 0.25
    assert "nagle_delayed_ack" in ref.comparison.time_lost_model


def test_the_think_time_is_not_a_round_trip():
    """At the sender's tap a response's last byte and the next request are a round trip apart
    when the client asks again at once: nagle_4k_jumbo_nodelay's and nagle_128k_buffer's fitted
    runs had that round trip twice (think time and path; goodput 0.57 and 0.50 of the trace's), and
    nagle_128k_buffer's responses, each one write, were replayed in 35 KB writes."""
    for name in ("nagle_4k_jumbo_nodelay", "nagle_128k_buffer"):
        (ref,) = compare_file(analyze_one(FIXTURES / f"{name}.pcap"), what_if="", jobs=1)
        assert ref.fit.value("think_ns") < 100_000, (name, ref.fit.values["think_ns"].source)
        assert abs(ref.comparison.goodput_ratio - 1) <= 0.25, (name, ref.comparison.goodput_ratio)
        assert ref.comparison.matches, (name, ref.comparison.verdict)
        if name == "nagle_128k_buffer":
            assert ref.fit.value("app_buf") >= max(ref.fit.value("lengths"))


def test_a_thinking_client_keeps_its_think_time(tmp_path):
    """A simulated trial whose client waits 30 ms before each request: the turnaround holds the
    think time and a round trip, and only the round trip is taken off."""
    from stallscope.simulate.apps.naglemark_capture import run_naglemark_capture

    pcap = tmp_path / "think.pcap"
    run_naglemark_capture(personality="linux", link="ethernet10", variant="NAGLE", sockbuf=16384, app_buf=4096,
                          trial="S", lengths=[900 + 4000 * i for i in range(12)], seed=1, think_ns=30_000_000,
                          pcap=pcap)
    (ref,) = compare_file(analyze_one(pcap), what_if="", jobs=1)
    assert abs(ref.fit.value("think_ns") / 30_000_000 - 1) <= 0.1, ref.fit.values["think_ns"].source


def test_the_write_size_is_read_from_where_a_responses_first_write_ends(tmp_path):
    """Simulated Linux over Ethernet-sized segments: 4096-byte writes are not whole segments, so a
    response's first short segment (its first write's tail, 1200 bytes) ends 4096 bytes in; a
    server that writes each response at once shows no short segment but its tail. Before, the
    first was read as 1200-byte writes (goodput 4.8 times the trace's)."""
    from stallscope.simulate.apps.naglemark_capture import run_naglemark_capture

    lengths = [3000 + 7919 * i % 90000 for i in range(30)]
    for app_buf, expected in ((4096, 4096), (131072, max(lengths))):
        pcap = tmp_path / f"w{app_buf}.pcap"
        run_naglemark_capture(personality="linux", link="gige", variant="MINSHALL", sockbuf=262144, app_buf=app_buf,
                              trial="S", lengths=lengths, seed=1, pcap=pcap)
        (ref,) = compare_file(analyze_one(pcap), what_if="", jobs=1)
        assert ref.fit.value("app_buf") == expected, ref.fit.values["app_buf"].source
        assert abs(ref.comparison.goodput_ratio - 1) <= 0.25
