"""Apple's PKTAP link type (native/src/wire/link/pktap.rs), what macOS `tcpdump -i pktap` writes:
a fixture behind a PKTAP header gives the same connections and stalls as the original (LINKTYPE_PKTAP
258, and LINKTYPE_USER2 149 as older macOS wrote it). Before, every record was
not_decoded[unsupported_linktype]."""

from __future__ import annotations

from pathlib import Path

import pcap_edit as pe
import pytest

from stallscope.analyzers.analyze import analyze_one

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("linktype", [258, 149])
def test_a_fixture_behind_pktap_headers_gives_the_same_analysis(linktype: int, tmp_path: Path) -> None:
    original = analyze_one(FIXTURES / "nagle_4k_jumbo.pcap")
    f = analyze_one(pe.pktap(pe.read(FIXTURES / "nagle_4k_jumbo.pcap"), linktype).write(tmp_path / "pktap.pcap"))
    assert f.decode["tcp_packets"] == original.decode["tcp_packets"] > 0
    assert f.decode["not_decoded"] == {}
    stalls = lambda a: sorted((s.dir, s.start_frame, s.end_frame, s.cause) for c in a.connections for s in c.stalls)
    assert stalls(f) == stalls(original)
