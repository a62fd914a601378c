"""naglemark: the request/response benchmark of Mogul & Minshall §6-7, and its score.

A client sends a small request; the server answers with a response of the requested length,
written in `app_buf`-sized write() calls into a socket whose send buffer is `sockbuf`; the client
measures from sending the request to receiving the last response byte. One trial is 1000
responses whose lengths run sequentially 100, 200, ... 100000 bytes or are uniform random in
1..100000, over one connection per request or one for all (Mogul table 2: s, S, r, R). The
client may spend a think time between a response's last byte and its next request (or connect);
it is never part of a sample (the Mogul reproductions calibrate it, reproductions/mogul.py).

The client and server run in the simulator's native core (native/src/sim/naglemark.rs): each
connection is a fresh pair of TCP hosts over the link preset, with the client running traditional
Nagle and the server the variant under test.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import Enum

from ..units import NS_PER_MS, NS_PER_S

# Mogul §7: 1000 transfers, sequential from 100 to 100,000 bytes in steps of 100, or uniform random 1..100,000.
RESPONSES_PER_TRIAL = 1000
SEQUENTIAL_STEP = 100
MAX_LENGTH = 100_000
# Mogul §6: estimate = length / raw rate + 10 ms; a sample is delayed above 3 x the estimate.
STARTUP_NS = 10 * NS_PER_MS
CUTOFF_FACTOR = 3


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
    *, personality: str, link: str, variant: str, sockbuf: int, app_buf: int, trial: TrialType | str,
    lengths: list[int], seed: int = 0, receiver_inference: bool = False, think_ns: int = 0,
    rate_bps: int | None = None, delay_ns: int | None = None, mtu: int | None = None,
) -> TrialResult:
    """Run one trial to completion in the simulator: a client host running traditional Nagle and
    a server host running `variant` with a `sockbuf` send buffer, over the `link` preset, one
    connection per request for trials s and r. `think_ns`: the client's time between a response's
    last byte and its next request (not measured). `rate_bps`, `delay_ns` and `mtu` override the
    preset's (a capture rig's path)."""
    from ..nagle import NagleVariant
    from ..native_core import naglemark_trial

    if think_ns < 0:
        raise ValueError(f"naglemark: think time must not be negative, got {think_ns}")
    v = NagleVariant.parse(variant) if isinstance(variant, str) else NagleVariant(variant)
    result, _raw = naglemark_trial(personality=personality, link=link, variant=v, sockbuf=sockbuf,
                                   receiver_inference=receiver_inference, seed=seed, trial=TrialType(trial),
                                   app_buf=app_buf, lengths=lengths, think_ns=think_ns, rate_bps=rate_bps,
                                   delay_ns=delay_ns, mtu=mtu)
    return result
