//! Frames captured twice (two capture points merged, a mirror port): the same packet headers seen
//! again within a short window. Rows in stream/time order; a row is a copy when the previous row
//! with the same identity (direction, sequence and ACK numbers, IP id, TCP timestamp value and
//! echo, length, flags, window, SACK blocks) came at most `window_ns` before it, or
//! `identified_window_ns` when a non-zero IPv4 id and a TCP timestamp both name the packet (no
//! resend repeats both: a mirror port's copies came 1.2-1.6 ms late in a public telnet capture).
//! (A resend within one timestamp tick repeats the value, but echoes whatever the peer sent since.)

use std::collections::HashMap;

/// One row's identity; `None` for a field the packet lacks (no IPv4 id, no timestamp option).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Identity {
    pub stream: u32,
    pub dir: u8,
    pub seq: i64,
    pub ack: i64,
    pub ip_id: Option<u16>,
    pub ts_val: Option<u32>,
    pub ts_ecr: Option<u32>,
    pub len: u32,
    pub flags: u8,
    pub window: i64,
    pub sack: i64,
}

impl Identity {
    /// A 64-bit digest of the identity (multiply-xorshift mixing): the map below is keyed by it.
    fn digest(&self) -> u64 {
        let words = [
            ((self.stream as u64) << 8) | self.dir as u64,
            self.seq as u64,
            self.ack as u64,
            ((self.ip_id.map_or(0x1_0000, u64::from)) << 32) | self.ts_val.map_or(0, u64::from),
            ((self.len as u64) << 8) | self.flags as u64 | ((self.ts_val.is_some() as u64) << 63),
            self.window as u64,
            self.sack as u64,
            self.ts_ecr.map_or(1 << 40, u64::from),
        ];
        words.iter().fold(0x9e37_79b9_7f4a_7c15u64, |h, &w| {
            let x = (h ^ w).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x ^ (x >> 31)
        })
    }
}

/// Rows between two sweeps of entries that left the window.
const SWEEP_ROWS: usize = 4096;

