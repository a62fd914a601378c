//! The contract between the container readers (pcap, pcapng) and the dissector: one captured
//! packet record, borrowed from the reader's buffer (`Record`), and the fields a container parser
//! returns for it (`RecordMeta`).

/// One packet record in file order. `data` holds exactly `caplen` bytes.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// 1-based, counts every packet record (EPB, SPB, OPB, pcap record) like tshark's frame.number.
    pub frame: u64,
    /// Nanoseconds since the Unix epoch, integer end to end.
    pub ts_ns: i64,
    /// False when the sub-second field was out of range (e.g. ns fraction >= 1e9); the packet is kept.
    pub ts_valid: bool,
    /// Interface id (pcapng IDB index within its section; 0 for pcap).
    pub interface: u32,
    /// Link type (DLT/LINKTYPE number) of that interface.
    pub linktype: u32,
    pub caplen: u32,
    pub origlen: u32,
    /// The interface's snaplen; 0 means no limit.
    pub snaplen: u32,
    /// Byte offset of the record's header in the (decompressed) input.
    pub offset: u64,
    pub data: &'a [u8],
}

/// A record's fields with the data given as a range of the source buffer, so the container
/// parsers need not hold a borrow of the buffer.
#[derive(Debug, Clone, Copy)]
pub struct RecordMeta {
    pub ts_ns: i64,
    pub ts_valid: bool,
    pub interface: u32,
    pub linktype: u32,
    pub caplen: u32,
    pub origlen: u32,
    pub snaplen: u32,
    pub offset: u64,
    /// Start of the packet bytes within `Source::available()`.
    pub data_start: usize,
    /// Bytes of input the whole record/block takes; consumed on the next call.
    pub consumed: usize,
}

/// libpcap's MAXIMUM_SNAPLEN: larger captured lengths are refused before allocating.
pub const MAX_CAPLEN: u32 = 256 * 1024;
