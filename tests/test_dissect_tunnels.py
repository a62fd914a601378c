"""Tunnels (native/src/wire/tunnel.rs): a capture on a cloud host's underlay holds the
tenants' TCP inside VXLAN or Geneve. Our own fixtures wrapped whole in each must give the same
connections and the same stalls as the originals; tcpdump's public single-packet captures of
GSO / BIG TCP frames in VXLAN and Geneve each give their one TCP packet."""

from __future__ import annotations

from pathlib import Path

import pcap_edit as pe
import pytest
from shared_material import AVAILABLE

from stallscope.analyzers.analyze import analyze_one

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _stalls(f):
    return sorted((s.dir, s.start_frame, s.end_frame, s.cause, s.detail) for c in f.connections for s in c.stalls)


@pytest.mark.parametrize("port", [4789, 8472, 6081], ids=["vxlan", "vxlan-linux", "geneve"])
@pytest.mark.parametrize("name", ["nagle_4k_jumbo", "burst_loss"])
def test_a_fixture_inside_a_tunnel_gives_the_same_analysis(name: str, port: int, tmp_path: Path) -> None:
    original = analyze_one(FIXTURES / f"{name}.pcap")
    wrapped = analyze_one(pe.vxlan(pe.read(FIXTURES / f"{name}.pcap"), port).write(tmp_path / "tunnel.pcap"))
    assert wrapped.decode["tcp_packets"] == original.decode["tcp_packets"] > 0
    assert [(c.initiator, c.responder) for c in wrapped.connections] == \
        [(c.initiator, c.responder) for c in original.connections]
    assert _stalls(wrapped) == _stalls(original)


def test_other_udp_stays_not_tcp(tmp_path: Path) -> None:
    """The same wrapping to port 4790 (VXLAN-GPE, not opened): nothing is TCP, each frame counted."""
    cap = pe.read(FIXTURES / "nagle_4k_jumbo.pcap")
    f = analyze_one(pe.vxlan(cap, 4790).write(tmp_path / "gpe.pcap"))
    assert f.connections == []
    assert f.decode["not_tcp"] == {"udp": len(cap.records)}


DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("name", ["gso-ipv4-vxlan-ipv4.pcap", "gso-ipv6-geneve-ipv6.pcap"])
def test_tcpdumps_tunnel_captures_give_their_tcp_packet(name: str) -> None:
    """tcpdump's own test captures (tests/data, from the-tcpdump-group/tcpdump): one GSO frame in
    VXLAN over IPv4 and one in Geneve over IPv6, which tshark too reads as TCP."""
    f = analyze_one(DATA / name)
    assert f.decode["tcp_packets"] == 1 and f.decode["not_tcp"] == {}
    assert len(f.connections) == 1


@pytest.mark.parametrize("name, via", [("ndpi_gtp_u_http.pcapng", "GTP-U"), ("ndpi_6in4_tunnel.pcap", "6in4")])
def test_a_mobile_cores_gtp_and_ip_in_ip_give_the_tcp_inside(name: str, via: str) -> None:
    """nDPI's captures (tests/data): HTTP downloads inside GTP-U, as a mobile core's S1-U or N3
    interface carries them (3GPP TS 29.281, port 2152), and IPv6 TCP inside IPv4 (protocol 41).
    Every frame tshark reads as TCP (not quoted in an ICMP error) is TCP here too; once all were
    "not TCP: udp" or "other_ip_protocol"."""
    import shutil
    import subprocess

    f = analyze_one(DATA / name)
    if shutil.which("tshark"):
        tshark = subprocess.run(["tshark", "-r", str(DATA / name), "-Y", "tcp && !icmp && !icmpv6", "-T", "fields",
                                 "-e", "frame.number"], capture_output=True, text=True, timeout=60).stdout.split()
        assert f.decode["tcp_packets"] == len(tshark)
    assert f.decode["tcp_packets"] >= 40, via
    assert f.connections and all(":" in c.initiator for c in f.connections)


@pytest.mark.parametrize("name", ["nagle_4k_jumbo", "burst_loss"])
def test_a_fixture_mirrored_through_erspan_gives_the_same_analysis(name: str, tmp_path: Path) -> None:
    """A switch's ERSPAN session (GRE protocol 0x88be with its 8-byte header) carrying the fixture
    to a remote analyzer: the same connections and stalls as the fixture itself."""
    original = analyze_one(FIXTURES / f"{name}.pcap")
    mirrored = analyze_one(pe.erspan(pe.read(FIXTURES / f"{name}.pcap")).write(tmp_path / "erspan.pcap"))
    assert mirrored.decode["tcp_packets"] == original.decode["tcp_packets"] > 0
    assert _stalls(mirrored) == _stalls(original)


def test_a_tunnel_inside_a_tunnel_is_opened_too(tmp_path: Path) -> None:
    """VXLAN mirrored through ERSPAN (a tenant's traffic on an underlay port a switch mirrors), as
    Suricata's Geneve around GRE: the innermost packets, the same analysis."""
    original = analyze_one(FIXTURES / "burst_loss.pcap")
    nested = analyze_one(pe.erspan(pe.vxlan(pe.read(FIXTURES / "burst_loss.pcap"))).write(tmp_path / "nested.pcap"))
    assert nested.decode["tcp_packets"] == original.decode["tcp_packets"] > 0
    assert _stalls(nested) == _stalls(original)
