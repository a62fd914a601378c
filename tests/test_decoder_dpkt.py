"""Field-by-field agreement with dpkt (the oracle) on every public fixture dpkt can parse.

dpkt decodes each record itself (link layer by link type, IP/IPv6 with extension headers, TCP and
its options); rows are matched by frame number. Deliberate divergences, each checked below:
- dpkt raises on records whose headers were cut by the snaplen (zeek/trunc_*, header-only
  captures); those records are not compared (test_dissect_* covers them).
- dpkt's pcapng reader gives float timestamps from the first interface only; for pcapng the
  timestamp is compared within 1 us. pcap timestamps are rebuilt exactly from dpkt's record
  header (seconds, fraction) and compared to the nanosecond.
- TSO super-frames (IPv4 total length 0): dpkt trusts the header, so its payload length is
  meaningless there; ours comes from the wire length (flagged `superframe`).
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import dpkt
import pytest

from stallscope.packets.decoder import read_packets
from stallscope.packets.errors import CaptureError
from shared_material import PUBLIC, requires_public

FIXTURES = PUBLIC

pytestmark = requires_public
ALL = sorted(p for p in FIXTURES.glob("*/*") if p.suffix in (".pcap", ".pcapng"))
LINK = {1: dpkt.ethernet.Ethernet, 113: dpkt.sll.SLL, 276: dpkt.sll2.SLL2}


def _pcap_records(data: bytes):
    """(frame, ts_ns, linktype, bytes) from dpkt's pcap header structures, exact to the ns."""
    magic = data[:4]
    le = magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1")
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    fh = (dpkt.pcap.LEFileHdr if le else dpkt.pcap.FileHdr)(data[:24])
    hdr_cls = dpkt.pcap.LEPktHdr if le else dpkt.pcap.PktHdr
    off, frame = 24, 0
    while off + 16 <= len(data):
        h = hdr_cls(data[off : off + 16])
        frame += 1
        yield frame, h.tv_sec * 10**9 + h.tv_usec * (1 if nano else 1000), fh.linktype & 0xFFFF, data[off + 16 : off + 16 + h.caplen]
        off += 16 + h.caplen


def _pcapng_records(path: Path):
    with open(path, "rb") as f:
        r = dpkt.pcapng.Reader(f)
        for frame, (ts, buf) in enumerate(r, 1):
            yield frame, round(ts * 1e9), r.datalink(), buf


def _options(tcp) -> dict:
    o = {"opt_mss": None, "opt_wscale": None, "opt_sack_perm": False, "opt_ts_val": None, "opt_ts_ecr": None, "sack": []}
    for kind, val in dpkt.tcp.parse_opts(tcp.opts):
        if kind == dpkt.tcp.TCP_OPT_MSS and len(val) == 2:
            o["opt_mss"] = struct.unpack(">H", val)[0]
        elif kind == dpkt.tcp.TCP_OPT_WSCALE and len(val) == 1:
            o["opt_wscale"] = val[0]
        elif kind == dpkt.tcp.TCP_OPT_SACKOK:
            o["opt_sack_perm"] = True
        elif kind == dpkt.tcp.TCP_OPT_TIMESTAMP and len(val) == 8:
            o["opt_ts_val"], o["opt_ts_ecr"] = struct.unpack(">II", val)
        elif kind == dpkt.tcp.TCP_OPT_SACK and len(val) % 8 == 0:
            o["sack"] = [struct.unpack(">II", val[i : i + 8]) for i in range(0, len(val), 8)]
    return o


def dpkt_view(path: Path) -> dict[int, dict]:
    """frame -> the fields dpkt finds, for every record dpkt fully decodes as TCP."""
    data = path.read_bytes()
    records = _pcapng_records(path) if data[:4] == b"\x0a\x0d\x0d\x0a" else _pcap_records(data)
    out = {}
    for frame, ts_ns, linktype, buf in records:
        try:
            ip = LINK[linktype](buf).data
            if not isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)) or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            tcp = ip.data
        except (dpkt.UnpackError, KeyError, struct.error):
            continue
        v6 = isinstance(ip, dpkt.ip6.IP6)
        fam = socket.AF_INET6 if v6 else socket.AF_INET
        row = {
            "ts_ns": ts_ns,
            "src_addr": socket.inet_ntop(fam, ip.src),
            "dst_addr": socket.inet_ntop(fam, ip.dst),
            "ttl": ip.hlim if v6 else ip.ttl,
            "src_port": tcp.sport,
            "dst_port": tcp.dport,
            "seq_raw": tcp.seq,
            "ack_raw": tcp.ack,
            "flags": tcp._off_flags & 0x0FFF,  # dpkt splits the 12 bits into _rsv (3) and flags (9)
            "win_raw": tcp.win,
            "tcp_hdr_len": tcp.off * 4,
            "payload_captured": len(tcp.data),
            **_options(tcp),
        }
        if not v6:
            row["ip_id"] = ip.id
            row["ip_len"] = ip.len
            row["payload_len"] = ip.len - ip.hl * 4 - tcp.off * 4
        else:
            row["ip_len"] = 40 + ip.plen
        out[frame] = row
    return out


