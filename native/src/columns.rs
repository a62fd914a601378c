//! The packet table's columns: their one Rust declaration (kept equal to capture/schema.py by a
//! test) and Arrow-layout builders. Buffers are little-endian Arrow buffers (values, validity
//! bitmap, i32 offsets for strings and lists) that Python wraps without copying.

use std::io::Write;
use std::net::Ipv6Addr;

use crate::flows::FlowInfo;
use crate::packet::{anomaly, flags, TcpPacket};

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

/// Arrow buffers of one column. `values` holds fixed-width values (or the bit-packed values of a
/// Bool column, or a Str column's bytes); `offsets` the i32 offsets of Str/List columns;
/// `child` the List's Int64 values.
#[derive(Debug, Default)]
pub struct ColumnBuilder {
    pub kind: Option<Kind>,
    pub len: usize,
    pub null_count: usize,
    pub validity: Option<Vec<u8>>,
    pub values: Vec<u8>,
    pub offsets: Vec<u8>,
    pub child: Vec<u8>,
}

#[inline]
fn push_bit(bitmap: &mut Vec<u8>, index: usize, set: bool) {
    if index.is_multiple_of(8) {
        bitmap.push(0);
    }
    if set {
        // The byte for `index` was pushed above or by an earlier call.
        if let Some(b) = bitmap.last_mut() {
            *b |= 1 << (index % 8);
        }
    }
}

impl ColumnBuilder {
    pub fn new(kind: Kind, nullable: bool, capacity: usize) -> Self {
        let width = match kind {
            Kind::Bool => 0,
            Kind::U8 => 1,
            Kind::U16 => 2,
            Kind::U32 => 4,
            Kind::U64 | Kind::I64 => 8,
            Kind::Str => 24, // a typical IPv6 text; grows if needed
            Kind::ListI64 => 0,
        };
        let mut b = ColumnBuilder {
            kind: Some(kind),
            validity: nullable.then(|| Vec::with_capacity(capacity / 8 + 1)),
            values: Vec::with_capacity(if kind == Kind::Bool { capacity / 8 + 1 } else { capacity * width }),
            ..Default::default()
        };
        if matches!(kind, Kind::Str | Kind::ListI64) {
            b.offsets.reserve((capacity + 1) * 4);
            b.offsets.extend_from_slice(&0i32.to_le_bytes());
        }
        b
    }

    #[inline]
    fn valid(&mut self, is_valid: bool) {
        if let Some(v) = self.validity.as_mut() {
            push_bit(v, self.len, is_valid);
        }
        if !is_valid {
            self.null_count += 1;
        }
    }

    #[inline]
    fn end_offset(&mut self, end: usize) {
        self.offsets.extend_from_slice(&(end as i32).to_le_bytes());
        self.valid(true);
        self.len += 1;
    }

    fn list(&mut self, items: impl Iterator<Item = i64>) {
        for v in items {
            self.child.extend_from_slice(&v.to_le_bytes());
        }
        self.end_offset(self.child.len() / 8);
    }
}

/// Rows are buffered in chunks of this many packets (~28 KB, about L1-sized) and then written
/// column by column: tight per-column loops instead of one 45-way match per packet.
const CHUNK: usize = 128;
/// Direct-mapped cache of address texts (captures repeat a handful of addresses).
const ADDR_CACHE: usize = 256;

#[derive(Clone, Copy)]
struct AddrText {
    key: [u8; 16],
    version: u8,
    len: u8,
    text: [u8; 40],
}

/// Formats addresses into a column without allocating, reusing the text of recent addresses.
struct AddrCache {
    slots: Vec<AddrText>,
}

impl AddrCache {
    fn new() -> Self {
        AddrCache { slots: vec![AddrText { key: [0; 16], version: 0, len: 0, text: [0; 40] }; ADDR_CACHE] }
    }

