"""naglemark: the request/response benchmark of Mogul & Minshall §6-7, and its score.

A client sends a small request; the server answers with a response of the requested length,
written in `app_buf`-sized write() calls into a socket whose send buffer is `sockbuf`; the client
measures from sending the request to receiving the last response byte. One trial is 1000
responses whose lengths run sequentially 100, 200, ... 100000 bytes or are uniform random in
1..100000, over one connection per request or one for all (Mogul table 2: s, S, r, R). The
client may spend a think time between a response's last byte and its next request (or connect);
it is never part of a sample (the Mogul reproductions calibrate it, reproductions/mogul.py).

The app runs on any transport offering `Network.connect` and `AppSocket` (blocking write/read
semantics expressed as callbacks); the TCP hosts in simulate/tcp provide one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Protocol

from ..engine import NS_PER_MS, NS_PER_S, Simulator

# Mogul §7: 1000 transfers, sequential from 100 to 100,000 bytes in steps of 100, or uniform random 1..100,000.
RESPONSES_PER_TRIAL = 1000
SEQUENTIAL_STEP = 100
MAX_LENGTH = 100_000
# Mogul §6: estimate = length / raw rate + 10 ms; a sample is delayed above 3 x the estimate.
STARTUP_NS = 10 * NS_PER_MS
CUTOFF_FACTOR = 3
# The request carries the wanted length; its size is not given in the paper, any few bytes will do.
REQUEST_BYTES = 16
# The client reads with a buffer large enough for any response (the paper does not give it).
CLIENT_READ_BYTES = 131_072
_SLICE_EVENTS = 4096


class TrialType(str, Enum):
    """Mogul table 2."""

    s = "s"  # sequential lengths, one connection per request
    S = "S"  # sequential lengths, one connection for all requests
    r = "r"  # random lengths, one connection per request
    R = "R"  # random lengths, one connection for all requests

    @property
    def sequential(self) -> bool:
        return self in (TrialType.s, TrialType.S)

    @property
    def per_request(self) -> bool:
        return self in (TrialType.s, TrialType.r)


def response_lengths(trial: TrialType, n: int = RESPONSES_PER_TRIAL, seed: int = 0) -> list[int]:
    trial = TrialType(trial)
    if trial.sequential:
        return [SEQUENTIAL_STEP * (i + 1) for i in range(n)]
    rng = random.Random(seed)
    return [rng.randint(1, MAX_LENGTH) for _ in range(n)]


def cutoff_ns(length: int, raw_rate_bps: int) -> int:
    """3 x (length / raw rate + 10 ms), in integer ns."""
    transfer = -(-(length * 8 * NS_PER_S) // raw_rate_bps)
    return CUTOFF_FACTOR * (transfer + STARTUP_NS)


@dataclass(frozen=True, slots=True)
class Sample:
    length: int
    elapsed_ns: int


def score_pct(samples: list[Sample], raw_rate_bps: int) -> float:
    """% of samples slower than the cutoff (Mogul §6)."""
    if not samples:
        raise ValueError("naglemark score of an empty trial")
    delayed = sum(1 for s in samples if s.elapsed_ns > cutoff_ns(s.length, raw_rate_bps))
    return 100.0 * delayed / len(samples)


# --- the transport the app runs on ---------------------------------------------------------------

Done = Callable[[int], None]  # now
Got = Callable[[int, int], None]  # now, bytes read (0 at end of stream)


class AppSocket(Protocol):
    def write(self, nbytes: int, done: Done) -> None:
        """One blocking write() call; `done(now)` when it returns (all bytes copied)."""

    def read(self, max_bytes: int, got: Got) -> None:
        """One blocking read() call; `got(now, n)` once data (n > 0) or end of stream (n == 0) is there."""

    def close(self) -> None: ...


class Network(Protocol):
    sim: Simulator

    def connect(self, established: Callable[[int, AppSocket, AppSocket], None]) -> None:
        """Open a connection; `established(now, client_socket, server_socket)` once both ends are up."""


# --- the two applications --------------------------------------------------------------------------


class _Server:
    """Reads a request, writes the response in app_buf chunks, then reads again (blocking)."""

    def __init__(self, sock: AppSocket, app_buf: int, lengths: list[int]) -> None:
        self.sock = sock
        self.app_buf = app_buf
        self.lengths = lengths  # shared queue: the length the client will ask for next
        self._request_got = 0
        self._left = 0

    def start(self, now: int) -> None:
        self.sock.read(REQUEST_BYTES, self._on_request)

    def _on_request(self, now: int, n: int) -> None:
        if n == 0:
            self.sock.close()  # client closed (one connection per request)
            return
        self._request_got += n
        if self._request_got < REQUEST_BYTES:
            self.sock.read(REQUEST_BYTES - self._request_got, self._on_request)
            return
        self._request_got = 0
        self._left = self.lengths.pop(0)
        self._write_next(now)

    def _write_next(self, now: int) -> None:
        if self._left == 0:
            self.sock.read(REQUEST_BYTES, self._on_request)
            return
        chunk = min(self.app_buf, self._left)
        self._left -= chunk
        self.sock.write(chunk, self._write_next)


@dataclass
class _Client:
    network: Network
    trial: TrialType
    app_buf: int
    lengths: list[int]
    on_finished: Callable[[int], None]
    # The client's own time between receiving a response's last byte and sending (or, one
    # connection per request, connecting for) the next request: outside every measured interval.
    think_ns: int = 0
    samples: list[Sample] = field(default_factory=list)
    _server_queue: list[int] = field(default_factory=list)
    _sock: AppSocket | None = None
    _length: int = 0
    _received: int = 0
    _t0: int = 0

    def start(self, now: int) -> None:
        self.network.connect(self._established)

    def _established(self, now: int, client: AppSocket, server: AppSocket) -> None:
        self._sock = client
        _Server(server, self.app_buf, self._server_queue).start(now)
        self._request(now)

    def _request(self, now: int) -> None:
        i = len(self.samples)
        self._length = self.lengths[i]
        self._server_queue.append(self._length)
        self._received = 0
        self._t0 = now
        assert self._sock is not None
        self._sock.write(REQUEST_BYTES, self._read)

    def _read(self, now: int) -> None:
        assert self._sock is not None
        self._sock.read(CLIENT_READ_BYTES, self._on_data)

    def _on_data(self, now: int, n: int) -> None:
        if n == 0:
            raise RuntimeError(
                f"naglemark: server closed after {self._received} of {self._length} bytes (response {len(self.samples)})"
            )
        self._received += n
        if self._received < self._length:
            self._read(now)
            return
        if self._received > self._length:
            raise RuntimeError(f"naglemark: {self._received} bytes received for a {self._length}-byte response")
        self.samples.append(Sample(self._length, now - self._t0))
        if len(self.samples) == len(self.lengths):
            assert self._sock is not None
            self._sock.close()
            self.on_finished(now)
        elif self.trial.per_request:
            assert self._sock is not None
            self._sock.close()
            self._server_queue = []
            if self.think_ns:
                self.network.sim.after(self.think_ns, lambda t: self.network.connect(self._established))
            else:
                self.network.connect(self._established)
        elif self.think_ns:
            self.network.sim.after(self.think_ns, self._request)
        else:
            self._request(now)


@dataclass(frozen=True, slots=True)
class TrialResult:
    trial: TrialType
    app_buf: int
    sockbuf: int
    raw_rate_bps: int
    samples: tuple[Sample, ...]
    finished_ns: int

    @property
    def score_pct(self) -> float:
        return score_pct(list(self.samples), self.raw_rate_bps)


def run_trial(
    network: Network,
    *,
    trial: TrialType,
    app_buf: int,
    sockbuf: int,
    raw_rate_bps: int,
    lengths: list[int],
    until_ns: int | None = None,
    think_ns: int = 0,
) -> TrialResult:
    """Run one trial to completion on `network` (its simulator is driven here). `think_ns`: the
    client's time between a response's last byte and its next request (not measured)."""
    if app_buf <= 0:
        raise ValueError(f"naglemark: app_buf must be positive, got {app_buf}")
    if think_ns < 0:
        raise ValueError(f"naglemark: think time must not be negative, got {think_ns}")
    if not lengths:
        raise ValueError("naglemark: a trial needs at least one response length")
    finished: list[int] = []
    client = _Client(network, TrialType(trial), app_buf, list(lengths), finished.append, think_ns)
    sim = network.sim
    sim.schedule(sim.now, client.start)
    # Free-running timers (the 200 ms tick) keep the queue non-empty: run in slices until done.
    while not finished and (until_ns is None or sim.now < until_ns):
        before = sim.events_run
        sim.run(until=until_ns, max_events=_SLICE_EVENTS)
        if sim.events_run == before:
            break  # nothing left to run
    if not finished:
        raise RuntimeError(
            f"naglemark trial {trial} stopped after {len(client.samples)} of {len(lengths)} responses at t={sim.now} ns"
        )
    return TrialResult(TrialType(trial), app_buf, sockbuf, raw_rate_bps, tuple(client.samples), finished[0])
