//! pcapng: sections, interfaces and packet blocks (work in progress).

use crate::container_stats::ContainerStats;
use crate::error::ReadError;
use crate::reader::RecordMeta;
use crate::source::Source;

/// Block type of the section header block; palindromic so it reads the same in both orders.
pub const SHB_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

pub struct PcapngState {}

impl PcapngState {
    pub fn start(source: &mut Source, _stats: &mut ContainerStats) -> Result<PcapngState, ReadError> {
        Err(ReadError::Corrupt { offset: source.offset(), detail: "pcapng not supported yet".into() })
    }

    pub fn next(&mut self, _src: &mut Source, _stats: &mut ContainerStats) -> Result<Option<RecordMeta>, ReadError> {
        Ok(None)
    }
}
