//! The packet table's columns: their one Rust declaration (kept equal to packets/schema.py by a
//! test) and Arrow-layout builders. Buffers are little-endian Arrow buffers (values, validity
//! bitmap, string views, i64 list offsets) that Python wraps without copying.

use std::io::Write;
use std::net::Ipv6Addr;

use crate::tracking::flows::FlowInfo;
use crate::wire::packet::{anomaly, flags, TcpPacket};

/// Arrow physical layout of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I64,
    /// Utf8 with i32 offsets.
    Str,
    /// List<Int64> with i32 offsets.
    ListI64,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::U8 => "u8",
            Kind::U16 => "u16",
            Kind::U32 => "u32",
            Kind::U64 => "u64",
            Kind::I64 => "i64",
            Kind::Str => "str",
            Kind::ListI64 => "list_i64",
        }
    }
}

macro_rules! columns {
    ($( $var:ident = $name:literal : $kind:ident, $nullable:literal; )*) => {
        /// One column of the packet table, in table order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Col { $( $var, )* }

        /// (name, layout, nullable) in table order.
        pub const SCHEMA: &[(Col, &str, Kind, bool)] = &[ $( (Col::$var, $name, Kind::$kind, $nullable), )* ];
    };
}

columns! {
    Frame = "frame": U64, false;
    TsNs = "ts_ns": I64, false;
    TsValid = "ts_valid": Bool, false;
    Interface = "interface": U32, false;
    Linktype = "linktype": U32, false;
    Stream = "stream": U32, false;
    Dir = "dir": U8, false;
    IpVersion = "ip_version": U8, false;
    SrcAddr = "src_addr": Str, false;
    DstAddr = "dst_addr": Str, false;
    SrcPort = "src_port": U16, false;
    DstPort = "dst_port": U16, false;
    SeqRaw = "seq_raw": U32, false;
    AckRaw = "ack_raw": U32, false;
    SeqRel = "seq_rel": I64, false;
    AckRel = "ack_rel": I64, false;
    Flags = "flags": U16, false;
    FlagFin = "flag_fin": Bool, false;
    FlagSyn = "flag_syn": Bool, false;
    FlagRst = "flag_rst": Bool, false;
    FlagPsh = "flag_psh": Bool, false;
    FlagAck = "flag_ack": Bool, false;
    FlagUrg = "flag_urg": Bool, false;
    FlagEce = "flag_ece": Bool, false;
    FlagCwr = "flag_cwr": Bool, false;
    WinRaw = "win_raw": U16, false;
    WinScaled = "win_scaled": I64, false;
    WscaleKnown = "wscale_known": Bool, false;
    PayloadLen = "payload_len": U32, false;
    PayloadCaptured = "payload_captured": U32, false;
    TcpHdrLen = "tcp_hdr_len": U8, false;
    IpLen = "ip_len": U32, false;
    IpId = "ip_id": U16, true;
    Ttl = "ttl": U8, false;
    OptMss = "opt_mss": U16, true;
    OptWscale = "opt_wscale": U8, true;
    OptSackPerm = "opt_sack_perm": Bool, false;
    OptTsVal = "opt_ts_val": U32, true;
    OptTsEcr = "opt_ts_ecr": U32, true;
    SackLeft = "sack_left": ListI64, false;
    SackRight = "sack_right": ListI64, false;
    FrameLen = "frame_len": U32, false;
    CapLen = "cap_len": U32, false;
    Superframe = "superframe": Bool, false;
    Anomalies = "anomalies": U32, false;
}

pub fn column_by_name(name: &str) -> Option<Col> {
    SCHEMA.iter().find(|c| c.1 == name).map(|c| c.0)
}

/// Arrow buffers of one column. `values` holds fixed-width values, the bit-packed values of a
/// Bool column, or a Str column's character data; `offsets` holds a Str column's 16-byte string
/// views (Arrow Utf8View, which polars adopts without converting) or a List column's i64 offsets
/// (Arrow LargeList, polars' own layout); `child` the List's Int64 values.
#[derive(Debug, Default, Clone)]
pub struct ColumnBuilder {
    pub kind: Option<Kind>,
    pub len: usize,
    pub null_count: usize,
    pub validity: Option<Vec<u8>>,
    pub values: Vec<u8>,
    pub offsets: Vec<u8>,
    pub child: Vec<u8>,
    /// Bits of the current 64-row group not yet appended to `values` (Bool) / `validity`.
    bits: u64,
    valid_bits: u64,
}

