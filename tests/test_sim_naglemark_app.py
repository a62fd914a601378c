"""naglemark's app and score (Mogul & Minshall §6-7) against a minimal fake transport."""

from __future__ import annotations

from collections import deque

import pytest

from stallscope.simulate.apps import naglemark as nm
from stallscope.simulate.engine import NS_PER_MS, Simulator

RATE = 10_000_000


class _Pipe:
    """One direction of an ideal byte pipe: FIFO serialisation at `rate`, then `delay`."""

    def __init__(self, sim, rate, delay, extra_for_length=None):
        self.sim, self.rate, self.delay = sim, rate, delay
        self.busy_until = 0
        self.peer = None  # the _FakeSocket reading this pipe

    def push(self, nbytes, extra=0):
        start = max(self.sim.now, self.busy_until)
        self.busy_until = start + -(-nbytes * 8 * 10**9 // self.rate)
        self.sim.schedule(self.busy_until + self.delay + extra, lambda now: self.peer._arrive(now, nbytes))


class _FakeSocket:
    def __init__(self, sim, out_pipe, log, penalty):
        self.sim, self.out, self.log, self.penalty = sim, out_pipe, log, penalty
        self.buffered = 0
        self.waiting = None
        self.closed_by_peer = False
        self.peer = None

    def write(self, nbytes, done):
        self.log.append(nbytes)
        self.out.push(nbytes, self.penalty(nbytes))
        self.sim.schedule(self.sim.now, done)

    def read(self, max_bytes, got):
        self.waiting = (max_bytes, got)
        self._serve(self.sim.now)

    def close(self):
        self.peer.closed_by_peer = True
        self.sim.schedule(self.sim.now + 1, self.peer._serve)

    def _arrive(self, now, nbytes):
        self.buffered += nbytes
        self._serve(now)

    def _serve(self, now):
        if self.waiting is None:
            return
        max_bytes, got = self.waiting
        if self.buffered:
            n = min(max_bytes, self.buffered)
            self.buffered -= n
        elif self.closed_by_peer:
            n = 0
        else:
            return
        self.waiting = None
        got(now, n)


class FakeNetwork:
    """Ideal LAN; `penalty(nbytes)` adds delay to a server write of that size (to fake a Nagle stall)."""

    def __init__(self, rate=RATE, delay=50_000, penalty=lambda n: 0):
        self.sim = Simulator(seed=1)
        self.rate, self.delay, self.penalty = rate, delay, penalty
        self.connections = 0
        self.server_writes: list[int] = []

    def connect(self, established):
        self.connections += 1
        sim = self.sim
        c2s, s2c = _Pipe(sim, self.rate, self.delay), _Pipe(sim, self.rate, self.delay)
        client = _FakeSocket(sim, c2s, [], lambda n: 0)
        server = _FakeSocket(sim, s2c, self.server_writes, self.penalty)
        client.peer, server.peer = server, client
        c2s.peer, s2c.peer = server, client
        sim.schedule(sim.now + 2 * self.delay, lambda now: established(now, client, server))


def test_trial_letters_follow_mogul_table_2():
    assert nm.TrialType.s.sequential and nm.TrialType.s.per_request
    assert nm.TrialType.S.sequential and not nm.TrialType.S.per_request
    assert not nm.TrialType.r.sequential and nm.TrialType.r.per_request
    assert not nm.TrialType.R.sequential and not nm.TrialType.R.per_request


def test_lengths_are_sequential_by_100_or_seeded_uniform():
    seq = nm.response_lengths(nm.TrialType.S)
    assert seq[0] == 100 and seq[-1] == 100_000 and len(seq) == 1000
    a = nm.response_lengths(nm.TrialType.r, seed=7)
    assert a == nm.response_lengths(nm.TrialType.R, seed=7) != nm.response_lengths(nm.TrialType.r, seed=8)
    assert min(a) >= 1 and max(a) <= 100_000 and len(set(a)) > 900


def test_cutoff_is_three_times_length_over_rate_plus_10ms():
    assert nm.cutoff_ns(100_000, RATE) == 3 * (80 * NS_PER_MS + 10 * NS_PER_MS)
    assert nm.cutoff_ns(1, 100_000_000) == 3 * (80 + 10 * NS_PER_MS)


def test_score_counts_only_samples_above_the_cutoff():
    cut = nm.cutoff_ns(1000, RATE)
    samples = [nm.Sample(1000, cut), nm.Sample(1000, cut + 1), nm.Sample(1000, 0), nm.Sample(1000, 10**12)]
    assert nm.score_pct(samples, RATE) == 50.0
    with pytest.raises(ValueError, match="empty"):
        nm.score_pct([], RATE)


@pytest.mark.parametrize("trial, connections", [("S", 1), ("R", 1), ("s", 50), ("r", 50)])
def test_trial_runs_every_response_on_the_right_number_of_connections(trial, connections):
    net = FakeNetwork()
    lengths = nm.response_lengths(nm.TrialType(trial), n=50, seed=3)
    res = nm.run_trial(net, trial=nm.TrialType(trial), app_buf=4096, sockbuf=16384, raw_rate_bps=RATE, lengths=lengths)
    assert [s.length for s in res.samples] == lengths
    assert net.connections == connections
    # the server wrote each response in app_buf chunks
    assert sum(net.server_writes) == sum(lengths) and max(net.server_writes) <= 4096
    # an ideal pipe: elapsed = request + response serialisation + 2 delays, never delayed
    for s in res.samples:
        ideal = -(-(nm.REQUEST_BYTES * 8 * 10**9) // RATE) + 2 * 50_000
        assert s.elapsed_ns >= ideal + s.length * 800 - 4096 * 800
    assert res.score_pct == 0.0


def test_a_200ms_stall_on_odd_writes_shows_up_in_the_score():
    """Penalise every final write whose size is odd: the score is that share of responses."""
    net = FakeNetwork(penalty=lambda n: 200 * NS_PER_MS if n % 2 else 0)
    lengths = nm.response_lengths(nm.TrialType.R, n=200, seed=5)
    res = nm.run_trial(net, trial=nm.TrialType.R, app_buf=131_072, sockbuf=131_072, raw_rate_bps=RATE, lengths=lengths)
    expected = 100.0 * sum(1 for n in lengths if n % 2 and 200 * NS_PER_MS > nm.cutoff_ns(n, RATE) - n * 800) / 200
    assert res.score_pct == pytest.approx(expected)
    assert 20.0 < res.score_pct < 80.0


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="app_buf"):
        nm.run_trial(FakeNetwork(), trial=nm.TrialType.S, app_buf=0, sockbuf=1, raw_rate_bps=RATE, lengths=[1])
