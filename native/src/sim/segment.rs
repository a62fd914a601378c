//! One TCP/IP segment as the simulator carries it. Hosts are numbered (0 = sender, 1 = receiver);
//! why a segment went out (delayed-ACK timer, retransmission, window update, persist probe, abort)
//! is a bit set of tags, named in ascending bit order.

use crate::wire::packet::flags;

// The decoder's flag bits (wire/packet.rs), narrowed to the byte the simulator carries: one definition.
pub const FIN: u8 = flags::FIN as u8;
pub const SYN: u8 = flags::SYN as u8;
pub const RST: u8 = flags::RST as u8;
pub const PSH: u8 = flags::PSH as u8;
pub const ACK: u8 = flags::ACK as u8;
pub const URG: u8 = flags::URG as u8;

pub const IP_HEADER: u32 = 20;
pub const TCP_HEADER: u32 = 20;

pub const TAG_DELACK_TIMER: u8 = 0x01; // "delack_timer"
pub const TAG_RETRANSMIT: u8 = 0x02; // "retransmit"
pub const TAG_WINDOW_UPDATE: u8 = 0x04; // "window_update"
pub const TAG_PERSIST: u8 = 0x08; // "persist_probe"
pub const TAG_ABORT: u8 = 0x10; // "abort"

/// The tags' names by bit, in ascending bit order.
pub const TAG_NAMES: [(u8, &str); 5] = [
    (TAG_DELACK_TIMER, "delack_timer"),
    (TAG_RETRANSMIT, "retransmit"),
    (TAG_WINDOW_UPDATE, "window_update"),
    (TAG_PERSIST, "persist_probe"),
    (TAG_ABORT, "abort"),
];

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Segment {
    pub src: super::net::HostIndex,
    pub seq: i64,
    pub ack: i64,
    pub flags: u8,
    pub window: u32,
    pub payload_len: u32,
    pub mss: Option<u32>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    pub timestamp: Option<(u32, u32)>,
    pub sack: Vec<(i64, i64)>,
    pub ip_id: u16,
    pub uid: u64,
    pub tags: u8,
}

impl Segment {
    pub fn options_len(&self) -> u32 {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.wscale.is_some() {
            n += 3;
        }
        if self.sack_permitted {
            n += 2;
        }
        if self.timestamp.is_some() {
            n += 10;
        }
        if !self.sack.is_empty() {
            n += 2 + 8 * self.sack.len() as u32;
            if self.timestamp.is_some() {
                n += 4; // NOP NOP TS, NOP NOP SACK: each option aligned on its own
            }
        }
        (n + 3) & !3 // padded to 32-bit words
    }

    pub fn ip_len(&self) -> u32 {
        IP_HEADER + TCP_HEADER + self.options_len() + self.payload_len
    }

    /// Sequence space the segment occupies (SYN and FIN count one each).
    pub fn seq_space(&self) -> i64 {
        i64::from(self.payload_len) + i64::from(self.flags & SYN != 0) + i64::from(self.flags & FIN != 0)
    }

    pub fn has_tag(&self, tag: u8) -> bool {
        self.tags & tag != 0
    }

    /// The names of the segment's tags in ascending bit order: one fixed order, so the tags a
    /// trace shows are the same on every run.
    pub fn tag_names(&self) -> Vec<&'static str> {
        TAG_NAMES.iter().filter(|(b, _)| self.tags & b != 0).map(|&(_, n)| n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_len_pads_options_to_words() {
        let syn = Segment { flags: SYN, mss: Some(1460), wscale: Some(2), ..Default::default() };
        assert_eq!(syn.ip_len(), 40 + 8); // 4 + 3 -> 8
        let data = Segment { flags: ACK, payload_len: 1000, ..Default::default() };
        assert_eq!(data.ip_len(), 1040);
    }

    #[test]
    fn seq_space_counts_syn_and_fin() {
        let s = Segment { flags: SYN | FIN, payload_len: 10, ..Default::default() };
        assert_eq!(s.seq_space(), 12);
    }

    #[test]
    fn tag_names_follow_bit_order() {
        let s = Segment { tags: TAG_PERSIST | TAG_DELACK_TIMER | TAG_RETRANSMIT, ..Default::default() };
        assert_eq!(s.tag_names(), vec!["delack_timer", "retransmit", "persist_probe"]);
    }
}
