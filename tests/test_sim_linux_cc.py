"""Modern Linux's congestion control in the simulator's `linux` personality: the window counted in
packets and grown by the packets each ACK covers (tcp_slow_start, tcp_cong_avoid_ai), with Reno's
halving (TCP_CONGESTION "reno") or CUBIC (the default; net/ipv4/tcp_cubic.c, RFC 9438): the 0.7
reduction with fast convergence, and growth along W(t) = C (t - K)^3 + W_max, concave up to the
window before the loss and convex beyond it.

The window is read off the sender's packets: on a 1 Gbit/s path with 50 ms each way nothing
queues, the application always has data and the receive buffer is far larger than the window, so
after each ACK the sender fills the congestion window and the data outstanding (the last segment
sent less the cumulative ACK) is the window itself. The transfer starts in slow start from 10
packets; losing data packet 91 stops it at exactly 100 (W_max), repaired with SACK.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import groupby

import pytest

from stallscope.simulate.run_bulk import RECEIVER_ADDR, SENDER_ADDR, BulkConfig, run_bulk

MSS = 1448  # Linux with timestamps on a 1500-byte MTU
RTT_NS = 100_000_000
FIRST_LOSS = 91  # the data packet whose loss stops slow start at a window of 100 packets
BETA = 717 / 1024  # tcp_cubic.c beta
C = 0.4  # RFC 9438 C, packets / s^3


@lru_cache(maxsize=None)
def _run(drops: tuple[int, ...] = (), personality: str = "linux", congestion: str | None = None,
         nbytes: int = 24 << 20, rcvbuf: int = 1 << 23, mss: int = MSS):
    r = run_bulk(BulkConfig(personality=personality, link="custom", rate_bps=10**9, delay_ns=RTT_NS // 2,
                            sndbuf=1 << 23, rcvbuf=rcvbuf, write=1 << 20, read=1 << 20, bytes=nbytes,
                            congestion=congestion),
                 impairments={"drop_nth": drops, "loss_data_only": True} if drops else None)
    assert r.completed
    return r, _window_trace(r, mss)


def _window_trace(r, mss: int) -> list[tuple[int, int, float, float]]:
    """Per time at which ACKs reached the sender: (t, cumulative ACK, the data outstanding once
    the sender had answered them, packets they newly acknowledged), in packets of `mss`."""
    iss = r.records[0][1].seq

    def rel(seq: int) -> int:
        return (seq - iss - 1) % (1 << 32)

    nxt = una = 0
    out = []
    for t, group in groupby(r.records, key=lambda rec: rec[0]):
        segs = [s for _, s in group]
        acks = [s for s in segs if s.src == RECEIVER_ADDR]
        before = una
        for s in acks:
            una = max(una, rel(s.ack))
        for s in segs:
            if s.src == SENDER_ADDR and s.payload_len:
                nxt = rel(s.seq) + s.payload_len
        if acks:
            out.append((t, una, (nxt - una) / mss, (una - before) / mss))
    return out


def _loss_episodes(r, trace):
    """Per fast retransmission episode: (window when it began, window when it ended, time it
    ended). The episode ends with the first ACK at or above what was outstanding at its start; the
    window then is what the sender has outstanding before the next ACK that acknowledges data."""
    iss = r.records[0][1].seq
    sent = [(t, (s.seq - iss - 1) % (1 << 32) + s.payload_len, "retransmit" in s.tags)
            for t, s in r.records if s.src == SENDER_ADDR and s.payload_len]
    out, after = [], -1
    for t_rex in [t for t, _, rex in sent if rex]:
        if t_rex <= after:
            continue
        before = [w for t, _, w, _ in trace if t < t_rex][-1]
        recover = max(end for t, end, _ in sent if t <= t_rex)
        i = next(i for i, x in enumerate(trace) if x[0] > t_rex and x[1] >= recover)
        j = next((j for j in range(i + 1, len(trace)) if trace[j][3] > 0), len(trace))
        t_end, w_end = trace[i][0], trace[j - 1][2]
        out.append((before, w_end, t_end))
        after = t_end
    return out


def _rounds(trace, start: int, n: int) -> list[float]:
    """The largest window in each of the `n` round trips from `start`."""
    out = []
    for k in range(n):
        ws = [w for t, _, w, _ in trace if start + k * RTT_NS <= t < start + (k + 1) * RTT_NS]
        out.append(max(ws))
    return out


def test_linux_uses_cubic_and_linux20_reno():
    """Modern Linux's default is CUBIC: the same 0.7 cut as TCP_CONGESTION "cubic", not Reno's
    half. Linux 2.0 halves (Reno) and grows by bytes per ACK, not per packet acknowledged: with
    its ACKs covering several packets the window creeps up far slower than one packet per round
    trip. Its window here is bounded by the receiver's 146000-byte buffer (89 packets in flight)."""
    (default,) = _loss_episodes(*_run((FIRST_LOSS,)))
    (cubic,) = _loss_episodes(*_run((FIRST_LOSS,), congestion="cubic"))
    (reno,) = _loss_episodes(*_run((FIRST_LOSS,), congestion="reno"))
    assert default[:2] == cubic[:2] == (100, 70)
    assert reno[:2] == (100, 50)
    r, trace = _run((300,), personality="linux20", nbytes=8 << 20, rcvbuf=100 * 1460, mss=1460)
    (old,) = _loss_episodes(r, trace)
    assert old[0] == 89 and old[1] == old[0] // 2
    rounds = _rounds(trace, old[2] + 2 * RTT_NS, 30)
    assert rounds[-1] - rounds[0] <= 30 / 5  # Linux's packet counting would add 30


