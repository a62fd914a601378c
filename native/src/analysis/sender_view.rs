//! The flight as the *sender* knew it. At a tap away from the sender an ACK is seen one reaction
//! lag before the sender acts on it, and data the sender already sent is still on its way to the
//! tap; taking the peer's ACK and window as of half a lag before each of the sender's packets gives
//! the flight the sender had (analyzers/vantage.py explains the lag).

use std::collections::HashMap;

use super::{PacketView, NULL};

#[derive(Debug, Default, Clone, PartialEq)]
pub struct SenderView {
    pub snd_una: Vec<i64>,
    pub peer_window: Vec<i64>,
    pub in_flight: Vec<i64>,
    pub pipe: Vec<i64>,
    pub usable_window: Vec<i64>,
}

/// `snd_una`, `snd_max`, `sacked`, `peer_window`: the tap's sender state of each row;
/// `lags`: reaction lag per (stream, dir), 0 where absent.
pub fn sender_view(
    p: &PacketView,
    snd_una: &[i64],
    snd_max: &[i64],
    sacked: &[i64],
    peer_window: &[i64],
    lags: &HashMap<(u32, u8), i64>,
) -> SenderView {
    let n = p.len();
    let mut out = SenderView {
        snd_una: snd_una.to_vec(),
        peer_window: peer_window.to_vec(),
        in_flight: vec![0; n],
        pipe: vec![0; n],
        usable_window: vec![NULL; n],
    };
    let (order, ranges) = p.stream_rows();
    for range in ranges {
        let rows = &order[range];
        for d in 0..2u8 {
            let lag = lags.get(&(p.stream[rows[0]], d)).copied().unwrap_or(0);
            // The peer's ACKs (any packet with ACK set, RST excepted), with the running maximum.
            let mut acks: Vec<(i64, i64, i64)> = Vec::new(); // (ts, cumulative ack, window)
            for &i in rows
                .iter()
                .filter(|&&i| p.dir[i] != d && p.ack[i] && !p.rst[i])
            {
                let una = acks.last().map_or(p.ack_rel[i], |a| a.1.max(p.ack_rel[i]));
                acks.push((p.ts_ns[i], una, p.win_scaled[i]));
            }
            let mut k = 0; // ACKs seen by `at`: rows are in time order, so `at` only rises
            for &i in rows.iter().filter(|&&i| p.dir[i] == d) {
                let at = p.ts_ns[i] - lag.div_euclid(2);
                while k < acks.len() && acks[k].0 <= at {
                    k += 1;
                }
                if k > 0 {
                    let (_, una, wnd) = acks[k - 1];
                    // (No floor at the first byte seen, as the tap's own snd_una has none: a
                    // capture that starts mid-connection sees ACKs of data sent before it, below
                    // that byte and still unacknowledged.)
                    out.snd_una[i] = una.min(snd_max[i]);
                    out.peer_window[i] = wnd;
                }
            }
        }
    }
    for i in 0..n {
        out.in_flight[i] = (snd_max[i] - out.snd_una[i]).max(0);
        out.pipe[i] = (out.in_flight[i] - sacked[i]).max(0);
        let w = out.peer_window[i];
        out.usable_window[i] = if w == NULL {
            NULL
        } else {
            out.snd_una[i] + w - snd_max[i]
        };
    }
    out
}
