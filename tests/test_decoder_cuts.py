"""Every public fixture cut at every byte offset ends in "N whole packets + at most one typed
error": N never decreases as the cut moves right, the packets are exactly the first N of the
uncut file, the accounting balances, and nothing but CaptureDamaged/CaptureRejected is raised."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallscope.packets.decoder import read_packets
from stallscope.packets.errors import CaptureDamaged, CaptureRejected
from shared_material import PUBLIC, requires_public

FIXTURES = PUBLIC

pytestmark = requires_public
ALL = sorted(p for p in FIXTURES.glob("*/*") if p.suffix in (".pcap", ".pcapng"))
SMALL = [p for p in ALL if p.stat().st_size <= 16 * 1024]
LARGE = [p for p in ALL if p.stat().st_size > 16 * 1024]


def outcome(data: bytes) -> tuple[list[int], str]:
    """(frames decoded, how it ended) for one input, checking the accounting on the way."""
    try:
        df, summary = read_packets(data, columns=["frame"])
    except CaptureDamaged as e:
        assert e.offset <= len(data)
        assert e.summary.balanced and e.summary.tcp_packets == e.packets.height == e.packets_decoded
        return e.packets["frame"].to_list(), "damaged"
    except CaptureRejected as e:
        assert e.offset <= len(data)
        return [], "rejected"
    assert summary.balanced and summary.tcp_packets == df.height
    assert summary.records == summary.container["records"]
    return df["frame"].to_list(), "complete"


def check_every_cut(path: Path) -> None:
    data = path.read_bytes()
    full, _ = outcome(data)
    prev = 0
    for k in range(len(data) + 1):
        frames, how = outcome(data[:k])
        assert len(frames) >= prev, (k, how)
        assert frames == full[: len(frames)], k
        prev = len(frames)
    assert prev == len(full)


@pytest.mark.parametrize("path", SMALL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_cut_of_small_fixtures(path: Path):
    check_every_cut(path)


@pytest.mark.slow
@pytest.mark.parametrize("path", LARGE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_cut_of_large_fixtures(path: Path):
    check_every_cut(path)


def test_a_cut_file_is_damaged_not_complete():
    """A file cut inside its last record is never reported complete."""
    data = (FIXTURES / "zeek" / "tcp_retransmit-fast009.pcap").read_bytes()
    frames, how = outcome(data[:-1])
    assert how == "damaged" and len(frames) == outcome(data)[0][-1] - 1
