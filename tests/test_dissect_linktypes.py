"""The dissector end to end through the public API, on captures built here byte by byte: the same
TCP segment behind every supported link type, non-TCP and undecodable records counted by reason,
IPv4 options, the IPv6 extension chain, super-frames, and the accounting invariant on random bytes."""

from __future__ import annotations

import struct

import dpkt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stallscope.packets.decoder import read_packets

SRC4, DST4 = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
SRC6, DST6 = bytes.fromhex("20010db8" + "00" * 11 + "01"), bytes.fromhex("20010db8" + "00" * 11 + "02")
MAC = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02"


def pcap(linktype: int, frames: list[bytes | tuple[bytes, int]]) -> bytes:
    """A little-endian microsecond pcap; a frame given as (bytes, origlen) was cut by the snaplen."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype)]
    for i, f in enumerate(frames):
        data, orig = (f, len(f)) if isinstance(f, bytes) else f
        out.append(struct.pack("<IIII", 1_700_000_000 + i, 250_000, len(data), orig) + data)
    return b"".join(out)


def tcp(opts: bytes = b"", payload: bytes = b"", flags: int = dpkt.tcp.TH_ACK) -> dpkt.tcp.TCP:
    seg = dpkt.tcp.TCP(sport=40000, dport=80, seq=1000, ack=2000, flags=flags, win=512, opts=opts, data=payload)
    seg.off = 5 + len(opts) // 4
    return seg


def ipv4(seg=None, p: int = 6, **kw) -> bytes:
    seg = tcp(payload=b"hello") if seg is None else seg
    return bytes(dpkt.ip.IP(src=SRC4, dst=DST4, p=p, ttl=61, id=77, data=seg, **kw))


def ipv6(seg=None, nxt: int = 6, ext: bytes = b"") -> bytes:
    body = ext + bytes(tcp(payload=b"hello") if seg is None else seg)
    return struct.pack(">IHBB", 0x60000000, len(body), nxt, 50) + SRC6 + DST6 + body


def eth(payload: bytes, etype: int | None = None) -> bytes:
    """Ethernet II; the ethertype follows the IP version unless given."""
    if etype is None:
        etype = 0x86DD if payload[:1] and payload[0] >> 4 == 6 else 0x0800
    return MAC + struct.pack(">H", etype) + payload


def rows(linktype: int, frames):
    df, summary = read_packets(pcap(linktype, frames))
    assert summary.balanced
    return df, summary


V4, V6 = ipv4(), ipv6()
LINKS = {
    "ethernet": (1, eth(V4)),
    "802.1q": (1, MAC + b"\x81\x00\x00\x64\x08\x00" + V4),
    "802.1ad q-in-q": (1, MAC + b"\x88\xa8\x00\x0a\x81\x00\x00\x64\x86\xdd" + V6),
    "mpls": (1, MAC + b"\x88\x47" + b"\x00\x01\x00\x40" + b"\x00\x02\x01\x40" + V4),
    "pppoe": (1, MAC + b"\x88\x64" + b"\x11\x00\x00\x07" + struct.pack(">H", len(V6) + 2) + b"\x00\x57" + V6),
    "sll": (113, struct.pack(">HHH8sH", 0, 1, 6, b"\x02" * 6 + b"\0\0", 0x0800) + V4),
    "sll2": (276, struct.pack(">HHIHBB8s", 0x86DD, 0, 3, 1, 0, 6, b"\x02" * 6 + b"\0\0") + V6),
    "null little-endian": (0, struct.pack("<I", 2) + V4),
    "null big-endian": (0, struct.pack(">I", 30) + V6),
    "loop": (108, struct.pack(">I", 2) + V4),
    "raw 101": (101, V6),
    "raw 12": (12, V4),
    "raw 14": (14, V6),
    "ipv4 228": (228, V4),
    "ipv6 229": (229, V6),
    "atm rfc1483": (11, b"\xaa\xaa\x03\x00\x00\x00\x08\x00" + V4),
    "sunatm llc": (123, b"\x02\x00\x00\x20" + b"\xaa\xaa\x03\x00\x00\x00\x86\xdd" + V6),
    "sunatm lane": (123, b"\x01\x00\x00\x21" + b"\x00\x01" + eth(V4)),
    # 802.11 QoS data to the distribution system: MAC header, QoS control, LLC/SNAP; with radiotap,
    # a header whose Flags field (after TSFT) says the frame ends in its 4-byte FCS.
    "802.11": (105, b"\x88\x01" + bytes(22) + b"\x00\x00" + b"\xaa\xaa\x03\x00\x00\x00\x08\x00" + V4),
    "802.11 radiotap": (127, struct.pack("<BBHI", 0, 0, 24, 0b11) + bytes(4) + bytes(8) + b"\x10" + bytes(3)
                        + b"\x08\x01" + bytes(22) + b"\xaa\xaa\x03\x00\x00\x00\x86\xdd" + V6 + b"FCS!"),
    # NFLOG: header, a packet-header TLV (8 bytes), a 5-byte prefix TLV padded to 8, then the payload
    # TLV; lengths and types in the writer's byte order (little-endian here).
    "nflog": (239, b"\x02\x00\x00\x05" + struct.pack("<HH", 8, 1) + b"\x08\x00\x03\x00"
              + struct.pack("<HH", 9, 10) + b"log:\0\0\0\0" + struct.pack("<HH", 4 + len(V4), 9) + V4),
}


@pytest.mark.parametrize("name", LINKS)
def test_same_segment_behind_every_link_type(name: str):
    linktype, frame = LINKS[name]
    df, _ = rows(linktype, [frame])
    r = df.row(0, named=True)
    v6 = r["ip_version"] == 6
    assert (r["src_port"], r["dst_port"], r["seq_raw"], r["ack_raw"], r["win_raw"]) == (40000, 80, 1000, 2000, 512)
    assert (r["payload_len"], r["payload_captured"], r["linktype"]) == (5, 5, linktype)
    assert r["src_addr"] == ("2001:db8::1" if v6 else "10.0.0.1")
    assert r["ttl"] == (50 if v6 else 61) and r["ip_id"] == (None if v6 else 77)
    assert r["ts_ns"] == 1_700_000_000 * 10**9 + 250_000_000


def test_not_tcp_by_reason():
    udp = ipv4(seg=dpkt.udp.UDP(sport=1, dport=2, data=b"x"), p=17)
    icmp = ipv4(seg=dpkt.icmp.ICMP(type=8, data=b"ping"), p=1)
    frames = [
        eth(b"\x00" * 28, 0x0806),  # ARP
        eth(udp),
        eth(icmp),
        eth(ipv6(seg=b"\x80\x00\x00\x00", nxt=58)),  # ICMPv6
        eth(ipv6(seg=b"", nxt=59)),  # no next header
        eth(b"\x00" * 20, 0x88CC),  # LLDP
        MAC + struct.pack(">H", 38) + b"\x42\x42\x03" + b"\x00" * 35,  # 802.3 + STP LLC
        eth(V4),
    ]
    df, s = rows(1, frames)
    assert df["frame"].to_list() == [8]
    assert s.not_tcp == {"arp": 1, "udp": 1, "icmp": 1, "icmpv6": 1, "ipv6_no_next_header": 1, "other_ethertype": 1, "llc": 1}
    _, s = rows(0, [struct.pack("<I", 7) + V4])
    assert s.not_tcp == {"other_address_family": 1}


def test_not_decoded_by_reason():
    v4 = bytearray(V4)
    bad_ihl = bytes([0x44]) + bytes(v4[1:])
    frag_first = bytearray(v4)
    frag_first[6] = 0x20  # MF
    frag_later = bytearray(v4)
    frag_later[7] = 0x10  # offset 16 * 8
    v6_frag = ipv6(nxt=44, ext=bytes([6, 0, 0x00, 0x01, 0, 0, 0, 1]))  # M set
    bad_off = bytearray(V4)
    bad_off[20 + 12] = 0x30  # data offset 3 words
    frames = [
        b"\x02\x00\x00",  # shorter than an Ethernet header
        eth(bytes(v4[:15])),
        eth(bad_ihl),
        eth(bytes(frag_first)),
        eth(bytes(frag_later)),
        eth(v6_frag),
        eth(ipv6(nxt=0, ext=b"")[:40]),  # hop-by-hop announced, nothing after the fixed header
        (eth(bytes(v4[:30])), 14 + len(v4)),  # TCP header cut by the snaplen
        eth(bytes(bad_off)),
        eth(bytes([0x75]) + bytes(v4[1:]), 0x0800),  # IP version 7 behind the IPv4 ethertype
    ]
    df, s = rows(1, frames)
    assert df.height == 0
    assert s.not_decoded == {
        "truncated_link_header": 1,
        "truncated_ip_header": 1,
        "bad_ip_version": 1,
        "bad_ip_header_length": 1,
        "ip_fragment": 3,
        "truncated_ip_ext_header": 1,
        "truncated_tcp_header": 1,
        "bad_tcp_header_length": 1,
    }
    _, s = rows(163, [V4])  # 802.11 with an AVS header: not a link type this decoder reads
    assert s.not_decoded == {"unsupported_linktype": 1}
    # 802.11: an A-MSDU (QoS control bit 7) is not split; management, null and protected frames
    # are not TCP.
    qos = b"\x88\x01" + bytes(22)
    _, s = rows(105, [qos + b"\x80\x00" + b"\xaa\xaa\x03\x00\x00\x00\x08\x00" + V4, b"\x80\x00" + bytes(22),
                      b"\x48\x01" + bytes(22), b"\x88\x41" + bytes(22) + b"\x00\x00" + bytes(40)])
    assert s.not_decoded == {"wlan_amsdu": 1}
    assert s.not_tcp == {"wlan_management": 1, "wlan_no_data": 1, "wlan_protected": 1}


def test_ipv4_options_and_ipv6_extension_chain():
    with_opts = ipv4(opts=b"\x94\x04\x00\x00", hl=6)  # router alert: IHL 6
    chain = (
        bytes([60, 0, 1, 4, 0, 0, 0, 0])  # hop-by-hop -> destination options
        + bytes([43, 0, 1, 4, 0, 0, 0, 0])  # destination options -> routing
        + bytes([44, 0, 0, 0, 0, 0, 0, 0])  # routing -> fragment
        + bytes([6, 0, 0, 0, 0, 0, 0, 9])  # atomic fragment -> TCP
    )
    df, _ = rows(1, [eth(with_opts), eth(ipv6(nxt=0, ext=chain))])
    assert df["payload_len"].to_list() == [5, 5]
    assert df["ip_len"].to_list() == [24 + 25, 40 + 32 + 25]
    assert df["seq_raw"].to_list() == [1000, 1000]


def test_tcp_options_decoded_and_malformed_flagged():
    syn_opts = b"\x02\x04\x05\xb4\x04\x02\x08\x0a\x00\x00\x00\x07\x00\x00\x00\x00\x01\x03\x03\x0f"
    bad = b"\x02\x04\x05\xb4\x08\x20\x00\x00"  # timestamp claiming 32 bytes
    df, s = rows(1, [eth(ipv4(seg=tcp(opts=syn_opts, flags=dpkt.tcp.TH_SYN))), eth(ipv4(seg=tcp(opts=bad)))])
    r = df.row(0, named=True)
    assert (r["opt_mss"], r["opt_sack_perm"], r["opt_ts_val"], r["opt_ts_ecr"], r["opt_wscale"]) == (1460, True, 7, 0, 15)
    assert df["opt_mss"].to_list() == [1460, 1460] and df["opt_ts_val"].to_list() == [7, None]
    assert s.anomalies == {"bad_option": 1, "wscale_clamped": 1}


def test_superframes():
    big = ipv4(seg=tcp(payload=b"z" * 20000))
    df, s = rows(1, [eth(big), eth(V4)])
    assert df["superframe"].to_list() == [True, False]
    df, s = rows(101, [big])  # raw IP (loopback-like): 20 kB datagrams are legal
    assert df["superframe"].to_list() == [False]
    gso = bytearray(ipv6(seg=tcp(payload=b"y" * 3000)))
    gso[4:6] = b"\x00\x00"  # payload length 0 without a jumbo option: GSO/BIG TCP
    df, s = rows(1, [eth(bytes(gso))])
    assert df["superframe"].to_list() == [True] and df["payload_len"].to_list() == [3000]


def test_payload_cut_by_snaplen_is_kept_and_flagged():
    frame = eth(ipv4(seg=tcp(payload=b"p" * 1000)))
    df, s = rows(1, [(frame[:54 + 10], len(frame))])
    assert (df["payload_len"][0], df["payload_captured"][0]) == (1000, 10)
    assert s.anomalies == {"payload_truncated": 1}


@settings(max_examples=150, deadline=None)
@given(
    linktype=st.sampled_from([0, 1, 11, 12, 14, 101, 105, 108, 113, 123, 127, 228, 229, 239, 276, 163]),
    frames=st.lists(st.binary(max_size=120), max_size=12),
    seed_tcp=st.booleans(),
)
def test_accounting_balances_on_random_bytes(linktype: int, frames: list[bytes], seed_tcp: bool):
    """Every record ends in exactly one of TCP / not_tcp / not_decoded, whatever the bytes."""
    if seed_tcp:
        frames = [LINKS["ethernet"][1], *frames]  # one real TCP frame among the noise
        linktype = 1
    df, s = read_packets(pcap(linktype, frames))
    assert s.records == len(frames)
    assert s.records == s.tcp_packets + sum(s.not_tcp.values()) + sum(s.not_decoded.values())
    assert df.height == s.tcp_packets
    if seed_tcp:
        assert df["frame"][0] == 1 and df["seq_raw"][0] == 1000


def test_nflog_captures_from_zeeks_tests():
    """Zeek's NFLOG traces (tests/data/README.md): an HTTP connection logged by a netfilter rule
    (`tcpdump -i nflog:N`), every record a TCP packet; and a record whose first TLV claims a length
    past the record, which Zeek reports as `nflog_bad_tlv_len`: a link-header error here, counted."""
    from pathlib import Path

    data = Path(__file__).resolve().parent / "data"
    df, s = read_packets(data / "zeek_nflog_http.pcap")
    assert (s.records, s.tcp_packets, s.not_decoded) == (13, 13, {})
    assert set(df["linktype"].to_list()) == {239}
    assert {(r["src_port"], r["dst_port"]) for r in df.iter_rows(named=True)} == {(49762, 80), (80, 49762)}
    assert int(df["payload_len"].sum()) > 1600  # the request and the response
    _, s = read_packets(data / "zeek_nflog_bad_tlv_len.pcap")
    assert (s.records, s.tcp_packets, s.not_decoded) == (1, 0, {"truncated_link_header": 1})


def test_an_http_connection_seen_by_a_wifi_monitor(tmp_path):
    """Arkime's 802.11 capture with radiotap headers (tests/data/README.md): every record an HTTP
    packet of one connection, the same segments tshark reads (compared with tshark where it is
    installed)."""
    import shutil
    import subprocess
    from pathlib import Path

    path = Path(__file__).resolve().parent / "data" / "arkime_80211_radiotap_http.pcap"
    df, s = read_packets(path)
    assert (s.records, s.tcp_packets, s.not_tcp, s.not_decoded) == (26, 26, {}, {})
    assert set(df["linktype"].to_list()) == {127} and set(df["dst_port"].to_list()) == {80, 49417}
    if shutil.which("tshark"):
        out = subprocess.run(["tshark", "-r", str(path), "-Y", "tcp", "-T", "fields", "-e", "frame.number",
                              "-e", "tcp.srcport", "-e", "tcp.seq_raw", "-e", "tcp.len"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        theirs = [tuple(int(x) for x in line.split("\t")) for line in out.splitlines()]
        ours = list(df.select("frame", "src_port", "seq_raw", "payload_len").iter_rows())
        assert ours == theirs
