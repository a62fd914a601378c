"""The packet table: one row per decoded TCP segment. This is the single declaration of its columns
(name, Polars dtype, nullable, description), in the spirit of dpkt's `(name, format, default)`
header tuples; the Rust builders (native/src/tables/columns.rs) are tested to match it exactly and
docs/packet-schema.md is rendered from it (`python -m stallscope.capture.schema`).

Conventions: times are integer nanoseconds since the Unix epoch; addresses are text (IPv4 dotted,
IPv6 RFC 5952); `*_raw` are the 32-bit wire values, `*_rel` relative to the connection's first
sequence number and unwrapped into 64 bits; `dir` 0 = sent by the connection's initiator.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class Column:
    name: str
    dtype: pl.DataType
    nullable: bool
    description: str


def _c(name: str, dtype: pl.DataType, description: str, nullable: bool = False) -> Column:
    return Column(name, dtype, nullable, description)


_FLAG_BITS = [("fin", 0x001), ("syn", 0x002), ("rst", 0x004), ("psh", 0x008),
              ("ack", 0x010), ("urg", 0x020), ("ece", 0x040), ("cwr", 0x080)]

# Bits of the `anomalies` column (native/src/wire/packet.rs `anomaly`): kept but flagged, never fixed.
ANOMALY_BITS: dict[str, int] = {
    "ts_invalid": 1 << 0,  # sub-second timestamp field out of range (kept as read)
    "caplen_gt_len": 1 << 1,  # record's captured length above its original length
    "caplen_gt_snaplen": 1 << 2,  # captured length above the interface snaplen
    "superframe": 1 << 3,  # TSO/GSO/GRO/BIG TCP datagram larger than the link carries
    "payload_truncated": 1 << 4,  # payload cut by the snaplen (header-only captures)
    "bad_option": 1 << 5,  # malformed TCP option; options before it kept
    "wscale_clamped": 1 << 6,  # window scale above 14 (used as 14, RFC 7323)
    "ip_length_mismatch": 1 << 7,  # IP length claims more than the frame had on the wire
    "options_truncated": 1 << 8,  # TCP options cut by the snaplen; those before the cut kept
}

# Why a record is not a row (native/src/wire/outcome.rs NotTcp / NotDecoded, same names and order).
NOT_TCP_REASONS: dict[str, str] = {
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
}
NOT_DECODED_REASONS: dict[str, str] = {
    "unsupported_linktype": "a link type this decoder does not read",
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
}

PACKET_COLUMNS: tuple[Column, ...] = (
    _c("frame", pl.UInt64(), "1-based record number in the file (tshark's frame.number)"),
    _c("ts_ns", pl.Int64(), "capture timestamp, ns since the Unix epoch"),
    _c("ts_valid", pl.Boolean(), "false when the file's sub-second field was out of range"),
    _c("interface", pl.UInt32(), "pcapng interface id within its section (0 for pcap)"),
    _c("linktype", pl.UInt32(), "LINKTYPE number of the record's interface"),
    _c("stream", pl.UInt32(), "0-based connection index, like tshark's tcp.stream"),
    _c("dir", pl.UInt8(), "0 = sent by the connection's initiator, 1 = by the responder"),
    _c("ip_version", pl.UInt8(), "4 or 6"),
    _c("src_addr", pl.String(), "source address as text"),
    _c("dst_addr", pl.String(), "destination address as text"),
    _c("src_port", pl.UInt16(), "TCP source port"),
    _c("dst_port", pl.UInt16(), "TCP destination port"),
    _c("seq_raw", pl.UInt32(), "sequence number on the wire"),
    _c("ack_raw", pl.UInt32(), "acknowledgment number on the wire (meaningful when flag_ack)"),
    _c("seq_rel", pl.Int64(), "sequence number relative to this direction's ISN, unwrapped"),
    _c("ack_rel", pl.Int64(), "ack number relative to the other direction's ISN, unwrapped"),
    _c("flags", pl.UInt16(), "the 12 flag bits: FIN 0x001 ... CWR 0x080, AE 0x100, reserved 0xE00"),
    *(_c(f"flag_{n}", pl.Boolean(), f"flags & 0x{bit:03x} ({n.upper()})") for n, bit in _FLAG_BITS),
    _c("win_raw", pl.UInt16(), "window field as sent (unscaled)"),
    _c("win_scaled", pl.Int64(), "window in bytes: win_raw << shift when wscale_known, else win_raw"),
    _c("wscale_known", pl.Boolean(), "both SYNs were seen, so win_scaled is exact"),
    _c("payload_len", pl.UInt32(), "TCP payload bytes per the IP header (not what was captured)"),
    _c("payload_captured", pl.UInt32(), "TCP payload bytes present in the capture"),
    _c("tcp_hdr_len", pl.UInt8(), "TCP header length in bytes (data offset * 4)"),
    _c("ip_len", pl.UInt32(), "IP datagram length (IPv6: 40 + payload length; TSO 0: from the wire)"),
    _c("ip_id", pl.UInt16(), "IPv4 identification; null for IPv6", nullable=True),
    _c("ttl", pl.UInt8(), "IPv4 TTL or IPv6 hop limit"),
    _c("opt_mss", pl.UInt16(), "MSS option value", nullable=True),
    _c("opt_wscale", pl.UInt8(), "window scale option as sent (may exceed 14)", nullable=True),
    _c("opt_sack_perm", pl.Boolean(), "SACK-permitted option present"),
    _c("opt_ts_val", pl.UInt32(), "timestamps option TSval", nullable=True),
    _c("opt_ts_ecr", pl.UInt32(), "timestamps option TSecr", nullable=True),
    _c("sack_left", pl.List(pl.Int64()), "SACK block left edges, relative like ack_rel (empty if none or ACK not set)"),
    _c("sack_right", pl.List(pl.Int64()), "SACK block right edges, same order as sack_left"),
    _c("frame_len", pl.UInt32(), "original frame length on the wire"),
    _c("cap_len", pl.UInt32(), "bytes captured"),
    _c("superframe", pl.Boolean(), "anomalies has the superframe bit (TSO/GRO super-frame)"),
    _c("anomalies", pl.UInt32(), "bit set, see ANOMALY_BITS / docs/packet-schema.md"),
)

COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in PACKET_COLUMNS)
BY_NAME: dict[str, Column] = {c.name: c for c in PACKET_COLUMNS}
POLARS_SCHEMA: pl.Schema = pl.Schema({c.name: c.dtype for c in PACKET_COLUMNS})

# Polars dtype -> the Arrow layout name the native side reports for it.
NATIVE_KIND: dict[pl.DataType, str] = {
    pl.Boolean(): "bool",
    pl.UInt8(): "u8",
    pl.UInt16(): "u16",
    pl.UInt32(): "u32",
    pl.UInt64(): "u64",
    pl.Int64(): "i64",
    pl.String(): "str",
    pl.List(pl.Int64()): "list_i64",
}


def native_layout() -> list[tuple[str, str, bool]]:
    """The schema as (name, native kind, nullable), the form native `packet_schema()` returns."""
    return [(c.name, NATIVE_KIND[c.dtype], c.nullable) for c in PACKET_COLUMNS]


def render_markdown() -> str:
    """docs/packet-schema.md, generated from PACKET_COLUMNS and ANOMALY_BITS."""
    lines = [
        "# The packet table",
        "",
        "One row per decoded TCP segment, produced by `stallscope decode` and",
        "`stallscope.capture.decoder.read_packets` / `iter_batches`. Generated from",
        "`capture/schema.py` (`python -m stallscope.capture.schema > docs/packet-schema.md`); do not edit.",
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
        "| bit | name |",
        "|---|---|",
    ]
    lines += [f"| 0x{bit:03x} | `{name}` |" for name, bit in ANOMALY_BITS.items()]
    lines += [
        "",
        "## Records that are not rows",
        "",
        "Every record is exactly one of: a row here, `not_tcp[reason]`, `not_decoded[reason]`",
        "(counted in the decode summary, `records == tcp_packets + sum(not_tcp) + sum(not_decoded)`).",
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
