"""The simulator's golden traces: every case of tests/sim_golden.py run again and compared with
its entry in tests/golden/sim_traces.json (sha256 of the pcap and of the ground truth, and the
readable figures beside them). A failure names the figures that moved; when the change is meant,
`python3 tests/sim_golden.py update` rewrites the file and its diff shows what changed."""

from __future__ import annotations

import pytest

import sim_golden

CASES = sim_golden.cases()
STORED = sim_golden.load() if sim_golden.GOLDEN.exists() else {}


def _params() -> list:
    return [pytest.param(name, marks=[pytest.mark.slow] if case.slow else [], id=name)
            for name, case in CASES.items()]


@pytest.mark.parametrize("name", _params())
def test_golden_trace(name: str) -> None:
    stored = STORED.get(name)
    got = sim_golden.digest(name)
    assert got == stored, sim_golden.explain(name, stored, got)


def test_golden_file_holds_exactly_the_cases() -> None:
    """No stale entries (a case renamed or dropped) and none missing (a case added without update)."""
    assert sim_golden.GOLDEN.exists(), f"{sim_golden.GOLDEN} is missing: run `{sim_golden.UPDATE_COMMAND}`"
    missing = sorted(set(CASES) - set(STORED))
    stale = sorted(set(STORED) - set(CASES))
    assert not missing and not stale, (f"missing: {missing}\nstale: {stale}\n"
                                       f"run `{sim_golden.UPDATE_COMMAND}` and review the diff")


def test_every_family_runs_by_default() -> None:
    """The default (not slow) run holds at least one case of each family."""
    families = {sim_golden.family(n) for n in CASES}
    default = {sim_golden.family(n) for n, c in CASES.items() if not c.slow}
    assert families == default, sorted(families - default)
    assert families >= {"matrix", "loss-matrix", "special", "lossy", "path", "moldeklev", "kung-morris",
                        "gigatcp", "naglemark", "naglemark-think", "naglemark-full"}
