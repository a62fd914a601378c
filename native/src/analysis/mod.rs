//! Per-packet passes of the analyzer (analyzers/sender_state.py, analyzers/vantage.py call them):
//! one linear walk over a connection-sorted packet table where a vectorised Polars pass needed a
//! dozen window functions over the whole table. Column meanings are documented once, in
//! `analyzers/sender_state.py` (`STATE_COLUMNS`).

pub mod sender_state;
pub mod sender_view;

/// The packet-table columns the passes read, rows sorted by (stream, ts_ns, frame).
pub struct PacketView<'a> {
    pub stream: &'a [u32],
    pub dir: &'a [u8],
    pub ts_ns: &'a [i64],
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

    /// Row ranges of one stream each (rows are sorted by stream).
    pub fn streams(&self) -> Vec<std::ops::Range<usize>> {
        let mut out = Vec::new();
        let mut start = 0;
        for i in 1..=self.len() {
            if i == self.len() || self.stream[i] != self.stream[start] {
                out.push(start..i);
                start = i;
            }
        }
        out
    }
}
