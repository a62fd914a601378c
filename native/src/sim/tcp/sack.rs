//! Selective acknowledgment: the receiver's blocks (RFC 2018), the sender's RFC 6675 scoreboard
//! with IsLost, SetPipe and NextSeg, and lost-retransmission detection. Only connections whose two
//! ends offered SACK-permitted use it; ranges are half-open [start, end).

/// Blocks that fit in 40 option bytes: four alone, three beside the timestamp option.
pub const MAX_BLOCKS: usize = 4;
pub const MAX_BLOCKS_WITH_TIMESTAMP: usize = 3;
pub const DUP_THRESH: i64 = 3;

/// receiver_blocks: contiguous out-of-order ranges, the one holding the latest arrival first,
/// then by recency of growth, at most `max_blocks`.
pub fn receiver_blocks(ooo: &[(i64, i64)], arrivals: &[(i64, i64)], max_blocks: usize) -> Vec<(i64, i64)> {
    let mut blocks: Vec<(i64, i64)> = Vec::new();
    for &(s, e) in ooo {
        match blocks.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => blocks.push((s, e)),
        }
    }
    if blocks.is_empty() {
        return blocks;
    }
    let mut recency: Vec<i64> = vec![-1; blocks.len()];
    for (i, &(s, e)) in arrivals.iter().enumerate() {
        if let Some(b) = blocks.iter().position(|&(bs, be)| bs <= s && e <= be) {
            recency[b] = i as i64;
        }
    }
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    order.sort_by_key(|&b| (-recency[b], blocks[b].0));
    order.into_iter().take(max_blocks).map(|b| blocks[b]).collect()
}

/// The sender's SACKed ranges above snd_una and this recovery's retransmissions
/// ([start, end, uid of the resend]).
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    pub sacked: Vec<(i64, i64)>,
    pub rexmit: Vec<(i64, i64, u64)>,
}

impl Scoreboard {
    pub fn clear(&mut self) {
        self.sacked.clear();
        self.rexmit.clear();
    }
}

/// update: merge an ACK's blocks (clipped to [snd_una, snd_max)), forget what snd_una covers.
pub fn update(sb: &mut Scoreboard, snd_una: i64, snd_max: i64, blocks: &[(i64, i64)]) {
    let mut ranges: Vec<(i64, i64)> = sb.sacked.iter().copied().filter(|r| r.1 > snd_una).collect();
    for &(s, e) in blocks {
        let (s, e) = (s.max(snd_una), e.min(snd_max));
        if s < e {
            ranges.push((s, e));
        }
    }
    ranges.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        let s = s.max(snd_una);
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    sb.sacked = merged;
    let sacked = &sb.sacked;
    sb.rexmit.retain(|r| r.1 > snd_una && !covered(sacked, r.0, r.1));
}

fn covered(sacked: &[(i64, i64)], s: i64, e: i64) -> bool {
    sacked.iter().any(|&(a, b)| a <= s && e <= b)
}

pub fn is_sacked(sb: &Scoreboard, seq: i64) -> bool {
    sb.sacked.iter().any(|&(s, e)| s <= seq && seq < e)
}

/// forget_lost_rexmits: a retransmission older than a SACKed transmission is lost too.
pub fn forget_lost_rexmits(sb: &mut Scoreboard, newest_delivered_uid: i64) {
    sb.rexmit.retain(|r| r.2 as i64 > newest_delivered_uid);
}

pub fn sacked_bytes(sb: &Scoreboard) -> i64 {
    sb.sacked.iter().map(|&(s, e)| e - s).sum()
}

/// Unsacked ranges in [snd_una, snd_max) with the SACKed bytes and blocks above each (constant
/// inside a gap, so IsLost is too).
fn gaps(sb: &Scoreboard, snd_una: i64, snd_max: i64) -> Vec<(i64, i64, i64, i64)> {
    let mut out = Vec::new();
    let mut pos = snd_una;
    let mut above_bytes = sacked_bytes(sb);
    let mut above_blocks = sb.sacked.len() as i64;
    for &(s, e) in &sb.sacked {
        if s > pos {
            out.push((pos, s, above_bytes, above_blocks));
        }
        above_bytes -= e - s;
        above_blocks -= 1;
        pos = pos.max(e);
    }
    if pos < snd_max {
        out.push((pos, snd_max, 0, 0));
    }
    out
}