def test_linux_counts_the_packets_each_ack_covers():
    """A delayed ACK for two segments grows Linux's slow-start window by two (BSD's by one), and
    in congestion avoidance a window's worth of acknowledged packets adds one; three duplicate
    ACKs halve the window in packets (tcp_reno_ssthresh)."""
    _, linux = _run((), nbytes=2 << 20)
    # (packets an ACK acknowledged, what it added to the window) over the first 60 ACKs
    growth = {(acked, w1 - w0) for (_, _, w0, _), (_, _, w1, acked) in zip(linux[:60], linux[1:60]) if acked}
    assert growth == {(1, 1), (2, 2)}
    _, bsd = _run((), personality="freebsd4", nbytes=2 << 20)
    growth = {(acked, w1 - w0) for (_, _, w0, _), (_, _, w1, acked) in zip(bsd[:60], bsd[1:60]) if acked}
    assert growth == {(1, 1), (2, 1)}
    r, trace = _run((FIRST_LOSS,), congestion="reno")
    ((w_max, w_after, t_end),) = _loss_episodes(r, trace)
    assert (w_max, w_after) == (100, 50)
    # From the end of recovery, each increase of the window comes after a window's worth of
    # packets acknowledged (within one ACK's two packets).
    acked = 0.0
    prev = w_after
    increases = 0
    for t, _, w, a in trace:
        if t <= t_end:
            continue
        acked += a
        if w > prev:
            assert w == prev + 1 and abs(acked - prev) <= 2, (t, prev, acked)
            increases += 1
            acked = 0.0
            prev = w
    assert increases > 50


def test_congestion_control_is_chosen_per_sender():
    """TCP_CONGESTION: reno or cubic where the window counts packets; the BSD stacks have only Reno."""
    base = dict(link="ethernet10", bytes=200_000, write=65536, read=65536)
    assert run_bulk(BulkConfig(personality="linux", congestion="reno", **base)).completed
    with pytest.raises(ValueError, match="cubic"):
        run_bulk(BulkConfig(personality="bsd44", congestion="cubic", **base))
    with pytest.raises(ValueError):
        run_bulk(BulkConfig(personality="linux", congestion="vegas", **base))


