//! The contract between the wire dissector (link -> IP -> TCP) and the connection tracker:
//! one decoded TCP segment, owned, with no per-connection state yet.

/// Bits of `TcpPacket::anomalies`: things kept but flagged, never silently fixed.
pub mod anomaly {
    /// Sub-second timestamp field out of range (kept as read).
    pub const TS_INVALID: u32 = 1 << 0;
    /// caplen > origlen in the record header.
    pub const CAPLEN_GT_LEN: u32 = 1 << 1;
    /// caplen > the interface snaplen.
    pub const CAPLEN_GT_SNAPLEN: u32 = 1 << 2;
    /// IP datagram larger than any plausible MTU for its link (TSO/GSO/GRO/BIG TCP super-frame),
    /// or an IPv4 total length of 0 with TSO.
    pub const SUPERFRAME: u32 = 1 << 3;
    /// The TCP payload was cut by the snaplen (normal for header-only captures).
    pub const PAYLOAD_TRUNCATED: u32 = 1 << 4;
    /// A TCP option was malformed (length runs past the header, bad kind length); options
    /// decoded before it are kept.
    pub const BAD_OPTION: u32 = 1 << 5;
    /// Window scale option above 14 (RFC 7323 says treat as 14).
    pub const WSCALE_CLAMPED: u32 = 1 << 6;
    /// IP header length/total length inconsistent with what was captured (kept, lengths from
    /// the header where possible).
    pub const IP_LENGTH_MISMATCH: u32 = 1 << 7;
    /// The TCP options were cut by the snaplen (the fixed 20-byte header is whole); options
    /// captured before the cut are kept.
    pub const OPTIONS_TRUNCATED: u32 = 1 << 8;
}

pub const MAX_SACK_BLOCKS: usize = 4;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    /// As sent on the wire (may exceed 14; see `anomaly::WSCALE_CLAMPED`).
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    /// (TSval, TSecr)
    pub timestamp: Option<(u32, u32)>,
    /// Raw (left, right) edges, first `sack_count` valid.
    pub sack: [(u32, u32); MAX_SACK_BLOCKS],
    pub sack_count: u8,
}

/// TCP flag bits as in the header's 12-bit flags field (FIN = 0x001 ... AE/NS = 0x100).
pub mod flags {
    pub const FIN: u16 = 0x001;
    pub const SYN: u16 = 0x002;
    pub const RST: u16 = 0x004;
    pub const PSH: u16 = 0x008;
    pub const ACK: u16 = 0x010;
    pub const URG: u16 = 0x020;
    pub const ECE: u16 = 0x040;
    pub const CWR: u16 = 0x080;
    pub const AE: u16 = 0x100;
}

#[derive(Debug, Clone, Default)]
pub struct TcpPacket {
    // From the record.
    pub frame: u64,
    pub ts_ns: i64,
    pub interface: u32,
    pub linktype: u32,
    pub caplen: u32,
    pub origlen: u32,
    // IP layer. Addresses are 16 bytes; IPv4 is stored IPv4-mapped (::ffff:a.b.c.d).
    pub ip_version: u8,
    pub src: [u8; 16],
    pub dst: [u8; 16],
    /// IPv4 identification (0 for IPv6).
    pub ip_id: u16,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// Length of the IP datagram from its header (IPv6: 40 + payload length).
    pub ip_len: u32,
    // TCP layer.
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u16,
    /// Raw 16-bit window field (unscaled).
    pub window: u16,
    /// TCP header length in bytes (data offset * 4).
    pub tcp_hdr_len: u8,
    /// Payload length from the IP header's lengths, not from what was captured.
    pub payload_len: u32,
    /// Payload bytes actually present in the capture.
    pub payload_captured: u32,
    pub options: TcpOptions,
    pub anomalies: u32,
}
