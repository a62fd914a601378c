"""Losses before a receiver's tap (causes/loss.py, analyze._continues_unseen_recovery): the lost
packets never show there, but the sender's IPv4 ids skip over them. The scoring corpus's ATM runs
captured at the receiver (the simulator numbers each host's packets): a tail lost at the switch made
the timeout's resend arrive as new data, which ended the stall at the resend and left the resend's
own wait for the receiver's delayed ACK (100 ms) as a separate "window_update_deadlock"; and a frame
lost past the highest one seen counted no loss, so two lost frames read as a single loss."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallscope.analyzers import corpus, scoring

_SPECS = {s.name: s for s in corpus.plan()}


def _scored(tmp_path: Path, name: str) -> tuple[dict, dict]:
    corpus.run_trace(_SPECS[name], tmp_path, tap="receiver")
    pcap = tmp_path / f"{name}.pcap"
    report = scoring.score_files(pcap, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    return report["causes"], report["totals"]


def test_a_timeouts_resend_unseen_before_is_the_same_stall_as_its_wait(tmp_path: Path) -> None:
    causes, totals = _scored(tmp_path, "atm-freebsd4-none-200cells")
    assert causes["burst_loss_timeout"]["recall"] == 1.0, causes
    # (The one true deadlock is the first flight's, in slow start.)
    assert causes["window_update_deadlock"]["reported"] == causes["window_update_deadlock"]["matched"] == 1, causes
    assert totals["spurious"] == 0 and totals["reported"] == totals["matched"], totals


@pytest.mark.parametrize("name", ["atm-bsd44-none-200cells", "atm-freebsd4-none-200cells"])
def test_frames_lost_past_the_highest_seen_count_towards_a_burst(tmp_path: Path, name: str) -> None:
    causes, _ = _scored(tmp_path, name)
    assert causes["burst_loss_timeout"]["matched"] == causes["burst_loss_timeout"]["true"], causes
    assert "single_loss_timeout" not in causes or causes["single_loss_timeout"]["reported"] == 0, causes
