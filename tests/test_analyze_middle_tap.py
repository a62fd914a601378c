"""A tap in the middle of the path, made from a fixture's two taps (pcap_edit.middle_tap): each
packet placed a share of its own transit along the way, and a packet one tap saw and the other never
did kept (a tap before the loss) or left out (after it). The mechanisms do not move with the tap,
so each capture's expected causes hold there too (capture truth, scored as `stallscope score` does).

A tap after the hop that drops large packets never sees them: PMTU discovery then looks like a
sender that never used the MSS offered, and a black hole like late, small data. The path rules read
that away from the sender, in the middle as at the receiver (causes/path.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pcap_edit as pe
import pytest

from stallscope.analyzers.analyze import analyze_file
from stallscope.analyzers.scoring import score_capture_truth

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PAIRS = sorted(p.name[: -len(".receiver.pcap")] for p in FIXTURES.glob("*.receiver.pcap"))
PATH_MTU = ["pmtu_blackhole", "pmtu_blackhole_probing", "pmtu_icmp"]


def _score(name: str, at: float, unpaired: bool, tmp_path: Path) -> dict:
    cap, counts = pe.middle_tap(pe.read(FIXTURES / f"{name}.pcap"), pe.read(FIXTURES / f"{name}.receiver.pcap"),
                                at, unpaired)
    path = cap.write(tmp_path / f"{name}.middle.pcap")
    truth = json.loads((FIXTURES / f"{name}.json").read_text())
    (row,) = score_capture_truth(analyze_file(path).to_json(), truth).captures
    return {**row, **counts, "vantages": {v["vantage"] for c in analyze_file(path).files[0].connections
                                          for v in c.vantage.values()}}


def test_a_middle_tap_places_each_packet_along_its_own_transit(tmp_path: Path) -> None:
    """Every packet of a clean capture is seen at both taps: all paired, none left over, in time
    order, and the analysis reads the tap as neither the sender's nor the receiver's."""
    cap, counts = pe.middle_tap(pe.read(FIXTURES / "clean_bulk.pcap"), pe.read(FIXTURES / "clean_bulk.receiver.pcap"))
    assert counts["unpaired_kept"] == counts["unpaired_left_out"] == 0 and counts["paired"] == len(cap.records)
    times = [cap.ts(r) for r in cap.records]
    assert times == sorted(times)
    row = _score("clean_bulk", 0.5, True, tmp_path)
    assert row["ok"] and "middle" in row["vantages"], row


@pytest.mark.parametrize("unpaired", [True, False], ids=["before_the_loss", "after_the_loss"])
@pytest.mark.parametrize("name", PATH_MTU)
def test_path_mtu_fixtures_keep_their_verdicts_in_the_middle(name: str, unpaired: bool, tmp_path: Path) -> None:
    """After the hop (its large packets never reach the tap), pmtu_icmp was reported as GigaTCP's
    MSS mismatch and both black holes were missed (no finding, or the mismatch) before the path
    rules read a middle tap as they read the receiver's."""
    row = _score(name, 0.5, unpaired, tmp_path)
    assert row["ok"], row


@pytest.mark.parametrize("at", [0.25, 0.5, 0.75])
@pytest.mark.parametrize("unpaired", [True, False], ids=["before_the_loss", "after_the_loss"])
@pytest.mark.parametrize("name", PAIRS)
def test_every_fixture_keeps_its_verdict_in_the_middle(name: str, unpaired: bool, at: float, tmp_path: Path) -> None:
    row = _score(name, at, unpaired, tmp_path)
    assert row["ok"], row
