//! Where a flight that reached a tap after the bottleneck began (analyzers/stalls.py `bursts`). Its
//! segments arrive spread by the bottleneck's serialization, and the peer's ACKs of the first ones
//! come back among them; a segment continues the burst unless one of those ACKs could have released
//! it (the latest peer packet a reaction lag and the segment's serialization before it came after
//! the burst began) or it was set apart anyway (spacing, a write's end: `forced`). A segment the
//! tap-side rule already joined to the one before (`joined`: close, nothing between) stays joined.

use super::NULL;

/// Per row (rows of one direction, grouped by `group` and in time order within it): the time of
/// the first segment of its burst. `released_by[i]` is the time of the latest peer packet that
/// could have released row i (NULL when none).
pub fn burst_starts(group: &[u64], ts_ns: &[i64], released_by: &[i64], forced: &[bool], joined: &[bool]) -> Vec<i64> {
    let mut out = vec![0; ts_ns.len()];
    let mut start = NULL;
    for i in 0..ts_ns.len() {
        let new_group = i == 0 || group[i] != group[i - 1];
        let released = released_by[i] != NULL && released_by[i] >= start;
        if new_group || (!joined[i] && (forced[i] || released)) {
            start = ts_ns[i];
        }
        out[i] = start;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ack_since_the_burst_began_starts_a_new_one() {
        // Segments every 10 ns; the peer's ACK at 12 could have released the segment at 30 only.
        let ts = [0, 10, 20, 30, 40];
        let rel = [NULL, NULL, NULL, 12, 12];
        let starts = burst_starts(&[0; 5], &ts, &rel, &[false; 5], &[false; 5]);
        assert_eq!(starts, vec![0, 0, 0, 30, 30]);
        // ...unless nothing came between it and the segment before (the next one is released).
        let starts = burst_starts(&[0; 5], &ts, &rel, &[false; 5], &[false, false, false, true, false]);
        assert_eq!(starts, vec![0, 0, 0, 0, 40]);
    }

    #[test]
    fn an_ack_before_the_burst_releases_nothing_in_it() {
        let starts = burst_starts(&[0; 3], &[10, 20, 30], &[5, 5, 5], &[false; 3], &[false; 3]);
        assert_eq!(starts, vec![10, 10, 10]);
    }

    #[test]
    fn forced_breaks_and_groups_start_bursts() {
        let starts = burst_starts(&[0, 0, 0, 1], &[0, 10, 20, 25], &[NULL; 4], &[false, false, true, false], &[false; 4]);
        assert_eq!(starts, vec![0, 0, 20, 25]);
    }
}