    fn text(&mut self, a: &[u8; 16], version: u8) -> &[u8] {
        let h = u64::from_le_bytes([a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]])
            ^ u64::from_le_bytes([a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]]).rotate_left(29);
        let slot = &mut self.slots[(h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % ADDR_CACHE];
        if slot.len == 0 || slot.version != version || slot.key != *a {
            slot.key = *a;
            slot.version = version;
            slot.len = format_addr(a, version, &mut slot.text) as u8;
        }
        &slot.text[..usize::from(slot.len)]
    }
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

fn fixed_col<const N: usize>(b: &mut ColumnBuilder, rows: &[(TcpPacket, FlowInfo)], get: impl Fn(&TcpPacket, &FlowInfo) -> [u8; N]) {
    // Grow once, then fill in place: no capacity check per value.
    let start = b.values.len();
    b.values.resize(start + rows.len() * N, 0);
    for (dst, (p, f)) in b.values[start..].chunks_exact_mut(N).zip(rows) {
        dst.copy_from_slice(&get(p, f));
    }
    if let Some(v) = b.validity.as_mut() {
        push_bits(v, b.len, rows.iter().map(|_| true));
    }
    b.len += rows.len();
}

fn opt_col<const N: usize>(b: &mut ColumnBuilder, rows: &[(TcpPacket, FlowInfo)], get: impl Fn(&TcpPacket, &FlowInfo) -> Option<[u8; N]>) {
    let start = b.values.len();
    b.values.resize(start + rows.len() * N, 0);
    for (dst, (p, f)) in b.values[start..].chunks_exact_mut(N).zip(rows) {
        if let Some(v) = get(p, f) {
            dst.copy_from_slice(&v);
        }
    }
    let valid = rows.iter().map(|(p, f)| get(p, f).is_some());
    b.null_count += rows.len() - valid.clone().filter(|v| *v).count();
    if let Some(v) = b.validity.as_mut() {
        push_bits(v, b.len, valid);
    }
    b.len += rows.len();
}

fn bool_col(b: &mut ColumnBuilder, rows: &[(TcpPacket, FlowInfo)], get: impl Fn(&TcpPacket, &FlowInfo) -> bool) {
    if let Some(v) = b.validity.as_mut() {
        push_bits(v, b.len, rows.iter().map(|_| true));
    }
    push_bits(&mut b.values, b.len, rows.iter().map(|(p, f)| get(p, f)));
    b.len += rows.len();
}

/// Append bits to a bitmap that holds `len` bits, a whole byte at a time when aligned.
fn push_bits(bitmap: &mut Vec<u8>, len: usize, bits: impl Iterator<Item = bool>) {
    let mut i = len;
    let mut bits = bits.peekable();
    while i % 8 != 0 {
        let Some(bit) = bits.next() else { return };
        push_bit(bitmap, i, bit);
        i += 1;
    }
    while bits.peek().is_some() {
        let mut byte = 0u8;
        for k in 0..8 {
            match bits.next() {
                Some(bit) => byte |= u8::from(bit) << k,
                None => break,
            }
        }
        bitmap.push(byte);
    }
}

/// Relative SACK edges exist only on segments with ACK set (the tracker's base is the ack's).
fn sack_rel<'a>(p: &TcpPacket, f: &'a FlowInfo) -> &'a [(i64, i64)] {
    let n = if p.flags & flags::ACK != 0 { usize::from(p.options.sack_count) } else { 0 };
    &f.sack_rel[..n.min(f.sack_rel.len())]
}

/// Builders for the selected columns. Packets are appended one at a time into a fixed chunk
/// and written to the columns when it fills (or at `finish`).
pub struct PacketColumns {
    pub cols: Vec<Col>,
    builders: Vec<ColumnBuilder>,
    pending: Vec<(TcpPacket, FlowInfo)>,
    addrs: AddrCache,
}

