//! What the container layer saw besides the packets themselves: non-packet blocks, interfaces,
//! anomalies kept, the capture's own drop counters, and where a truncated tail starts.

use std::collections::BTreeMap;

/// One capture interface (pcap: the single one from the file header; pcapng: one per IDB, in
/// every section, in file order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceInfo {
    /// 0 for pcap; the 0-based pcapng section the IDB belongs to.
    pub section: u32,
    /// Interface id within its section (what packet blocks refer to).
    pub id: u32,
    /// LINKTYPE number (pcap: low 16 bits of the link-type field).
    pub linktype: u32,
    /// 0 = no limit.
    pub snaplen: u32,
    /// Raw if_tsresol byte: bit 7 clear = 10^-n s, set = 2^-n s (pcap: 6 or 9).
    pub tsresol: u8,
    /// if_tsoffset in seconds (0 when absent).
    pub tsoffset: i64,
    /// Frame check sequence length in bytes when the file says (pcap FCS bits, if_fcslen).
    pub fcs_len: Option<u8>,
    /// if_name when given.
    pub name: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct ContainerStats {
    /// Bytes pulled from the (decompressed) input.
    pub bytes_read: u64,
    /// Packet records handed out (EPB, SPB, OPB or pcap records).
    pub records: u64,
    /// Non-packet pcapng blocks by type: "SHB", "IDB", "ISB", "NRB", "DSB", "CB", ...,
    /// "unknown:0x0000000B".
    pub blocks_by_type: BTreeMap<String, u64>,
    /// pcapng sections seen (0 for pcap).
    pub sections: u32,
    pub interfaces: Vec<InterfaceInfo>,
    pub caplen_gt_len: u64,
    pub caplen_gt_snaplen: u64,
    /// Records whose timestamp was out of range (kept, `ts_valid = false`).
    pub ts_invalid: u64,
    /// pcapng ISB isb_ifdrop / isb_osdrop: the last value per interface, summed.
    pub if_drop: u64,
    pub os_drop: u64,
    /// Sum of EPB epb_dropcount options and OPB drops counts.
    pub epb_dropcount: u64,
    /// Offset where an incomplete record or block starts at the end of input.
    pub trailing_truncation: Option<u64>,
}

impl ContainerStats {
    /// Counts one non-packet block; allocates the key only the first time a type is seen.
    pub fn count_block(&mut self, name: &str) {
        match self.blocks_by_type.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                self.blocks_by_type.insert(name.to_owned(), 1);
            }
        }
    }
}