def _readable(path: Path) -> bool:
    try:
        read_packets(path, columns=["frame"])
    except CaptureError:
        return False
    return True


DPKT_FILES = [p for p in ALL if _readable(p) and dpkt_view(p)]


def test_most_fixtures_are_compared():
    assert len(DPKT_FILES) >= 17


@pytest.mark.parametrize("path", DPKT_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fields_agree_with_dpkt(path: Path):
    oracle = dpkt_view(path)
    df, _ = read_packets(path)
    ours = {r["frame"]: r for r in df.iter_rows(named=True)}
    # Every record dpkt decodes as TCP is a TCP row here too.
    assert set(oracle) <= set(ours)
    pcapng = path.suffix == ".pcapng"
    for frame, want in oracle.items():
        got = ours[frame]
        superframe = got["superframe"]
        for key, value in want.items():
            if key == "sack":
                continue
            if key == "ts_ns" and pcapng:
                assert abs(got[key] - value) <= 1000, (frame, key)
                continue
            if superframe and key in ("ip_len", "payload_len"):
                continue  # dpkt reads the TSO length 0 literally
            assert got[key] == value, (path.name, frame, key, got[key], value)
        # SACK edges are relative in the table (only on ACK segments); their distance from the
        # ack is not.
        assert len(got["sack_left"]) == (len(want["sack"]) if got["flag_ack"] else 0)
        for (left, right), rl, rr in zip(want["sack"], got["sack_left"], got["sack_right"]):
            assert (rl - got["ack_rel"]) % 2**32 == (left - got["ack_raw"]) % 2**32
            assert rr - rl == (right - left) % 2**32


def test_superframes_are_flagged_with_wire_lengths():
    """The TSO captures dpkt cannot size: ip_len comes from the frame length, not the header's 0."""
    for name, ip_len in [("bigtcp-ipv4.pcap", 80052), ("ipv4_tcp_http_xml_tso.pcap", 2016)]:
        df, summary = read_packets(FIXTURES / "tcpdump" / name)
        assert df["superframe"].to_list() == [True]
        assert df["ip_len"].to_list() == [ip_len]
        assert df["payload_len"].to_list() == [ip_len - 20 - df["tcp_hdr_len"][0]]
        assert summary.anomalies == {"superframe": 1}


def dpkt_protocol_counts(path: Path) -> dict[str, int]:
    """Records dpkt decodes as ARP / UDP / ICMP / ICMPv6 (the fixtures' non-TCP traffic)."""
    data = path.read_bytes()
    records = _pcapng_records(path) if data[:4] == b"\x0a\x0d\x0d\x0a" else _pcap_records(data)
    kinds = {dpkt.arp.ARP: "arp", dpkt.udp.UDP: "udp", dpkt.icmp.ICMP: "icmp", dpkt.icmp6.ICMP6: "icmpv6"}
    counts: dict[str, int] = {}
    for _, _, linktype, buf in records:
        try:
            layer = LINK[linktype](buf).data
        except (dpkt.UnpackError, KeyError, struct.error):
            continue
        inner = layer.data if isinstance(layer, (dpkt.ip.IP, dpkt.ip6.IP6)) else layer
        name = kinds.get(type(inner))
        if name:
            counts[name] = counts.get(name, 0) + 1
    return counts


NON_TCP_FILES = [p for p in ALL if _readable(p) and dpkt_protocol_counts(p)]


@pytest.mark.parametrize("path", NON_TCP_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_not_tcp_reasons_agree_with_dpkt(path: Path):
    """QinQ, SLL2, multi-interface pcapng and other non-TCP traffic: counted by the same protocol."""
    _, summary = read_packets(path, columns=["frame"])
    want = dpkt_protocol_counts(path)
    assert {k: summary.not_tcp.get(k, 0) for k in want} == want
    assert summary.balanced


def test_non_tcp_fixtures_are_covered():
    names = {p.name for p in NON_TCP_FILES}
    assert {"802.1ad_QinQ.pcap", "linux_dlt_sll2.pcap", "pcapng-multi-interface.pcapng", "q-in-q.pcap"} <= names