impl ColumnBuilder {
    pub fn new(kind: Kind, nullable: bool, capacity: usize) -> Self {
        let bitmap = capacity / 8 + 8;
        let (values, offsets) = match kind {
            Kind::Bool => (bitmap, 0),
            Kind::U8 => (capacity, 0),
            Kind::U16 => (capacity * 2, 0),
            Kind::U32 => (capacity * 4, 0),
            Kind::U64 | Kind::I64 => (capacity * 8, 0),
            // Texts are stored once per distinct address; the views are per row.
            Kind::Str => (256, capacity * 16),
            Kind::ListI64 => (0, (capacity + 1) * 8),
        };
        let mut b = ColumnBuilder {
            kind: Some(kind),
            validity: nullable.then(|| Vec::with_capacity(bitmap)),
            values: Vec::with_capacity(values),
            offsets: Vec::with_capacity(offsets),
            ..Default::default()
        };
        if kind == Kind::ListI64 {
            b.offsets.extend_from_slice(&0i64.to_le_bytes());
        }
        b
    }

    /// Moves the first `n` (1..=64) pending bits into the bitmaps.
    fn flush_bits(&mut self, n: usize) {
        let bytes = n.div_ceil(8);
        if self.kind == Some(Kind::Bool) {
            self.values.extend_from_slice(&self.bits.to_le_bytes()[..bytes]);
            self.bits = 0;
        }
        if let Some(v) = self.validity.as_mut() {
            v.extend_from_slice(&self.valid_bits.to_le_bytes()[..bytes]);
            self.valid_bits = 0;
        }
    }
}

/// Direct-mapped caches of address views (captures repeat a handful of addresses).
const ADDR_CACHE: usize = 256;
const FLOW_CACHE: usize = 1024;

#[derive(Clone, Copy)]
struct AddrSlot {
    key: [u8; 16],
    version: u8,
    used: bool,
    view: [u8; 16],
}

const EMPTY_SLOT: AddrSlot = AddrSlot { key: [0; 16], version: 0, used: false, view: [0; 16] };

/// Turns addresses into Utf8View entries of one column: each distinct address's text is
/// written to the column's data once, and every row that repeats it gets the same 16-byte view.
/// One cache per column and batch (a view's offset points into that batch's data). The first
/// level is keyed by flow (stream and direction fix the address, so a hit costs one compare);
/// the second by the address itself.
struct AddrCache {
    by_flow: Vec<AddrSlot>,
    by_addr: Vec<AddrSlot>,
}

impl AddrCache {
    fn new() -> Self {
        AddrCache { by_flow: vec![EMPTY_SLOT; FLOW_CACHE], by_addr: vec![EMPTY_SLOT; ADDR_CACHE] }
    }

    #[inline(always)]
    fn view(&mut self, flow: usize, a: &[u8; 16], version: u8, data: &mut Vec<u8>) -> [u8; 16] {
        let slot = &self.by_flow[flow % FLOW_CACHE];
        if slot.used && slot.key == *a && slot.version == version {
            return slot.view;
        }
        self.view_slow(flow, a, version, data)
    }

    #[inline(never)]
    fn view_slow(&mut self, flow: usize, a: &[u8; 16], version: u8, data: &mut Vec<u8>) -> [u8; 16] {
        let h = u64::from_le_bytes([a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]])
            ^ u64::from_le_bytes([a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]]).rotate_left(29);
        let slot = &mut self.by_addr[(h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % ADDR_CACHE];
        if !slot.used || slot.version != version || slot.key != *a {
            let mut text = [0u8; 40];
            let n = format_addr(a, version, &mut text);
            *slot = AddrSlot { key: *a, version, used: true, view: string_view(&text[..n], data.len()) };
            data.extend_from_slice(&text[..n]);
        }
        let slot = *slot;
        self.by_flow[flow % FLOW_CACHE] = slot;
        slot.view
    }
}

