"""The packet table: one row per decoded TCP segment. Its columns (name, layout, nullable, in table
order), the anomaly bits and the reasons a record is not a row are declared once, by the native
builders that produce them (native/src/tables/columns.rs, native/src/wire/packet.rs,
native/src/wire/outcome.rs); this module takes them from there, gives each its Polars dtype and its
meaning (tests/test_decoder_schema.py holds that every native name has one and no meaning is
stale), and renders docs/packet-schema.md (`python -m stallscope.packets.schema`).

Conventions: times are integer nanoseconds since the Unix epoch; addresses are text (IPv4 dotted,
IPv6 RFC 5952); `*_raw` are the 32-bit wire values, `*_rel` relative to the connection's first
sequence number and unwrapped into 64 bits; `dir` 0 = sent by the connection's initiator.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from stallscope import _native


@dataclass(frozen=True)
class Column:
    name: str
    dtype: pl.DataType
    nullable: bool
    description: str


_FLAG_BITS = [("fin", 0x001), ("syn", 0x002), ("rst", 0x004), ("psh", 0x008),
              ("ack", 0x010), ("urg", 0x020), ("ece", 0x040), ("cwr", 0x080)]

# What each bit of the `anomalies` column means (kept but flagged, never fixed); the bits
# themselves are native (`anomaly_names()`).
ANOMALY_MEANINGS: dict[str, str] = {
    "ts_invalid": "sub-second timestamp field out of range (kept as read)",
    "caplen_gt_len": "record's captured length above its original length",
    "caplen_gt_snaplen": "captured length above the interface snaplen",
    "superframe": "TSO/GSO/GRO/BIG TCP datagram larger than the link carries",
    "payload_truncated": "payload cut by the snaplen (header-only captures)",
    "bad_option": "malformed TCP option; options before it kept",
    "wscale_clamped": "window scale above 14 (used as 14, RFC 7323)",
    "ip_length_mismatch": "IP length claims more than the frame had on the wire",
    "options_truncated": "TCP options cut by the snaplen; those before the cut kept",
}
ANOMALY_BITS: dict[str, int] = {name: bit for bit, name in _native.anomaly_names()}

# Why a record is not a row: the meaning of each native reason (NotTcp / NotDecoded), in its order.
_NOT_TCP_MEANINGS: dict[str, str] = {
    "arp": "ARP",
    "udp": "UDP",
    "icmp": "ICMP",
    "icmpv6": "ICMPv6",
    "esp": "IPsec ESP: encrypted, the transport header cannot be read",
    "other_ip_protocol": "any other IP protocol (SCTP, GRE, IGMP, ...)",
    "ipv6_no_next_header": "IPv6 next header 59",
    "other_ethertype": "an ethertype or link protocol carrying neither IPv4 nor IPv6",
    "llc": "802.2 LLC that is not SNAP-encapsulated IP (STP, CDP, ...)",
    "atm_other": "SunATM traffic that is neither LLC nor LANE",
    "other_address_family": "BSD loopback address family other than IPv4/IPv6",
    "wlan_management": "802.11 management, control or extension frame (beacon, probe, RTS/CTS, ACK)",
    "wlan_no_data": "802.11 data frame without data (null function: power save, keep-alive)",
    "wlan_protected": "802.11 data frame encrypted (WEP, WPA): the payload cannot be read",
}
_NOT_DECODED_MEANINGS: dict[str, str] = {
    "unsupported_linktype": "a link type this decoder does not read (it reads Ethernet, PPP and PPP in HDLC framing, Cisco HDLC, Linux cooked v1 and v2, Linux netfilter log (NFLOG), 802.11 with or without radiotap, raw IP, BSD loopback, ATM RFC 1483 and SunATM, PKTAP)",
    "truncated_link_header": "the link header was cut by the snaplen",
    "too_many_vlan_tags": "more than 8 stacked VLAN tags or 16 MPLS labels",
    "truncated_ip_header": "the IP header was cut by the snaplen",
    "bad_ip_version": "IP version nibble not 4/6 where one was announced",
    "bad_ip_header_length": "IPv4 IHL below 5",
    "bad_ip_total_length": "IPv4 total length shorter than its header (and not the TSO value 0)",
    "ip_fragment": "a fragment of a fragmented datagram (not reassembled)",
    "truncated_ip_ext_header": "an IPv6 extension header (or IPv4 AH) cut by the snaplen",
    "bad_ip_ext_header": "an extension header chain longer than 16 or overrunning the datagram",
    "truncated_tcp_header": "the fixed 20-byte TCP header was cut by the snaplen",
    "bad_tcp_header_length": "TCP data offset below 5 or beyond the segment",
    "wlan_amsdu": "an 802.11 A-MSDU: several frames in one, not split",
}

_NATIVE_REASONS = _native.reason_names()
NOT_TCP_REASONS: dict[str, str] = {name: _NOT_TCP_MEANINGS.get(name, "") for name in _NATIVE_REASONS[0]}
NOT_DECODED_REASONS: dict[str, str] = {name: _NOT_DECODED_MEANINGS.get(name, "") for name in _NATIVE_REASONS[1]}

# What each column means; names, order, layout and nullability are native (`packet_schema()`).
COLUMN_MEANINGS: dict[str, str] = {
    "frame": "1-based record number in the file (tshark's frame.number)",
    "ts_ns": "capture timestamp, ns since the Unix epoch",
    "ts_valid": "false when the file's sub-second field was out of range",
    "interface": "pcapng interface id within its section (0 for pcap)",
    "linktype": "LINKTYPE number of the record's interface",
    "stream": "0-based connection index, like tshark's tcp.stream",
    "dir": "0 = sent by the connection's initiator, 1 = by the responder",
    "ip_version": "4 or 6",
    "src_addr": "source address as text",
    "dst_addr": "destination address as text",
    "src_port": "TCP source port",
    "dst_port": "TCP destination port",
    "seq_raw": "sequence number on the wire",
    "ack_raw": "acknowledgment number on the wire (meaningful when flag_ack)",
    "seq_rel": "sequence number relative to this direction's ISN, unwrapped",
    "ack_rel": "ack number relative to the other direction's ISN, unwrapped",
    "flags": "the 12 flag bits: FIN 0x001 ... CWR 0x080, AE 0x100, reserved 0xE00",
    "win_raw": "window field as sent (unscaled)",
    "win_scaled": "window in bytes: win_raw << shift when wscale_known, else win_raw",
    "wscale_known": "both SYNs were seen, so win_scaled is exact",
    "payload_len": "TCP payload bytes per the IP header (not what was captured)",
    "payload_captured": "TCP payload bytes present in the capture",
    "tcp_hdr_len": "TCP header length in bytes (data offset * 4)",
    "ip_len": "IP datagram length (IPv6: 40 + payload length; TSO 0: from the wire)",
    "ip_id": "IPv4 identification; null for IPv6",
    "ttl": "IPv4 TTL or IPv6 hop limit",
    "opt_mss": "MSS option value",
    "opt_wscale": "window scale option as sent (may exceed 14)",
    "opt_sack_perm": "SACK-permitted option present",
    "opt_ts_val": "timestamps option TSval",
    "opt_ts_ecr": "timestamps option TSecr",
    "frame_len": "original frame length on the wire",
    "cap_len": "bytes captured",
    "superframe": "anomalies has the superframe bit (TSO/GRO super-frame)",
    "anomalies": "bit set, see ANOMALY_BITS / docs/packet-schema.md",
    "sack_left": "SACK block left edges, relative like ack_rel (empty if none or ACK not set)",
    "sack_right": "SACK block right edges, same order as sack_left",
    **{f"flag_{n}": f"flags & 0x{bit:03x} ({n.upper()})" for n, bit in _FLAG_BITS},
}

# The Polars dtype of each native layout.
DTYPE_OF_KIND: dict[str, pl.DataType] = {
    "bool": pl.Boolean(),
    "u8": pl.UInt8(),
    "u16": pl.UInt16(),
    "u32": pl.UInt32(),
    "u64": pl.UInt64(),
    "i64": pl.Int64(),
    "str": pl.String(),
    "list_i64": pl.List(pl.Int64()),
}

PACKET_COLUMNS: tuple[Column, ...] = tuple(
    Column(name, DTYPE_OF_KIND[kind], nullable, COLUMN_MEANINGS.get(name, ""))
    for name, kind, nullable in _native.packet_schema()
)

COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in PACKET_COLUMNS)
BY_NAME: dict[str, Column] = {c.name: c for c in PACKET_COLUMNS}
POLARS_SCHEMA: pl.Schema = pl.Schema({c.name: c.dtype for c in PACKET_COLUMNS})

def render_markdown() -> str:
    """docs/packet-schema.md, generated from PACKET_COLUMNS and ANOMALY_BITS."""
    lines = [
        "# The packet table",
        "",
        "One row per decoded TCP segment, produced by `stallscope decode` and",
        "`stallscope.packets.decoder.read_packets` / `iter_batches`. Generated from",
        "the native declaration and `packets/schema.py` (`python -m stallscope.packets.schema >",
        "docs/packet-schema.md`); do not edit.",
        "",
        "| column | dtype | nullable | meaning |",
        "|---|---|---|---|",
    ]
    for c in PACKET_COLUMNS:
        lines.append(f"| `{c.name}` | {c.dtype} | {'yes' if c.nullable else 'no'} | {c.description} |")
    lines += [
        "",
        "## Flags",
        "",
        "Test a flag with the boolean columns (`flag_syn`, ...) or with the bit mask on `flags`,",
        "e.g. `pl.col(\"flags\") & 0x012 == 0x012` for SYN+ACK. `flags` keeps all 12 bits after the",
        "data offset, including AE (0x100) and the three reserved bits (0xE00).",
        "",
        "## Anomaly bits",
        "",
        "| bit | name | meaning |",
        "|---|---|---|",
    ]
    lines += [f"| 0x{bit:03x} | `{name}` | {ANOMALY_MEANINGS.get(name, '')} |" for name, bit in ANOMALY_BITS.items()]
    lines += [
        "",
        "## Records that are not rows",
        "",
        "Every record is exactly one of: a row here, `not_tcp[reason]`, `not_decoded[reason]`",
        "(counted in the decode summary, `records == tcp_packets + sum(not_tcp) + sum(not_decoded)`).",
        "TCP inside a tunnel is a row like any other: an unfragmented IPv4 or IPv6 (no extension",
        "headers) UDP datagram to port 4789 or 8472 (VXLAN, I flag set; 8472 is the Linux kernel's",
        "default, flannel's), 6081 (Geneve version 0: an Ethernet frame, IPv4 or IPv6) or 2152 (GTP-U,",
        "a mobile core's user plane: a GTPv1 G-PDU, past its optional fields and extension headers), or",
        "an IP datagram of protocol 4 or 41 (IPv4 or IPv6 in IP) or 47 (GRE version 0 carrying IP, an",
        "Ethernet frame, MPLS, or ERSPAN type I, II or III: a switch's mirror to a remote analyzer), is",
        "opened, and the row holds the inner packet's addresses, ports, IP id and lengths (`linktype`",
        "stays the record's; the VNI or TEID is not kept, so two tenants' connections with the same",
        "inner addresses and ports are one stream). A tunnel inside a tunnel is opened too, 4 deep at most.",
        "Other UDP stays `not_tcp[udp]`.",
        "IP fragments are `not_decoded[ip_fragment]` (not reassembled); a TCP header whose fixed",
        "20 bytes were not captured is `not_decoded[truncated_tcp_header]`; options cut by the",
        "snaplen keep the row and set `options_truncated`.",
        "",
        "| not_tcp reason | meaning |",
        "|---|---|",
    ]
    lines += [f"| `{k}` | {v} |" for k, v in NOT_TCP_REASONS.items()]
    lines += ["", "| not_decoded reason | meaning |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in NOT_DECODED_REASONS.items()]
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_markdown(), end="")
