//! The analyzer's row order: by connection, then time, then record number. A capture is nearly
//! always written in time order, so the usual case is a stable bucket pass by connection, O(n);
//! only a file whose timestamps go backwards needs a full sort.

/// None when the rows are already in order; else the permutation that orders them.
pub fn stream_time_order(stream: &[u32], ts_ns: &[i64], frame: &[u64]) -> Option<Vec<u64>> {
    let n = stream.len();
    let key = |i: usize| (stream[i], ts_ns[i], frame[i]);
    if (1..n).all(|i| key(i - 1) <= key(i)) {
        return None;
    }
    let by_time = (1..n).all(|i| (ts_ns[i - 1], frame[i - 1]) <= (ts_ns[i], frame[i]));
    if !by_time {
        let mut idx: Vec<u64> = (0..n as u64).collect();
        idx.sort_unstable_by_key(|&i| key(i as usize));
        return Some(idx);
    }
    // Counting sort by stream keeps the time order within each stream.
    let streams = stream.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut start = vec![0usize; streams + 1];
    for &s in stream {
        start[s as usize + 1] += 1;
    }
    for s in 0..streams {
        start[s + 1] += start[s];
    }
    let mut idx = vec![0u64; n];
    for (i, &s) in stream.iter().enumerate() {
        idx[start[s as usize]] = i as u64;
        start[s as usize] += 1;
    }
    Some(idx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_input_needs_no_permutation() {
        assert_eq!(stream_time_order(&[0, 0, 1], &[1, 2, 0], &[1, 2, 3]), None);
    }

    #[test]
    fn interleaved_streams_in_time_order() {
        let order = stream_time_order(&[1, 0, 1, 0], &[1, 2, 3, 4], &[1, 2, 3, 4]).unwrap();
        assert_eq!(order, vec![1, 3, 0, 2]);
    }

    #[test]
    fn time_going_backwards_sorts_by_time_then_frame() {
        let order = stream_time_order(&[0, 0, 0, 1], &[5, 3, 3, 1], &[1, 2, 3, 4]).unwrap();
        assert_eq!(order, vec![1, 2, 0, 3]);
    }
}