/// The Arrow Utf8View entry of `text` stored at `offset` of data buffer 0: length, then the
/// text itself when it fits in 12 bytes, else its first 4 bytes, buffer index and offset.
fn string_view(text: &[u8], offset: usize) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..4].copy_from_slice(&(text.len() as u32).to_le_bytes());
    if text.len() <= 12 {
        v[4..4 + text.len()].copy_from_slice(text);
    } else {
        v[4..8].copy_from_slice(&text[..4]);
        v[12..].copy_from_slice(&(offset as u32).to_le_bytes());
    }
    v
}

/// Writes the address text into `out` (IPv4 dotted quad from the mapped form, IPv6 RFC 5952).
fn format_addr(a: &[u8; 16], version: u8, out: &mut [u8; 40]) -> usize {
    if version == 4 {
        let mut n = 0;
        for (i, &o) in a[12..16].iter().enumerate() {
            if i > 0 {
                out[n] = b'.';
                n += 1;
            }
            if o >= 100 {
                out[n] = b'0' + o / 100;
                n += 1;
            }
            if o >= 10 {
                out[n] = b'0' + (o / 10) % 10;
                n += 1;
            }
            out[n] = b'0' + o % 10;
            n += 1;
        }
        n
    } else {
        let mut cur = std::io::Cursor::new(&mut out[..]);
        // 39 characters at most: cannot fail.
        let _ = write!(cur, "{}", Ipv6Addr::from(*a));
        cur.position() as usize
    }
}

/// Relative SACK edges exist only on segments with ACK set (the tracker's base is the ack's).
#[inline]
fn sack_rel<'a>(p: &TcpPacket, f: &'a FlowInfo) -> &'a [(i64, i64)] {
    let n = if p.flags & flags::ACK != 0 { usize::from(p.options.sack_count) } else { 0 };
    &f.sack_rel[..n.min(f.sack_rel.len())]
}

const NCOLS: usize = SCHEMA.len();

/// Builders for the selected columns, filled row by row: each packet's values are written
/// once, straight into the column buffers (sized for the batch up front), by straight-line code
/// whose per-column "is it selected" branches always go the same way. Bool values and validity
/// bits collect in a 64-bit word per column and are appended every 64 rows.
pub struct PacketColumns {
    pub cols: Vec<Col>,
    /// Indexed by `Col`; None = not selected.
    slots: [Option<ColumnBuilder>; NCOLS],
    /// Slots with bit-packed buffers (Bool values or a validity bitmap).
    bitmapped: Vec<usize>,
    rows: usize,
    src_addrs: AddrCache,
    dst_addrs: AddrCache,
}

