"""Serial links a router's capture holds (native/src/wire/link/ppp.rs): Cisco HDLC framing with
its SLARP keepalives under the PPP link type, as the file has it (nDPI's BGP capture), PPP
(tcpdump's BGP capture), and PPP carrying MPLS in front of IP (tcpdump's LSP ping capture), all in
tests/data. Every frame tshark reads as TCP is TCP here,
each other frame counted with a reason; once all were not_decoded[unsupported_linktype]."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from stallscope.analyzers.analyze import analyze_one

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("name, linktype, tcp", [("ndpi_bgp_cisco_hdlc.pcap", 9, 14), ("bgp_vpn_attrset.pcap", 9, 1),
                                                 ("lspping-fec-ldp.pcap", 9, 3)])
def test_tcp_over_serial_links(name: str, linktype: int, tcp: int) -> None:
    f = analyze_one(DATA / name)
    d = f.decode
    assert d["tcp_packets"] == tcp
    assert d["not_decoded"] == {}
    assert d["records"] == d["tcp_packets"] + sum(d["not_tcp"].values())
    assert f.connections and all(c.initiator.count(".") == 3 for c in f.connections)
    if shutil.which("tshark"):
        frames = subprocess.run(["tshark", "-r", str(DATA / name), "-Y", "tcp && !icmp", "-T", "fields",
                                 "-e", "frame.number"], capture_output=True, text=True, timeout=60).stdout.split()
        assert len(frames) == tcp
    head = (DATA / name).read_bytes()[20:24]
    assert int.from_bytes(head, "little") == linktype or int.from_bytes(head, "big") == linktype