fn lost(above_bytes: i64, above_blocks: i64, mss: i64) -> bool {
    above_blocks >= DUP_THRESH || above_bytes > (DUP_THRESH - 1) * mss
}

pub fn is_lost(sb: &Scoreboard, seq: i64, snd_max: i64, mss: i64) -> bool {
    for (s, e, b, n) in gaps(sb, seq, snd_max) {
        if s <= seq && seq < e {
            return lost(b, n, mss);
        }
    }
    false
}

fn resent_overlap(sb: &Scoreboard, s: i64, e: i64) -> i64 {
    sb.rexmit.iter().map(|r| 0.max(e.min(r.1) - s.max(r.0))).sum()
}

/// pipe (RFC 6675 SetPipe).
pub fn pipe(sb: &Scoreboard, snd_una: i64, snd_max: i64, mss: i64) -> i64 {
    let mut total = 0;
    for (s, e, b, n) in gaps(sb, snd_una, snd_max) {
        if !lost(b, n, mss) {
            total += e - s;
        }
        total += resent_overlap(sb, s, e);
    }
    total
}

/// next_hole (RFC 6675 NextSeg rule 1): (seq, length) or None.
pub fn next_hole(sb: &Scoreboard, snd_una: i64, snd_max: i64, mss: i64) -> Option<(i64, i64)> {
    let mut resent: Vec<(i64, i64)> = sb.rexmit.iter().map(|r| (r.0, r.1)).collect();
    resent.sort_unstable();
    for (s, e, b, n) in gaps(sb, snd_una, snd_max) {
        if b == 0 {
            break;
        }
        if !lost(b, n, mss) {
            continue;
        }
        let mut pos = s;
        for &(rs, re) in &resent {
            if rs <= pos && pos < re {
                pos = re;
            }
        }
        if pos >= e {
            continue;
        }
        let mut end = e.min(pos + mss);
        for &(rs, _) in &resent {
            if pos < rs && rs < end {
                end = rs;
            }
        }
        return Some((pos, end - pos));
    }
    None
}

pub fn record_rexmit(sb: &mut Scoreboard, seq: i64, length: i64, uid: u64) {
    sb.rexmit.push((seq, seq + length, uid));
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: i64 = 1460;

    #[test]
    fn blocks_latest_first_and_limited() {
        let ooo = [(100, 200), (200, 300), (500, 600), (800, 900)];
        let arrivals = [(100, 200), (500, 600), (200, 300), (800, 900)];
        assert_eq!(receiver_blocks(&ooo, &arrivals, MAX_BLOCKS), vec![(800, 900), (100, 300), (500, 600)]);
        let many: Vec<(i64, i64)> = (1..7).map(|i| (i * 100, i * 100 + 50)).collect();
        assert_eq!(receiver_blocks(&many, &many, MAX_BLOCKS).len(), MAX_BLOCKS);
        assert_eq!(receiver_blocks(&many, &many, MAX_BLOCKS_WITH_TIMESTAMP).len(), 3);
    }

    #[test]
    fn pipe_next_hole_and_lost_retransmission() {
        let mut sb = Scoreboard::default();
        update(&mut sb, 0, 10 * MSS, &[(2 * MSS, 6 * MSS)]);
        assert_eq!(pipe(&sb, 0, 10 * MSS, MSS), 4 * MSS);
        assert_eq!(next_hole(&sb, 0, 10 * MSS, MSS), Some((0, MSS)));
        record_rexmit(&mut sb, 0, MSS, 50);
        assert_eq!(pipe(&sb, 0, 10 * MSS, MSS), 5 * MSS);
        assert_eq!(next_hole(&sb, 0, 10 * MSS, MSS), Some((MSS, MSS)));
        forget_lost_rexmits(&mut sb, 60);
        assert_eq!(next_hole(&sb, 0, 10 * MSS, MSS), Some((0, MSS)));
    }
}
