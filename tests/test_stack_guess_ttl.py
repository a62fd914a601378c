"""The stack guess reads the TTL a host's packets started at: no router raises one, so a TTL above
64 left a host that starts higher than Linux and the BSDs (128: Windows; 255: Solaris and others).
Checked on nDPI's public gnutella capture of a Windows client (tests/data/ndpi_gnutella_windows_host.pcap,
TTL 128) and on profiles built by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallscope.analyzers.analyze import analyze_one
from stallscope.analyzers.inference import stack_guess

LINUX_SIGNS = {"timestamps": True, "window_scale": 7, "nagle": "on",
               "nagle_evidence": "short segments ... went out behind full ones: minshall"}
LINUX_TIMER = {"timer": "one-shot", "timer_ns": 40_000_000}


@pytest.mark.parametrize(("ttl", "named"), [(128, "Windows"), (117, "Windows"), (255, "Solaris"), (230, "Solaris")])
def test_a_ttl_above_64_is_another_stack(ttl: int, named: str) -> None:
    guess = stack_guess({"ttl_max": ttl, "timestamps": True, "window_scale": 8}, {})
    assert guess["guess"] == "other"
    assert any(named in e and str(ttl) in e for e in guess["evidence"]), guess


def test_every_sign_of_linux_at_once_against_the_ttl_is_unknown() -> None:
    """A Linux host behind a middlebox that rewrites TTLs shows all of Linux's behaviour."""
    assert stack_guess({**LINUX_SIGNS, "ttl_max": 128}, LINUX_TIMER)["guess"] == "unknown"
    assert stack_guess({**LINUX_SIGNS, "ttl_max": 64}, LINUX_TIMER)["guess"] == "linux"


@pytest.mark.parametrize("ttl", [64, 60, 50, None])
def test_a_ttl_of_64_or_less_says_nothing(ttl: int | None) -> None:
    assert stack_guess({"ttl_max": ttl, "window_scale": None, "sack": False}, {"timer": "tick"})["guess"] == "bsd"


def test_the_windows_client_of_a_public_capture() -> None:
    capture = Path(__file__).resolve().parent / "data" / "ndpi_gnutella_windows_host.pcap"
    f = analyze_one(capture)
    client = [d for c in f.connections for d in c.directions if d.direction.startswith("10.0.2.15:")]
    assert client and all(d.profile["ttl_max"] == 128 and d.profile["stack"]["guess"] == "other" for d in client)