impl PacketColumns {
    pub fn new(cols: &[Col], capacity: usize) -> Self {
        let builders = cols
            .iter()
            .map(|c| {
                let (_, _, kind, nullable) = SCHEMA[*c as usize];
                ColumnBuilder::new(kind, nullable, capacity)
            })
            .collect();
        PacketColumns {
            cols: cols.to_vec(),
            builders,
            pending: Vec::with_capacity(CHUNK.min(capacity.max(1))),
            addrs: AddrCache::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.builders.first().map_or(0, |b| b.len) + self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn append(&mut self, p: &TcpPacket, f: &FlowInfo) {
        self.pending.push((p.clone(), *f));
        if self.pending.len() == CHUNK {
            self.flush();
        }
    }

    /// The finished columns, in the order asked for.
    pub fn finish(mut self) -> Vec<ColumnBuilder> {
        self.flush();
        self.builders
    }

    fn flush(&mut self) {
        let rows = &self.pending[..];
        for (c, b) in self.cols.iter().zip(self.builders.iter_mut()) {
            match c {
                Col::Frame => fixed_col(b, rows, |p, _| p.frame.to_le_bytes()),
                Col::TsNs => fixed_col(b, rows, |p, _| p.ts_ns.to_le_bytes()),
                Col::TsValid => bool_col(b, rows, |p, _| p.anomalies & anomaly::TS_INVALID == 0),
                Col::Interface => fixed_col(b, rows, |p, _| p.interface.to_le_bytes()),
                Col::Linktype => fixed_col(b, rows, |p, _| p.linktype.to_le_bytes()),
                Col::Stream => fixed_col(b, rows, |_, f| f.stream.to_le_bytes()),
                Col::Dir => fixed_col(b, rows, |_, f| [f.dir]),
                Col::IpVersion => fixed_col(b, rows, |p, _| [p.ip_version]),
                Col::SrcAddr | Col::DstAddr => {
                    let src = *c == Col::SrcAddr;
                    for (p, _) in rows {
                        let t = self.addrs.text(if src { &p.src } else { &p.dst }, p.ip_version);
                        b.values.extend_from_slice(t);
                        b.end_offset(b.values.len());
                    }
                }
                Col::SrcPort => fixed_col(b, rows, |p, _| p.src_port.to_le_bytes()),
                Col::DstPort => fixed_col(b, rows, |p, _| p.dst_port.to_le_bytes()),
                Col::SeqRaw => fixed_col(b, rows, |p, _| p.seq.to_le_bytes()),
                Col::AckRaw => fixed_col(b, rows, |p, _| p.ack.to_le_bytes()),
                Col::SeqRel => fixed_col(b, rows, |_, f| f.seq_rel.to_le_bytes()),
                Col::AckRel => fixed_col(b, rows, |_, f| f.ack_rel.to_le_bytes()),
                Col::Flags => fixed_col(b, rows, |p, _| p.flags.to_le_bytes()),
                Col::FlagFin => bool_col(b, rows, |p, _| p.flags & flags::FIN != 0),
                Col::FlagSyn => bool_col(b, rows, |p, _| p.flags & flags::SYN != 0),
                Col::FlagRst => bool_col(b, rows, |p, _| p.flags & flags::RST != 0),
                Col::FlagPsh => bool_col(b, rows, |p, _| p.flags & flags::PSH != 0),
                Col::FlagAck => bool_col(b, rows, |p, _| p.flags & flags::ACK != 0),
                Col::FlagUrg => bool_col(b, rows, |p, _| p.flags & flags::URG != 0),
                Col::FlagEce => bool_col(b, rows, |p, _| p.flags & flags::ECE != 0),
                Col::FlagCwr => bool_col(b, rows, |p, _| p.flags & flags::CWR != 0),
                Col::WinRaw => fixed_col(b, rows, |p, _| p.window.to_le_bytes()),
                Col::WinScaled => fixed_col(b, rows, |_, f| f.win_scaled.to_le_bytes()),
                Col::WscaleKnown => bool_col(b, rows, |_, f| f.wscale_known),
                Col::PayloadLen => fixed_col(b, rows, |p, _| p.payload_len.to_le_bytes()),
                Col::PayloadCaptured => fixed_col(b, rows, |p, _| p.payload_captured.to_le_bytes()),
                Col::TcpHdrLen => fixed_col(b, rows, |p, _| [p.tcp_hdr_len]),
                Col::IpLen => fixed_col(b, rows, |p, _| p.ip_len.to_le_bytes()),
                Col::IpId => opt_col(b, rows, |p, _| (p.ip_version == 4).then(|| p.ip_id.to_le_bytes())),
                Col::Ttl => fixed_col(b, rows, |p, _| [p.ttl]),
                Col::OptMss => opt_col(b, rows, |p, _| p.options.mss.map(u16::to_le_bytes)),
                Col::OptWscale => opt_col(b, rows, |p, _| p.options.wscale.map(|w| [w])),
                Col::OptSackPerm => bool_col(b, rows, |p, _| p.options.sack_permitted),
                Col::OptTsVal => opt_col(b, rows, |p, _| p.options.timestamp.map(|t| t.0.to_le_bytes())),
                Col::OptTsEcr => opt_col(b, rows, |p, _| p.options.timestamp.map(|t| t.1.to_le_bytes())),
                Col::SackLeft => {
                    for (p, f) in rows {
                        b.list(sack_rel(p, f).iter().map(|s| s.0));
                    }
                }
                Col::SackRight => {
                    for (p, f) in rows {
                        b.list(sack_rel(p, f).iter().map(|s| s.1));
                    }
                }
                Col::FrameLen => fixed_col(b, rows, |p, _| p.origlen.to_le_bytes()),
                Col::CapLen => fixed_col(b, rows, |p, _| p.caplen.to_le_bytes()),
                Col::Superframe => bool_col(b, rows, |p, _| p.anomalies & anomaly::SUPERFRAME != 0),
                Col::Anomalies => fixed_col(b, rows, |p, _| p.anomalies.to_le_bytes()),
            }
        }
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::TcpOptions;

    fn packet() -> TcpPacket {
        let mut src = [0u8; 16];
        src[10..].copy_from_slice(&[0xff, 0xff, 192, 168, 1, 2]);
        let mut opts = TcpOptions { mss: Some(1460), sack_count: 2, ..TcpOptions::default() };
        opts.sack[0] = (5, 6);
        TcpPacket { frame: 3, ip_version: 4, src, flags: flags::SYN | flags::ACK, options: opts, ..TcpPacket::default() }
    }

    #[test]
    fn addresses_formatted_and_cached() {
        let mut c = AddrCache::new();
        let mut out = [0u8; 40];
        for v4 in [[0u8, 0, 0, 0], [255, 255, 255, 255], [10, 0, 100, 9], [1, 22, 133, 4]] {
            let mut a = [0u8; 16];
            a[12..].copy_from_slice(&v4);
            let want = std::net::Ipv4Addr::from(v4).to_string();
            let n = format_addr(&a, 4, &mut out);
            assert_eq!(&out[..n], want.as_bytes());
            assert_eq!(c.text(&a, 4), want.as_bytes());
            assert_eq!(c.text(&a, 4), want.as_bytes()); // from the cache
            assert_eq!(c.text(&a, 6), Ipv6Addr::from(a).to_string().as_bytes()); // same bytes, other version
        }
        let a = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(c.text(&a, 6), b"2001:db8::ffff:ffff");
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
    fn bitmaps_unaligned_and_aligned() {
        let mut v = Vec::new();
        push_bits(&mut v, 0, [true, false, true].into_iter());
        push_bits(&mut v, 3, [true; 7].into_iter());
        push_bits(&mut v, 10, [false, true].into_iter());
        assert_eq!(v, vec![0b1111_1101, 0b0000_1011]);
        let mut w = Vec::new();
        push_bits(&mut w, 0, (0..20).map(|i| i % 3 == 0));
        assert_eq!(w, vec![0b0100_1001, 0b1001_0010, 0b0000_0100]);
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
        assert_eq!(b[1].offsets, [0i32, 11, 14].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
        assert_eq!((b[2].values.clone(), b[3].values.clone()), (vec![0b11], vec![0]));
        assert_eq!((b[4].validity.clone(), b[4].null_count), (Some(vec![0b01]), 1));
        assert_eq!(b[5].null_count, 2);
        assert_eq!(b[6].child, [100i64, 300].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
        assert_eq!(b[6].offsets, [0i32, 2, 2].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
    }
}
