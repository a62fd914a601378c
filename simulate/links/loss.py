"""Random packet loss: Bernoulli and two-state Gilbert-Elliott.

Pure: each call to `lose()` decides one packet from the caller's seeded `random.Random`, so a
run is reproducible from its seed.
"""

from __future__ import annotations

import random


def _check_probability(name: str, p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {p}")


class RandomLoss:
    def __init__(self, p: float, rng: random.Random) -> None:
        _check_probability("p", p)
        self.p = p
        self.rng = rng
        self.offered = 0
        self.lost = 0

    def lose(self) -> bool:
        self.offered += 1
        hit = self.rng.random() < self.p
        self.lost += hit
        return hit


class GilbertElliott:
    """Good/bad channel: before each packet the state may flip (good->bad with p_gb, bad->good
    with p_bg), then the packet is lost with the state's loss probability. Mean burst length in
    the bad state is 1 / p_bg packets."""

    def __init__(self, p_gb: float, p_bg: float, loss_good: float, loss_bad: float,
                 rng: random.Random) -> None:
        for name, p in (("p_gb", p_gb), ("p_bg", p_bg), ("loss_good", loss_good), ("loss_bad", loss_bad)):
            _check_probability(name, p)
        self.p_gb, self.p_bg = p_gb, p_bg
        self.loss_good, self.loss_bad = loss_good, loss_bad
        self.rng = rng
        self.bad = False
        self.offered = 0
        self.lost = 0

    def lose(self) -> bool:
        self.offered += 1
        flip = self.p_bg if self.bad else self.p_gb
        if self.rng.random() < flip:
            self.bad = not self.bad
        hit = self.rng.random() < (self.loss_bad if self.bad else self.loss_good)
        self.lost += hit
        return hit

    @property
    def stationary_loss(self) -> float:
        """Long-run loss rate: pi_bad * loss_bad + pi_good * loss_good."""
        total = self.p_gb + self.p_bg
        if total == 0:
            return self.loss_bad if self.bad else self.loss_good
        pi_bad = self.p_gb / total
        return pi_bad * self.loss_bad + (1 - pi_bad) * self.loss_good


class NthLoss:
    """Loses exactly the listed packets (1-based counts of the packets offered): a deterministic
    trigger loss for reproductions that study what happens after one loss."""

    def __init__(self, indices: tuple[int, ...] | list[int]) -> None:
        if any(i < 1 for i in indices):
            raise ValueError(f"packet indices are 1-based, got {sorted(indices)}")
        self.indices = frozenset(indices)
        self.offered = 0
        self.lost = 0

    def lose(self) -> bool:
        self.offered += 1
        hit = self.offered in self.indices
        self.lost += hit
        return hit