/// `identity(i)`: row i's identity; `rows`: the rows in stream, then time order (a copy is found
/// only among its own connection's rows).
pub fn duplicate_rows(
    rows: &[usize],
    identity: impl Fn(usize) -> Identity,
    ts_ns: &[i64],
    window_ns: i64,
    identified_window_ns: i64,
) -> Vec<bool> {
    // The latest original row per digest, and whether its copy was seen: two capture points give
    // each frame one copy, so a row matching an original that already has its copy is a frame of
    // its own (TCP's duplicate ACKs repeat the same headers too), unless an IPv4 id and a timestamp
    // name it (no duplicate ACK repeats an id: more capture points, more copies). Swept of rows older than the
    // window so that the map stays a few hundred entries (in cache). The default hasher over the
    // digest resists crafted captures; two identities with one digest only share a slot (the later
    // replaces the earlier), so a copy can at worst be missed, never invented.
    let mut latest: HashMap<u64, (i64, Identity, bool)> = HashMap::new();
    let mut out = vec![false; rows.len()];
    let mut stream = None;
    for (k, &i) in rows.iter().enumerate() {
        let id = identity(i);
        let ts = ts_ns[i];
        if stream != Some(id.stream) {
            latest.clear();
            stream = Some(id.stream);
        } else if k % SWEEP_ROWS == 0 {
            latest.retain(|_, (t, _, _)| *t >= ts - window_ns.max(identified_window_ns));
        }
        let slot = latest.entry(id.digest()).or_insert((i64::MIN, id, true));
        let (t, original, copied) = *slot;
        let identified = id.ip_id.is_some_and(|v| v != 0) && id.ts_val.is_some();
        let window = if identified { identified_window_ns } else { window_ns };
        // A frame that carries data or a non-zero IPv4 id may be copied more than once: a mirror
        // feeding one tap from several VLANs (Zeek's vlan-collisions.pcap: three copies 50 ms apart;
        // tcp_ssh-dups.pcap: four at once; nDPI's dnp3.pcap: three). Only a pure ACK without an id
        // repeats as TCP's own duplicate ACK.
        let seen = t != i64::MIN; // a new slot holds no earlier frame
        let named = id.len > 0 || id.ip_id.is_some_and(|v| v != 0);
        if seen && original == id && (named || !copied) && ts - t <= window {
            out[i] = true;
            slot.2 = true;
        } else {
            *slot = (ts, id, false);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(seq: i64) -> Identity {
        Identity {
            stream: 0,
            dir: 0,
            seq,
            ack: 1,
            ip_id: Some(7),
            ts_val: None,
            ts_ecr: None,
            len: 100,
            flags: 8,
            window: 10,
            sack: 0,
        }
    }

    #[test]
    fn one_copy_per_frame() {
        // A pure ACK, its copy, then the same headers again (a duplicate ACK) and its copy.
        let mut ack = id(1);
        ack.len = 0;
        ack.ip_id = Some(0);
        assert_eq!(
            duplicate_rows(&[0, 1, 2, 3], |_| ack, &[0, 50, 400, 450], 1_000, 1_000),
            vec![false, true, false, true]
        );
    }

    #[test]
    fn a_frame_that_names_itself_may_be_copied_more_than_once() {
        let mut named = id(1);
        named.ts_val = Some(50);
        named.ts_ecr = Some(7);
        assert_eq!(
            duplicate_rows(&[0, 1, 2], |_| named, &[0, 50_000, 100_000], 1_000, 1_000_000),
            vec![false, true, true]
        );
        // A pure ACK without an id: its third instance is a frame of its own (a duplicate ACK
        // repeats the headers); data's is a copy.
        let mut ack = id(1);
        ack.len = 0;
        ack.ip_id = None;
        assert_eq!(duplicate_rows(&[0, 1, 2], |_| ack, &[0, 50, 100], 1_000, 1_000), vec![false, true, false]);
        assert_eq!(duplicate_rows(&[0, 1, 2], |_| id(1), &[0, 50, 100], 1_000, 1_000), vec![false, true, true]);
        // A pure ACK with an IPv4 id names itself: TCP's next duplicate ACK would carry another.
        ack.ip_id = Some(7);
        assert_eq!(duplicate_rows(&[0, 1, 2], |_| ack, &[0, 50, 100], 1_000, 1_000), vec![false, true, true]);
    }

    #[test]
    fn a_resend_within_the_tick_echoes_something_newer() {
        let mut resend = id(1);
        resend.ts_val = Some(50);
        resend.ts_ecr = Some(8);
        let mut first = resend;
        first.ts_ecr = Some(7);
        assert_eq!(duplicate_rows(&[0, 1], |i| [first, resend][i], &[0, 100], 1_000, 1_000), vec![false, false]);
        assert_eq!(duplicate_rows(&[0, 1], |i| [first, first][i], &[0, 100], 1_000, 1_000), vec![false, true]);
    }

    #[test]
    fn a_copy_within_the_window_only() {
        let ids = [id(1), id(1), id(101), id(1)];
        assert_eq!(
            duplicate_rows(&[0, 1, 2, 3], |i| ids[i], &[0, 500, 600, 5_000], 1_000, 1_000),
            vec![false, true, false, false]
        );
    }

    #[test]
    fn a_packet_named_by_its_id_and_timestamp_is_copied_later() {
        // A copy 1.5 ms late: taken for a copy only where a non-zero IPv4 id and a TCP timestamp
        // both name the packet.
        let mut named = id(1);
        named.ts_val = Some(50);
        named.ts_ecr = Some(7);
        assert_eq!(duplicate_rows(&[0, 1], |_| named, &[0, 1_500], 1_000, 10_000), vec![false, true]);
        let mut no_id = named;
        no_id.ip_id = Some(0);
        assert_eq!(duplicate_rows(&[0, 1], |_| no_id, &[0, 1_500], 1_000, 10_000), vec![false, false]);
        assert_eq!(duplicate_rows(&[0, 1], |_| id(1), &[0, 1_500], 1_000, 10_000), vec![false, false]);
    }
}
