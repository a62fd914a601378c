//! Per-packet passes of the analyzer (analyzers/sender_state.py, analyzers/vantage.py call them):
//! one linear walk per connection over the packet table (in any row order; outputs keep it) where a vectorised Polars pass needed a
//! dozen window functions over the whole table. Column meanings are documented once, in
//! `analyzers/sender_state.py` (`STATE_COLUMNS`).

/// A missing value in an i64 column (Arrow validity is built from it at the boundary): one
/// machine word per row instead of an Option's two.
pub const NULL: i64 = i64::MIN;

pub mod bursts;
pub mod duplicates;
pub mod order;
pub mod sender_state;
pub mod sender_view;

/// The packet-table columns the passes read.
pub struct PacketView<'a> {
    pub stream: &'a [u32],
    pub dir: &'a [u8],
    pub ts_ns: &'a [i64],
    /// Record number: orders packets of one instant.
    pub frame: &'a [u64],
    pub seq_rel: &'a [i64],
    pub ack_rel: &'a [i64],
    pub syn: &'a [bool],
    pub fin: &'a [bool],
    pub rst: &'a [bool],
    pub ack: &'a [bool],
    pub payload_len: &'a [u32],
    pub win_scaled: &'a [i64],
    /// Bytes above the cumulative ACK reported in SACK blocks, a DSACK block excluded.
    pub sacked: &'a [i64],
    /// The first SACK block lies below the cumulative ACK (RFC 2883 DSACK).
    pub dsack: &'a [bool],
}

impl PacketView<'_> {
    pub fn len(&self) -> usize {
        self.stream.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stream.is_empty()
    }

    /// The sequence number after this segment: SYN and FIN take one each.
    pub fn seq_end(&self, i: usize) -> i64 {
        self.seq_rel[i] + self.payload_len[i] as i64 + self.syn[i] as i64 + self.fin[i] as i64
    }

    /// Each stream's rows in time order (then by record number): `(rows, ranges)`, where stream k's
    /// rows are `rows[ranges[k]]`. The table itself may interleave streams in any order.
    pub fn stream_rows(&self) -> (Vec<usize>, Vec<std::ops::Range<usize>>) {
        let rows: Vec<usize> = match order::stream_time_order(self.stream, self.ts_ns, self.frame) {
            None => (0..self.len()).collect(),
            Some(idx) => idx.into_iter().map(|i| i as usize).collect(),
        };
        let mut ranges = Vec::new();
        let mut start = 0;
        for k in 1..=rows.len() {
            if k == rows.len() || self.stream[rows[k]] != self.stream[rows[start]] {
                ranges.push(start..k);
                start = k;
            }
        }
        (rows, ranges)
    }
}
