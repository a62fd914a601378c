"""Mogul & Minshall §3.3: which response lengths are vulnerable to the OF+SFS delay.

The paper's rule (reference/README.md): a response is delayed iff its length lies strictly between
(2N+1)*MSS and (2N+2)*MSS for some N >= 0, and length >= 2*MSS, and length >= MCLBYTES (messages
below MCLBYTES go out in one tcp_output call on an idle connection, the BSD idle quirk of §3).
The share is a property of a length distribution; the paper used one day of the DEC proxy trace,
which is not public here, so callers bring their own lengths.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence

# Mogul table 1, in percent. Its third column is printed "MCLBYTES = 8196", meaning 8192.
PAPER_TABLE1: dict[tuple[int, int | None], float] = {
    (1460, None): 18.78,
    (1460, 4096): 18.78,
    (1460, 8192): 10.05,
    (4312, None): 6.71,
    (4312, 4096): 6.71,
    (4312, 8192): 6.71,
}
TABLE1_MSS = (1460, 4312)  # Ethernet, FDDI (Mogul §3.3)
TABLE1_MCLBYTES: tuple[int | None, ...] = (None, 4096, 8192)


def vulnerable(length: int, mss: int, mclbytes: int | None) -> bool:
    """The §3.3 rule for one response length; `mclbytes=None` ignores the MCLBYTES test."""
    if mss <= 0:
        raise ValueError(f"MSS must be positive, got {mss}")
    if length < 2 * mss or (mclbytes is not None and length < mclbytes):
        return False
    full, rest = divmod(length, mss)
    # strictly inside ((2N+1)*MSS, (2N+2)*MSS): an odd number of full segments plus a short one
    return rest != 0 and full % 2 == 1


def vulnerable_share_pct(lengths: Iterable[int], mss: int, mclbytes: int | None) -> float:
    total = hit = 0
    for n in lengths:
        total += 1
        hit += vulnerable(n, mss, mclbytes)
    if total == 0:
        raise ValueError("OF+SFS share of an empty length distribution")
    return 100.0 * hit / total


def table1(lengths: Sequence[int]) -> list[dict]:
    """Mogul table 1 for `lengths`: one row per (MSS, MCLBYTES) with the paper's value beside it."""
    rows = []
    for mss in TABLE1_MSS:
        for mcl in TABLE1_MCLBYTES:
            rows.append(
                {
                    "mss": mss,
                    "mclbytes": "ignored" if mcl is None else mcl,
                    "share_pct": round(vulnerable_share_pct(lengths, mss, mcl), 2),
                    "paper_pct": PAPER_TABLE1[(mss, mcl)],
                }
            )
    return rows


# A synthetic Web response-size distribution standing in for the DEC trace: the SURGE model
# (Barford & Crovella, SIGMETRICS 1998): lognormal body (mu 9.357, sigma 1.318) with a Pareto
# tail (alpha 1.1, k 133 KB) for the largest 7 % of responses.
SURGE_MU, SURGE_SIGMA = 9.357, 1.318
SURGE_TAIL_SHARE, SURGE_TAIL_K, SURGE_TAIL_ALPHA = 0.07, 133_000, 1.1


def surge_lengths(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < SURGE_TAIL_SHARE:
            x = SURGE_TAIL_K / (1.0 - rng.random()) ** (1.0 / SURGE_TAIL_ALPHA)
        else:
            x = math.exp(rng.gauss(SURGE_MU, SURGE_SIGMA))
        out.append(max(1, int(x)))
    return out
