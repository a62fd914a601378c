"""Mogul & Minshall §3.3 OF+SFS vulnerability rule and table 1's structure."""

from __future__ import annotations

import pytest

from stallscope.simulate import of_sfs


@pytest.mark.parametrize(
    "length, expected",
    [
        (2 * 1460, False),  # below the first vulnerable interval
        (3 * 1460, False),  # exactly 3 MSS: no short final segment
        (3 * 1460 + 1, True),  # 3 full + 1 byte
        (4 * 1460 - 1, True),
        (4 * 1460, False),
        (4 * 1460 + 7, False),  # even number of full segments
        (5 * 1460 + 7, True),
        (1460 + 7, False),  # N = 0 interval, but shorter than 2 MSS
    ],
)
def test_rule_is_odd_full_segments_plus_a_short_one(length, expected):
    assert of_sfs.vulnerable(length, 1460, None) is expected


def test_mclbytes_exempts_short_messages():
    # 4381..5839 is vulnerable with MSS 1460 but below MCLBYTES 8192
    assert of_sfs.vulnerable(5000, 1460, 4096)
    assert not of_sfs.vulnerable(5000, 1460, 8192)
    assert not of_sfs.vulnerable(6 * 1460 + 1, 1460, 8192)  # even number of full segments
    assert of_sfs.vulnerable(7 * 1460 + 1, 1460, 8192)


def test_bad_inputs():
    with pytest.raises(ValueError, match="empty"):
        of_sfs.vulnerable_share_pct([], 1460, None)
    with pytest.raises(ValueError, match="MSS"):
        of_sfs.vulnerable(10, 0, None)


@pytest.mark.paper
def test_table1_structure_holds_for_any_distribution():
    """Mogul table 1: MSS 4312 row is the same in every column (2*MSS > 8192) and MSS 1460 is the
    same ignoring MCLBYTES or at 4096 (the first interval starts at 4380); 8192 can only lower it."""
    for lengths in (of_sfs.surge_lengths(20_000, seed=1), list(range(1, 100_001))):
        t = {(r["mss"], r["mclbytes"]): r["share_pct"] for r in of_sfs.table1(lengths)}
        assert t[(4312, "ignored")] == t[(4312, 4096)] == t[(4312, 8192)]
        assert t[(1460, "ignored")] == t[(1460, 4096)] >= t[(1460, 8192)]


def test_uniform_lengths_are_about_half_vulnerable_above_2mss():
    """For naglemark's uniform 1..100000 lengths, odd intervals are half of everything above 2 MSS."""
    share = of_sfs.vulnerable_share_pct(range(1, 100_001), 1460, None)
    assert share == pytest.approx(100 * (100_000 - 2 * 1460) / 2 / 100_000, abs=1.0)
