//! pcapng: sections (each with its own byte order and interfaces), interface blocks and packet
//! blocks, streamed block by block. Checks follow libpcap's sf-pcapng.c and Wireshark's
//! pcapng.c; other block types are skipped and counted.

pub mod epb;
pub mod idb;
pub mod isb;
pub mod opb;
pub mod options;
pub mod packet_fields;
pub mod shb;
pub mod spb;

use crate::containers::byte_order::ByteOrder;
use crate::containers::stats::{ContainerStats, InterfaceInfo};
use crate::containers::error::{Part, ReadError};
use crate::containers::record::RecordMeta;
use crate::containers::source::Source;
use idb::TsScale;
use packet_fields::PacketFields;

/// Block type of the section header block; palindromic so it reads the same in both orders.
pub const SHB_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
/// Largest block accepted (as in Wireshark), refused before buffering.
pub const MAX_BLOCK: u32 = 16 * 1024 * 1024;

const BT_IDB: u32 = 0x0000_0001;
const BT_OPB: u32 = 0x0000_0002;
const BT_SPB: u32 = 0x0000_0003;
const BT_ISB: u32 = 0x0000_0005;
const BT_EPB: u32 = 0x0000_0006;

/// Names for the non-packet block types counted in `ContainerStats::blocks_by_type`.
fn block_name(btype: u32) -> Option<&'static str> {
    Some(match btype {
        0x0000_0004 => "NRB",
        0x0000_0007 => "IRIG",
        0x0000_0008 => "AFDX",
        0x0000_0009 => "SJE",
        0x0000_000a => "DSB",
        0x0000_0bad | 0x4000_0bad => "CB",
        0x8000_0001 => "DPIB",
        _ => return None,
    })
}

/// A block's total length can never be below 12 (or its type's fixed part) or unaligned.
pub fn block_len_ok(offset: u64, block_type: u32, length: u32, min: u32) -> Result<(), ReadError> {
    if length < min.max(12) || !length.is_multiple_of(4) {
        return Err(ReadError::BadBlockLength { offset, block_type, length });
    }
    Ok(())
}

/// The trailing copy of the total length must match the leading one.
#[inline]
pub fn trailer_ok(b: &[u8], order: ByteOrder, offset: u64) -> Result<(), ReadError> {
    let header = order.u32(b, 4);
    let trailer = order.u32(b, b.len() - 4);
    if header != trailer {
        return Err(ReadError::BlockLengthMismatch { offset, header, trailer });
    }
    Ok(())
}

/// One interface of the current section.
struct Iface {
    linktype: u32,
    snaplen: u32,
    scale: TsScale,
    tsoffset_ns: i128,
    /// Index into `ContainerStats::interfaces` (all sections).
    global: usize,
}

pub struct PcapngState {
    order: ByteOrder,
    ifaces: Vec<Iface>,
    /// Last ISB (if_drop, os_drop) per global interface: the counters are cumulative.
    isb_drops: Vec<(u64, u64)>,
    last_flags: Option<u32>,
}

impl PcapngState {
    /// Reads the first section header (the caller saw its block type at offset 0).
    pub fn start(src: &mut Source, stats: &mut ContainerStats) -> Result<PcapngState, ReadError> {
        let (order, len) = shb::read(src, true)?;
        let mut state = PcapngState { order, ifaces: Vec::new(), isb_drops: Vec::new(), last_flags: None };
        state.new_section(order, stats);
        src.consume(len);
        Ok(state)
    }

    /// epb_flags / pack_flags of the last packet handed out, if it had them.
    pub fn last_flags(&self) -> Option<u32> {
        self.last_flags
    }

    fn new_section(&mut self, order: ByteOrder, stats: &mut ContainerStats) {
        self.order = order;
        self.ifaces.clear();
        stats.sections += 1;
        stats.count_block("SHB");
    }

    /// The next packet block as a record; other blocks are processed on the way.
    pub fn next(&mut self, src: &mut Source, stats: &mut ContainerStats) -> Result<Option<RecordMeta>, ReadError> {
        loop {
            let offset = src.offset();
            if !src.ensure(8)? {
                let left = src.available().len();
                if left == 0 {
                    return Ok(None);
                }
                return Err(ReadError::Truncated { offset, part: Part::BlockHeader, needed: 8, available: left as u64 });
            }
            let b = src.available();
            if b[..4] == SHB_MAGIC {
                let (order, len) = shb::read(src, false)?;
                self.new_section(order, stats);
                src.consume(len);
                continue;
            }
            let order = self.order;
            let btype = order.u32(b, 0);
            let len = order.u32(b, 4);
            let min = match btype {
                BT_IDB => idb::MIN_LEN,
                BT_EPB => epb::MIN_LEN,
                BT_OPB => opb::MIN_LEN,
                BT_SPB => spb::MIN_LEN,
                BT_ISB => isb::MIN_LEN,
                _ => 12,
            };
            block_len_ok(offset, btype, len, min as u32)?;
            if len > MAX_BLOCK {
                return Err(ReadError::RecordTooLarge { offset, length: len as u64, limit: MAX_BLOCK as u64 });
            }
            if !matches!(btype, BT_IDB | BT_EPB | BT_OPB | BT_SPB | BT_ISB) {
                self.skip_block(src, offset, btype, len as u64, stats)?;
                continue;
            }
            let len = len as usize;
            src.require(len, offset, Part::BlockBody)?;
            let b = &src.available()[..len];
            trailer_ok(b, order, offset)?;
            let fields = match btype {
                BT_EPB => epb::parse(b, order, offset)?,
                BT_OPB => opb::parse(b, order, offset)?,
                BT_SPB => {
                    let snaplen = self.iface(0, offset)?.snaplen;
                    spb::parse(b, order, offset, snaplen)?
                }
                BT_IDB => {
                    let parsed = idb::parse(b, order, offset)?;
                    self.add_interface(parsed, stats);
                    stats.count_block("IDB");
                    src.consume(len);
                    continue;
                }
                _ => {
                    let parsed = isb::parse(b, order, offset)?;
                    self.apply_isb(parsed, offset, stats)?;
                    stats.count_block("ISB");
                    src.consume(len);
                    continue;
                }
            };
            return self.packet(fields, offset, len, stats).map(Some);
        }
    }

