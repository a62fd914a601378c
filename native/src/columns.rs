//! The packet table's columns: their one Rust declaration (kept equal to capture/schema.py by a
//! test) and Arrow-layout builders. Buffers are little-endian Arrow buffers (values, validity
//! bitmap, i32 offsets for strings and lists) that Python wraps without copying.

use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr};

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
    if index % 8 == 0 {
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
    fn fixed<const N: usize>(&mut self, bytes: [u8; N], is_valid: bool) {
        self.valid(is_valid);
        self.values.extend_from_slice(&bytes);
        self.len += 1;
    }

    #[inline]
    fn boolean(&mut self, v: bool) {
        self.valid(true);
        push_bit(&mut self.values, self.len, v);
        self.len += 1;
    }

    #[inline]
    fn end_offset(&mut self, end: usize) {
        self.offsets.extend_from_slice(&(end as i32).to_le_bytes());
        self.valid(true);
        self.len += 1;
    }

    fn address(&mut self, a: &[u8; 16], version: u8) {
        // Writing to a Vec cannot fail; formatting uses no heap.
        let _ = if version == 4 {
            write!(self.values, "{}", Ipv4Addr::new(a[12], a[13], a[14], a[15]))
        } else {
            write!(self.values, "{}", Ipv6Addr::from(*a))
        };
        self.end_offset(self.values.len());
    }

    fn list(&mut self, items: impl Iterator<Item = i64>) {
        for v in items {
            self.child.extend_from_slice(&v.to_le_bytes());
        }
        self.end_offset(self.child.len() / 8);
    }
}

/// Builders for the selected columns, appended one packet at a time.
pub struct PacketColumns {
    pub cols: Vec<Col>,
    pub builders: Vec<ColumnBuilder>,
}

impl PacketColumns {
    pub fn new(cols: &[Col], capacity: usize) -> Self {
        let builders = cols
            .iter()
            .map(|c| {
                let (_, _, kind, nullable) = SCHEMA.iter().find(|s| s.0 == *c).copied().unwrap_or((*c, "", Kind::U8, false));
                ColumnBuilder::new(kind, nullable, capacity)
            })
            .collect();
        PacketColumns { cols: cols.to_vec(), builders }
    }

    pub fn len(&self) -> usize {
        self.builders.first().map_or(0, |b| b.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn append(&mut self, p: &TcpPacket, f: &FlowInfo) {
        let o = &p.options;
        // Relative SACK edges exist only on segments with ACK set (the tracker's base is the ack's).
        let n_sack = if p.flags & flags::ACK != 0 { usize::from(o.sack_count) } else { 0 };
        for (c, b) in self.cols.iter().zip(self.builders.iter_mut()) {
            match c {
                Col::Frame => b.fixed(p.frame.to_le_bytes(), true),
                Col::TsNs => b.fixed(p.ts_ns.to_le_bytes(), true),
                Col::TsValid => b.boolean(p.anomalies & anomaly::TS_INVALID == 0),
                Col::Interface => b.fixed(p.interface.to_le_bytes(), true),
                Col::Linktype => b.fixed(p.linktype.to_le_bytes(), true),
                Col::Stream => b.fixed(f.stream.to_le_bytes(), true),
                Col::Dir => b.fixed([f.dir], true),
                Col::IpVersion => b.fixed([p.ip_version], true),
                Col::SrcAddr => b.address(&p.src, p.ip_version),
                Col::DstAddr => b.address(&p.dst, p.ip_version),
                Col::SrcPort => b.fixed(p.src_port.to_le_bytes(), true),
                Col::DstPort => b.fixed(p.dst_port.to_le_bytes(), true),
                Col::SeqRaw => b.fixed(p.seq.to_le_bytes(), true),
                Col::AckRaw => b.fixed(p.ack.to_le_bytes(), true),
                Col::SeqRel => b.fixed(f.seq_rel.to_le_bytes(), true),
                Col::AckRel => b.fixed(f.ack_rel.to_le_bytes(), true),
                Col::Flags => b.fixed(p.flags.to_le_bytes(), true),
                Col::FlagFin => b.boolean(p.flags & flags::FIN != 0),
                Col::FlagSyn => b.boolean(p.flags & flags::SYN != 0),
                Col::FlagRst => b.boolean(p.flags & flags::RST != 0),
                Col::FlagPsh => b.boolean(p.flags & flags::PSH != 0),
                Col::FlagAck => b.boolean(p.flags & flags::ACK != 0),
                Col::FlagUrg => b.boolean(p.flags & flags::URG != 0),
                Col::FlagEce => b.boolean(p.flags & flags::ECE != 0),
                Col::FlagCwr => b.boolean(p.flags & flags::CWR != 0),
                Col::WinRaw => b.fixed(p.window.to_le_bytes(), true),
                Col::WinScaled => b.fixed(f.win_scaled.to_le_bytes(), true),
                Col::WscaleKnown => b.boolean(f.wscale_known),
                Col::PayloadLen => b.fixed(p.payload_len.to_le_bytes(), true),
                Col::PayloadCaptured => b.fixed(p.payload_captured.to_le_bytes(), true),
                Col::TcpHdrLen => b.fixed([p.tcp_hdr_len], true),
                Col::IpLen => b.fixed(p.ip_len.to_le_bytes(), true),
                Col::IpId => b.fixed(p.ip_id.to_le_bytes(), p.ip_version == 4),
                Col::Ttl => b.fixed([p.ttl], true),
                Col::OptMss => b.fixed(o.mss.unwrap_or(0).to_le_bytes(), o.mss.is_some()),
                Col::OptWscale => b.fixed([o.wscale.unwrap_or(0)], o.wscale.is_some()),
                Col::OptSackPerm => b.boolean(o.sack_permitted),
                Col::OptTsVal => b.fixed(o.timestamp.map_or(0, |t| t.0).to_le_bytes(), o.timestamp.is_some()),
                Col::OptTsEcr => b.fixed(o.timestamp.map_or(0, |t| t.1).to_le_bytes(), o.timestamp.is_some()),
                Col::SackLeft => b.list(f.sack_rel[..n_sack].iter().map(|s| s.0)),
                Col::SackRight => b.list(f.sack_rel[..n_sack].iter().map(|s| s.1)),
                Col::FrameLen => b.fixed(p.origlen.to_le_bytes(), true),
                Col::CapLen => b.fixed(p.caplen.to_le_bytes(), true),
                Col::Superframe => b.boolean(p.anomalies & anomaly::SUPERFRAME != 0),
                Col::Anomalies => b.fixed(p.anomalies.to_le_bytes(), true),
            }
        }
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
        let b = &pc.builders;
        assert_eq!(pc.len(), 2);
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