impl PacketColumns {
    pub fn new(cols: &[Col], capacity: usize) -> Self {
        let mut slots: [Option<ColumnBuilder>; NCOLS] = std::array::from_fn(|_| None);
        let mut bitmapped = Vec::new();
        for c in cols {
            let (_, _, kind, nullable) = SCHEMA[*c as usize];
            let slot = &mut slots[*c as usize];
            if slot.is_none() {
                *slot = Some(ColumnBuilder::new(kind, nullable, capacity));
                if kind == Kind::Bool || nullable {
                    bitmapped.push(*c as usize);
                }
            }
        }
        PacketColumns { cols: cols.to_vec(), slots, bitmapped, rows: 0, src_addrs: AddrCache::new(), dst_addrs: AddrCache::new() }
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    #[inline]
    pub fn append(&mut self, p: &TcpPacket, f: &FlowInfo) {
        let shift = (self.rows % 64) as u32;
        let PacketColumns { slots: s, src_addrs, dst_addrs, .. } = self;
        // Stream and direction fix both addresses: the address caches' first-level key.
        let flow = (f.stream as usize) << 1 | usize::from(f.dir & 1);
        macro_rules! fixed {
            ($col:ident, $v:expr) => {
                if let Some(b) = &mut s[Col::$col as usize] {
                    b.values.extend_from_slice(&$v.to_le_bytes());
                }
            };
        }
        macro_rules! bit {
            ($col:ident, $v:expr) => {
                if let Some(b) = &mut s[Col::$col as usize] {
                    b.bits |= u64::from($v) << shift;
                }
            };
        }
        macro_rules! opt {
            ($col:ident, $v:expr) => {
                if let Some(b) = &mut s[Col::$col as usize] {
                    let v = $v;
                    b.values.extend_from_slice(&v.unwrap_or_default().to_le_bytes());
                    b.valid_bits |= u64::from(v.is_some()) << shift;
                    b.null_count += usize::from(v.is_none());
                }
            };
        }
        macro_rules! addr {
            ($col:ident, $cache:ident, $a:expr) => {
                if let Some(b) = &mut s[Col::$col as usize] {
                    let v = $cache.view(flow, $a, p.ip_version, &mut b.values);
                    b.offsets.extend_from_slice(&v);
                }
            };
        }
        macro_rules! sack {
            ($col:ident, $edge:tt) => {
                if let Some(b) = &mut s[Col::$col as usize] {
                    for e in sack_rel(p, f) {
                        b.child.extend_from_slice(&e.$edge.to_le_bytes());
                    }
                    b.offsets.extend_from_slice(&((b.child.len() / 8) as i64).to_le_bytes());
                }
            };
        }
        fixed!(Frame, p.frame);
        fixed!(TsNs, p.ts_ns);
        bit!(TsValid, p.anomalies & anomaly::TS_INVALID == 0);
        fixed!(Interface, p.interface);
        fixed!(Linktype, p.linktype);
        fixed!(Stream, f.stream);
        fixed!(Dir, f.dir);
        fixed!(IpVersion, p.ip_version);
        addr!(SrcAddr, src_addrs, &p.src);
        addr!(DstAddr, dst_addrs, &p.dst);
        fixed!(SrcPort, p.src_port);
        fixed!(DstPort, p.dst_port);
        fixed!(SeqRaw, p.seq);
        fixed!(AckRaw, p.ack);
        fixed!(SeqRel, f.seq_rel);
        fixed!(AckRel, f.ack_rel);
        fixed!(Flags, p.flags);
        bit!(FlagFin, p.flags & flags::FIN != 0);
        bit!(FlagSyn, p.flags & flags::SYN != 0);
        bit!(FlagRst, p.flags & flags::RST != 0);
        bit!(FlagPsh, p.flags & flags::PSH != 0);
        bit!(FlagAck, p.flags & flags::ACK != 0);
        bit!(FlagUrg, p.flags & flags::URG != 0);
        bit!(FlagEce, p.flags & flags::ECE != 0);
        bit!(FlagCwr, p.flags & flags::CWR != 0);
        fixed!(WinRaw, p.window);
        fixed!(WinScaled, f.win_scaled);
        bit!(WscaleKnown, f.wscale_known);
        fixed!(PayloadLen, p.payload_len);
        fixed!(PayloadCaptured, p.payload_captured);
        fixed!(TcpHdrLen, p.tcp_hdr_len);
        fixed!(IpLen, p.ip_len);
        opt!(IpId, (p.ip_version == 4).then_some(p.ip_id));
        fixed!(Ttl, p.ttl);
        opt!(OptMss, p.options.mss);
        opt!(OptWscale, p.options.wscale);
        bit!(OptSackPerm, p.options.sack_permitted);
        opt!(OptTsVal, p.options.timestamp.map(|t| t.0));
        opt!(OptTsEcr, p.options.timestamp.map(|t| t.1));
        sack!(SackLeft, 0);
        sack!(SackRight, 1);
        fixed!(FrameLen, p.origlen);
        fixed!(CapLen, p.caplen);
        bit!(Superframe, p.anomalies & anomaly::SUPERFRAME != 0);
        fixed!(Anomalies, p.anomalies);
        self.rows += 1;
        if self.rows.is_multiple_of(64) {
            self.flush_bits(64);
        }
    }

    fn flush_bits(&mut self, n: usize) {
        for &i in &self.bitmapped {
            if let Some(b) = &mut self.slots[i] {
                b.flush_bits(n);
            }
        }
    }

    /// The finished columns, in the order asked for.
    pub fn finish(mut self) -> Vec<ColumnBuilder> {
        let partial = self.rows % 64;
        if partial != 0 {
            self.flush_bits(partial);
        }
        let mut out: Vec<ColumnBuilder> = Vec::with_capacity(self.cols.len());
        for (i, c) in self.cols.iter().enumerate() {
            let b = match self.slots[*c as usize].take() {
                Some(mut b) => {
                    b.len = self.rows;
                    b
                }
                // Asked for twice: the same column again.
                None => self.cols[..i].iter().position(|d| d == c).map(|j| out[j].clone()).unwrap_or_default(),
            };
            out.push(b);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::packet::TcpOptions;

    fn packet() -> TcpPacket {
        let mut src = [0u8; 16];
        src[10..].copy_from_slice(&[0xff, 0xff, 192, 168, 1, 2]);
        let mut opts = TcpOptions { mss: Some(1460), sack_count: 2, ..TcpOptions::default() };
        opts.sack[0] = (5, 6);
        TcpPacket { frame: 3, ip_version: 4, src, flags: flags::SYN | flags::ACK, options: opts, ..TcpPacket::default() }
    }

    /// The text a 16-byte view stands for (inline, or at its offset in `data`).
    fn text_of(v: &[u8; 16], data: &[u8]) -> Vec<u8> {
        let n = u32::from_le_bytes(v[..4].try_into().unwrap()) as usize;
        if n <= 12 {
            assert!(v[4 + n..].iter().all(|&b| b == 0), "inline views are zero-padded");
            v[4..4 + n].to_vec()
        } else {
            let at = u32::from_le_bytes(v[12..16].try_into().unwrap()) as usize;
            assert_eq!((&v[4..8], &v[8..12]), (&data[at..at + 4], &[0u8; 4][..]), "prefix, buffer 0");
            data[at..at + n].to_vec()
        }
    }

    #[test]
    fn addresses_formatted_and_cached() {
        let mut c = AddrCache::new();
        let mut data = Vec::new();
        let mut out = [0u8; 40];
        for v4 in [[0u8, 0, 0, 0], [255, 255, 255, 255], [10, 0, 100, 9], [1, 22, 133, 4]] {
            let mut a = [0u8; 16];
            a[12..].copy_from_slice(&v4);
            let want = std::net::Ipv4Addr::from(v4).to_string();
            let n = format_addr(&a, 4, &mut out);
            assert_eq!(&out[..n], want.as_bytes());
            let before = data.len();
            let v = c.view(0, &a, 4, &mut data);
            assert_eq!(text_of(&v, &data), want.as_bytes());
            assert_eq!(c.view(0, &a, 4, &mut data), v); // from the cache: no new text
            assert_eq!(data.len(), before + want.len());
            let v6 = c.view(0, &a, 6, &mut data); // same bytes, other version
            assert_eq!(text_of(&v6, &data), Ipv6Addr::from(a).to_string().as_bytes());
        }
        let a = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        let v = c.view(0, &a, 6, &mut data);
        assert_eq!(text_of(&v, &data), b"2001:db8::ffff:ffff");
    }

    #[test]
    fn many_rows_cross_chunks() {
        let mut pc = PacketColumns::new(&[Col::Frame, Col::FlagSyn, Col::OptMss], 10);
        for i in 0..2500u64 {
            let p = TcpPacket { frame: i, flags: (i % 2) as u16 * flags::SYN, ..TcpPacket::default() };
            pc.append(&p, &FlowInfo::default());
        }
        assert_eq!(pc.len(), 2500);
        let b = pc.finish();
        assert_eq!(b[0].values.len(), 2500 * 8);
        assert_eq!(&b[0].values[2499 * 8..], &2499u64.to_le_bytes());
        assert_eq!(b[1].values[0], 0b1010_1010);
        assert_eq!((b[2].len, b[2].null_count), (2500, 2500));
    }

    #[test]
    fn bitmaps_at_every_length() {
        // Lengths around the 64-row groups and byte edges: the bitmap has ceil(len / 8) bytes and
        // bit i set exactly where row i's value is true / present.
        for len in [1usize, 7, 8, 9, 63, 64, 65, 127, 128, 200, 300] {
            let mut pc = PacketColumns::new(&[Col::FlagSyn, Col::OptMss], len);
            for i in 0..len {
                let mut p = TcpPacket { flags: if i % 3 == 0 { flags::SYN } else { 0 }, ..TcpPacket::default() };
                p.options.mss = (i % 5 == 1).then_some(i as u16);
                pc.append(&p, &FlowInfo::default());
            }
            let b = pc.finish();
            let validity = b[1].validity.as_ref().unwrap();
            assert_eq!((b[0].values.len(), validity.len()), (len.div_ceil(8), len.div_ceil(8)), "len {len}");
            for i in 0..len {
                assert_eq!(b[0].values[i / 8] >> (i % 8) & 1 == 1, i % 3 == 0, "len {len} row {i}");
                assert_eq!(validity[i / 8] >> (i % 8) & 1 == 1, i % 5 == 1, "len {len} row {i}");
            }
            assert_eq!(b[1].null_count, (0..len).filter(|i| i % 5 != 1).count());
            if len > 1 {
                assert_eq!(&b[1].values[2..4], &1u16.to_le_bytes(), "row 1 keeps its MSS");
            }
        }
    }

    #[test]
    fn names_unique_and_found() {
        for (i, (c, name, _, _)) in SCHEMA.iter().enumerate() {
            assert_eq!(*c as usize, i);
            assert_eq!(column_by_name(name), Some(*c));
        }
        assert_eq!(column_by_name("nope"), None);
    }

    #[test]
    fn layouts() {
        let cols = [Col::Frame, Col::SrcAddr, Col::FlagSyn, Col::FlagFin, Col::OptMss, Col::OptTsVal, Col::SackLeft];
        let mut pc = PacketColumns::new(&cols, 4);
        let mut f = FlowInfo::default();
        f.sack_rel[0] = (100, 200);
        f.sack_rel[1] = (300, 400);
        pc.append(&packet(), &f);
        let mut v6 = packet();
        v6.ip_version = 6;
        v6.src = [0; 16];
        v6.src[15] = 1;
        v6.options = TcpOptions::default();
        pc.append(&v6, &FlowInfo::default());
        assert_eq!(pc.len(), 2);
        let b = &pc.finish();
        assert_eq!(b[0].values, [3u64.to_le_bytes(), 3u64.to_le_bytes()].concat());
        assert_eq!(b[1].values, b"192.168.1.2::1");
        let views: Vec<[u8; 16]> = b[1].offsets.chunks_exact(16).map(|v| v.try_into().unwrap()).collect();
        let texts: Vec<Vec<u8>> = views.iter().map(|v| text_of(v, &b[1].values)).collect();
        assert_eq!(texts, vec![b"192.168.1.2".to_vec(), b"::1".to_vec()]);
        assert_eq!((b[2].values.clone(), b[3].values.clone()), (vec![0b11], vec![0]));
        assert_eq!((b[4].validity.clone(), b[4].null_count), (Some(vec![0b01]), 1));
        assert_eq!(b[5].null_count, 2);
        assert_eq!(b[6].child, [100i64, 300].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
        assert_eq!(b[6].offsets, [0i64, 2, 2].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
    }

    #[test]
    fn long_addresses_share_their_text_and_columns_may_repeat() {
        let mut pc = PacketColumns::new(&[Col::DstAddr, Col::Frame, Col::DstAddr], 3);
        let mut p = packet();
        p.dst[12..].copy_from_slice(&[192, 168, 100, 200]);
        for _ in 0..3 {
            pc.append(&p, &FlowInfo::default());
        }
        let b = pc.finish();
        assert_eq!(b[0].values, b"192.168.100.200", "one copy of the text for three rows");
        let views: Vec<[u8; 16]> = b[0].offsets.chunks_exact(16).map(|v| v.try_into().unwrap()).collect();
        assert_eq!(views.len(), 3);
        assert!(views.iter().all(|v| text_of(v, &b[0].values) == b"192.168.100.200"));
        assert_eq!((b[2].len, &b[2].values, &b[2].offsets), (3, &b[0].values, &b[0].offsets));
    }
}