    fn iface(&self, id: u32, offset: u64) -> Result<&Iface, ReadError> {
        self.ifaces.get(id as usize).ok_or(ReadError::UnknownInterface {
            offset,
            interface: id,
            interfaces: self.ifaces.len() as u32,
        })
    }

    #[inline]
    fn packet(&mut self, f: PacketFields, offset: u64, len: usize, stats: &mut ContainerStats) -> Result<RecordMeta, ReadError> {
        self.last_flags = f.flags;
        let iface = self.iface(f.interface, offset)?;
        // The SPB has no timestamp: 0 and flagged rather than invented.
        let (ts_ns, ts_valid) = match f.ts_units {
            Some(units) => {
                let ns = iface.scale.to_ns(units) + iface.tsoffset_ns;
                match i64::try_from(ns) {
                    Ok(v) => (v, true),
                    Err(_) => (if ns < 0 { i64::MIN } else { i64::MAX }, false),
                }
            }
            None => (0, false),
        };
        if !ts_valid {
            stats.ts_invalid += 1;
        }
        if f.caplen > f.origlen {
            stats.caplen_gt_len += 1;
        }
        if iface.snaplen != 0 && f.caplen > iface.snaplen {
            stats.caplen_gt_snaplen += 1;
        }
        stats.epb_dropcount = stats.epb_dropcount.saturating_add(f.drops);
        Ok(RecordMeta {
            ts_ns,
            ts_valid,
            interface: f.interface,
            linktype: iface.linktype,
            caplen: f.caplen,
            origlen: f.origlen,
            snaplen: iface.snaplen,
            offset,
            data_start: f.data_start,
            consumed: len,
        })
    }

    fn add_interface(&mut self, d: idb::Idb, stats: &mut ContainerStats) {
        let global = stats.interfaces.len();
        stats.interfaces.push(InterfaceInfo {
            section: stats.sections.saturating_sub(1),
            id: self.ifaces.len() as u32,
            linktype: d.linktype,
            snaplen: d.snaplen,
            tsresol: d.tsresol,
            tsoffset: d.tsoffset,
            fcs_len: d.fcs_len,
            name: d.name,
        });
        self.isb_drops.push((0, 0));
        self.ifaces.push(Iface {
            linktype: d.linktype,
            snaplen: d.snaplen,
            scale: d.scale,
            tsoffset_ns: d.tsoffset as i128 * 1_000_000_000,
            global,
        });
    }

    fn apply_isb(&mut self, s: isb::Isb, offset: u64, stats: &mut ContainerStats) -> Result<(), ReadError> {
        let global = self.iface(s.interface, offset)?.global;
        let slot = &mut self.isb_drops[global];
        if let Some(v) = s.if_drop {
            slot.0 = v;
        }
        if let Some(v) = s.os_drop {
            slot.1 = v;
        }
        stats.if_drop = self.isb_drops.iter().fold(0u64, |a, d| a.saturating_add(d.0));
        stats.os_drop = self.isb_drops.iter().fold(0u64, |a, d| a.saturating_add(d.1));
        Ok(())
    }

    /// Skips a block that is only counted, streaming it rather than buffering it whole.
    fn skip_block(&mut self, src: &mut Source, offset: u64, btype: u32, len: u64, stats: &mut ContainerStats) -> Result<(), ReadError> {
        let truncated = |src: &Source| ReadError::Truncated {
            offset,
            part: Part::BlockBody,
            needed: len,
            available: src.offset() - offset + src.available().len() as u64,
        };
        if !src.skip(len - 4)? || !src.ensure(4)? {
            return Err(truncated(src));
        }
        let trailer = self.order.u32(src.available(), 0);
        if trailer as u64 != len {
            return Err(ReadError::BlockLengthMismatch { offset, header: len as u32, trailer });
        }
        src.consume(4);
        match block_name(btype) {
            Some(name) => stats.count_block(name),
            None => stats.count_block(&format!("unknown:0x{btype:08X}")),
        }
        Ok(())
    }
}
