"""Properties of the connection table over generated transfers (hypothesis, seeded by its database):
any ISN (wraps included), any segment sizes, any resends, any ACK pattern."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stallscope.analyzers.connections import connections

# The dpkt frame builders are shared with the decoder tests (tests/ is on pytest's pythonpath).
from test_flows_model import ACK, MS, SYN  # noqa: E402
from test_flows_model import _c2s as c2s  # noqa: E402
from test_flows_model import _s2c as s2c  # noqa: E402
from test_flows_model import _write as write  # noqa: E402

M = 1 << 32


@st.composite
def transfers(draw):
    isn_c = draw(st.integers(0, M - 1))
    isn_s = draw(st.integers(0, M - 1))
    sizes = draw(st.lists(st.integers(1, 1460), min_size=1, max_size=40))
    # Indices of segments resent right after the segment that follows them.
    resend = draw(st.sets(st.integers(0, len(sizes) - 2), max_size=len(sizes) - 1)) if len(sizes) > 1 else set()
    ack_every = draw(st.integers(1, 5))
    return isn_c, isn_s, sizes, sorted(resend), ack_every


def build(isn_c, isn_s, sizes, resend, ack_every):
    pkts = [
        (0, c2s(SYN, isn_c, 0)),
        (MS, s2c(SYN | ACK, isn_s, (isn_c + 1) % M)),
        (2 * MS, c2s(ACK, (isn_c + 1) % M, (isn_s + 1) % M)),
    ]
    starts = [1]
    for n in sizes:
        starts.append(starts[-1] + n)
    t = 3 * MS
    for i, n in enumerate(sizes):
        pkts.append((t, s2c(ACK, (isn_s + starts[i]) % M, (isn_c + 1) % M, b"d" * n)))
        t += MS
        if i - 1 in resend:
            j = i - 1
            pkts.append((t, s2c(ACK, (isn_s + starts[j]) % M, (isn_c + 1) % M, b"d" * sizes[j])))
            t += MS
        if (i + 1) % ack_every == 0:
            pkts.append((t, c2s(ACK, (isn_c + 1) % M, (isn_s + starts[i + 1]) % M)))
            t += MS
    return pkts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transfers())
def test_unique_retransmitted_and_in_flight(case) -> None:
    isn_c, isn_s, sizes, resend, ack_every = case
    with tempfile.TemporaryDirectory() as d:
        path = write(Path(d) / "t.pcap", build(*case))
        table, summary = connections(path)
    assert table.height == 1 and summary.error is None
    r = table.row(0, named=True)
    assert r["resp_unique_bytes"] == sum(sizes)
    assert r["resp_retrans_packets"] == len(resend)
    assert r["resp_retrans_bytes"] == sum(sizes[j] for j in resend)
    assert r["resp_payload_bytes"] == r["resp_unique_bytes"] + r["resp_retrans_bytes"]
    assert r["resp_largest_segment"] == max(sizes)
    # The most ever outstanding: at most ack_every segments (plus one when a resend sits between).
    window = max(sum(sizes[i : i + ack_every + 1]) for i in range(len(sizes)))
    assert max(sizes) <= r["resp_max_in_flight"] <= window
    assert r["resp_packets"] == 1 + len(sizes) + len(resend)


def test_progress_is_reported_in_steps_up_to_the_whole_file(tmp_path: Path) -> None:
    """The native pass calls back between steps of 65536 TCP packets, then once at the end."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import make_capture

    path = tmp_path / "bulk.pcap"
    n = make_capture.write(path, 200_000, 2)
    calls: list[int] = []
    table, summary = connections(path, progress=calls.append)
    assert summary.records == n and table.height == 2
    assert len(calls) >= n // 65536
    assert calls == sorted(calls) and calls[-1] == path.stat().st_size