def test_a_loss_cuts_to_0_7_and_fast_convergence_lowers_w_max():
    """A loss at 100 packets leaves 70 (Reno would halve to 50). A second loss below the last
    maximum (about 80 packets: data packet 595) releases bandwidth: W_max becomes
    W (1 + beta) / 2 instead of W, and the window levels off there."""
    (first,) = _loss_episodes(*_run((FIRST_LOSS,)))
    assert first[:2] == (100, 70)
    r, trace = _run((FIRST_LOSS, 595))
    (_, (w2, after2, t_end2)) = _loss_episodes(r, trace)
    assert 70 < w2 < 100
    assert after2 == int(w2 * 717 / 1024)
    w_max = int(w2 * (1024 + 717) / 2048)
    # The flat top of the curve: the most common window in the 6 s after the second loss.
    windows = [w for t, _, w, _ in trace if t_end2 < t <= t_end2 + 6 * 10**9]
    plateau = max(set(windows), key=windows.count)
    assert plateau == w_max < w2


def test_window_growth_follows_the_cubic_function():
    """K = cbrt(W_max (1 - beta) / C) = 4.21 s for W_max 100 packets; the curve is computed on time
    since the epoch plus the minimum RTT (tcp_cubic.c), and the window tracks it within 3 packets or
    3 % (it trails by up to a round trip where the curve is steep): concave below W_max, flat around
    K, convex above."""
    r, trace = _run((FIRST_LOSS,))
    ((w_max, _, t_epoch),) = _loss_episodes(r, trace)
    k = (w_max * (1 - BETA) / C) ** (1 / 3)
    assert k == pytest.approx(4.21, abs=0.01)
    curve = [((t - t_epoch) / 1e9, w) for t, _, w, _ in trace if t >= t_epoch]
    checked = 0
    for t, w in curve:
        target = C * (t + RTT_NS / 1e9 - k) ** 3 + w_max
        if 0.5 <= t <= 9.5:
            assert abs(w - target) <= max(3, 0.03 * target), (t, w, target)
            checked += 1
    assert checked > 500
    flat = [w for t, w in curve if abs(t - k) <= 0.8]
    assert min(flat) >= 99 and max(flat) <= 101
    assert max(w for t, w in curve if t <= 10.5) > 150


def test_after_a_timeout_cubic_starts_over():
    """tcp_enter_loss: ssthresh from the cubic reduction, the window back to one segment, then
    bictcp_reset (no W_max remembered). A whole window of 100 packets is lost (data packets 91 to
    190, all sent before the timer fires): the sender restarts from one segment, slow start stops
    at 70, and the window climbs past 100 without levelling off there."""
    lost = tuple(range(FIRST_LOSS, 191))
    r, trace = _run(lost, nbytes=8 << 20)
    assert r.timeouts == 1
    sent = [(t, s) for t, s in r.records if s.src == SENDER_ADDR and s.payload_len]
    t_rto = next(t for t, s in sent if "retransmit" in s.tags)
    assert len([t for t, _ in sent if t < t_rto]) == lost[-1]  # all sent from packet 91 on were lost
    assert [w for t, _, w, _ in trace if t < t_rto][-1] == 100
    assert len([t for t, _ in sent if t == t_rto]) == 1  # one segment
    after = [(t, w, a) for t, _, w, a in trace if t > t_rto]
    # Slow start: each ACK adds what it acknowledged, until the window reaches ssthresh.
    ss_end = next(i for i, ((_, w0, _), (_, w1, a)) in enumerate(zip(after, after[1:])) if w1 - w0 < a)
    assert after[ss_end + 1][1] == int(100 * 717 / 1024) == 70
    rounds = _rounds(trace, after[ss_end + 1][0], 30)
    assert all(b > a for a, b in zip(rounds, rounds[1:]))  # no flat top at the old maximum
    assert rounds[10] > 100
