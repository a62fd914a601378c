//! The applications on the hosts: a bulk writer looping write(n) (optionally waiting for a reply
//! to each message, or thinking between writes) or replaying a schedule of writes (each issued at
//! its time after the connection opened, or when the previous one completed if later), a bulk
//! reader looping read(n), and the dispatch
//! to naglemark.rs's client and server. The host calls `established` when the connection opens,
//! `write_done` when a write() has been copied into the socket buffer and `read_data` when a
//! read() returns; these functions never hold a borrow of the app across a host call, because the
//! host may call back synchronously (a read at end of stream completes at once).

use super::engine::Ns;
use super::naglemark;
use super::net::{Event, Net};
use super::tcp::host::Host;

#[derive(Debug, Clone, Default)]
pub struct BulkWriter {
    pub total: u64,
    pub write_size: u64,
    pub think_ns: Ns,
    pub reply_bytes: u64,
    pub reply_got: u64,
    pub written: u64,
    /// Size of the write in progress, added to `written` when it completes.
    pub pending: u64,
    pub started_at: Option<Ns>,
    pub done_at: Option<Ns>,
    /// Scheduled writes (at_ns after the connection opened, nbytes); empty: loop write(write_size).
    pub schedule: Vec<(Ns, u64)>,
    /// The next scheduled write's index.
    pub next: usize,
}

#[derive(Debug, Clone, Default)]
pub struct BulkReader {
    pub read_size: u64,
    pub expect: u64,
    pub message: u64,
    pub reply_bytes: u64,
    pub in_message: u64,
    pub received: u64,
    pub reads: u64,
    pub last_byte_at: Option<Ns>,
    pub eof_at: Option<Ns>,
    /// Each message's size when they differ (a writer's schedule); empty: every one is `message`.
    pub messages: Vec<u64>,
    /// Messages answered so far (the index into `messages`).
    pub answered: usize,
}

/// A naglemark server's per-connection state (the lengths it is asked for queue in Net's
/// naglemark state, shared with the client).
#[derive(Debug, Clone, Default)]
pub struct NmServer {
    pub request_got: u64,
    pub left: u64,
}

#[derive(Debug, Clone, Default)]
pub enum App {
    #[default]
    None,
    BulkWriter(BulkWriter),
    BulkReader(BulkReader),
    /// naglemark's client (its state is Net.naglemark).
    NmClient,
    NmServer(NmServer),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppEvent {
    /// The bulk writer's next write, after its think time or at its scheduled time.
    WriterNext,
    /// naglemark's client sends its next request after its think time.
    NmRequest,
}

impl BulkWriter {
    pub fn new(total: u64, write_size: u64, think_ns: Ns, reply_bytes: u64) -> Result<Self, String> {
        if total == 0 || write_size == 0 {
            return Err(format!("bulk writer needs positive sizes (total={total}, write={write_size})"));
        }
        Ok(BulkWriter { total, write_size, think_ns, reply_bytes, ..Default::default() })
    }

    /// A writer replaying `schedule`: write i of nbytes is issued at at_ns after the connection
    /// opened, or when write i - 1 completed (and its reply arrived, with `reply_bytes`) if that
    /// is later: a blocking write() loop that sleeps until the next write's time. The times must
    /// not decrease and every size be positive.
    pub fn scheduled(schedule: Vec<(Ns, u64)>, reply_bytes: u64) -> Result<Self, String> {
        if schedule.is_empty() {
            return Err("a write schedule needs at least one write".into());
        }
        let mut prev = 0;
        for (i, &(at, n)) in schedule.iter().enumerate() {
            if n == 0 || at < prev {
                return Err(format!("writes[{i}] = ({at}, {n}): sizes must be positive and times non-negative, not decreasing"));
            }
            prev = at;
        }
        let total = schedule.iter().try_fold(0u64, |a, &(_, n)| a.checked_add(n)).ok_or("the writes' sizes overflow")?;
        let write_size = schedule.iter().map(|w| w.1).max().unwrap_or(1);
        Ok(BulkWriter { total, write_size, reply_bytes, schedule, ..Default::default() })
    }

    /// The sizes of the writes, one message each (for the reader that answers them).
    pub fn message_sizes(&self) -> Vec<u64> {
        self.schedule.iter().map(|w| w.1).collect()
    }
}

impl BulkReader {
    pub fn new(read_size: u64, expect: u64, message: u64, reply_bytes: u64) -> Result<Self, String> {
        if read_size == 0 {
            return Err(format!("bulk reader needs a positive read size, got {read_size}"));
        }
        Ok(BulkReader { read_size, expect, message, reply_bytes, ..Default::default() })
    }

    /// The size of the message being read.
    fn current_message(&self) -> u64 {
        if self.messages.is_empty() {
            self.message
        } else {
            self.messages.get(self.answered).copied().unwrap_or(u64::MAX)
        }
    }
}

/// The connection is established: a bulk writer records the run's start and makes its first
/// write, a reader its first read; a naglemark client starts its server and sends a request.
pub fn established(h: &mut Host, net: &mut Net, now: Ns) {
    match &mut h.app {
        App::BulkWriter(w) => {
            net.started_at = Some(now);
            w.started_at = Some(now);
            writer_next(h, net, now);
        }
        App::BulkReader(r) => {
            let n = r.read_size;
            h.read(net, now, n);
        }
        App::NmClient => naglemark::client_established(h, net, now),
        App::NmServer(_) | App::None => {}
    }
}

/// A write() call finished (every byte is in the socket buffer).
pub fn write_done(h: &mut Host, net: &mut Net, now: Ns) {
    let w = match &mut h.app {
        App::BulkWriter(w) => w,
        App::NmClient => return naglemark::client_write_done(h, net, now),
        App::NmServer(_) => return naglemark::server_write_next(h, net, now),
        App::BulkReader(_) | App::None => return, // the reader's reply writes have no callback
    };
    w.written += w.pending;
    if w.reply_bytes > 0 && w.written < w.total {
        w.reply_got = 0;
        let n = w.reply_bytes;
        h.read(net, now, n);
        return;
    }
    writer_after_message(h, net, now);
}

/// A read() call returned `n` bytes (0 at end of stream).
pub fn read_data(h: &mut Host, net: &mut Net, now: Ns, n: u64) {
    match &mut h.app {
        App::BulkWriter(w) => {
            // The writer reads the reply to its message before it goes on.
            w.reply_got += n;
            if n > 0 && w.reply_got < w.reply_bytes {
                let want = w.reply_bytes - w.reply_got;
                h.read(net, now, want);
                return;
            }
            writer_after_message(h, net, now);
        }
        App::BulkReader(_) => reader_got(h, net, now, n),
        App::NmClient => naglemark::client_read_data(h, net, now, n),
        App::NmServer(_) => naglemark::server_read_data(h, net, now, n),
        App::None => {}
    }
}

pub fn handle(h: &mut Host, net: &mut Net, now: Ns, ev: AppEvent) {
    match ev {
        AppEvent::WriterNext => writer_next(h, net, now),
        AppEvent::NmRequest => super::naglemark::client_request(h, net, now),
    }
}

fn writer_next(h: &mut Host, net: &mut Net, now: Ns) {
    let App::BulkWriter(w) = &mut h.app else { return };
    if w.written >= w.total {
        w.done_at = Some(now);
        h.close(net, now);
        return;
    }
    let n = if w.schedule.is_empty() {
        w.write_size.min(w.total - w.written)
    } else {
        let Some(&(at, n)) = w.schedule.get(w.next) else { return };
        let at = w.started_at.unwrap_or(0) + at;
        if at > now {
            // Asleep until the write's time: the connection idles once the buffer has gone out.
            h.idle_app(now);
            let index = h.index;
            net.schedule(at, Event::App(index, AppEvent::WriterNext));
            return;
        }
        w.next += 1;
        n
    };
    w.pending = n;
    // Where the application's message ends (TCP_CORK, set around each message, is cleared):
    // after every write of a writer that then waits for a reply, thinks or sleeps until its next
    // scheduled write; a plain write loop's transfer is one message, ended by its last write.
    let eom = w.reply_bytes > 0 || w.think_ns != 0 || !w.schedule.is_empty() || w.written + n >= w.total;
    h.write(net, now, n, eom);
}

fn writer_after_message(h: &mut Host, net: &mut Net, now: Ns) {
    let App::BulkWriter(w) = &mut h.app else { return };
    if w.think_ns != 0 && w.written < w.total {
        let at = now + w.think_ns;
        h.idle_app(now);
        let index = h.index;
        net.schedule(at, Event::App(index, AppEvent::WriterNext));
    } else {
        writer_next(h, net, now);
    }
}

fn reader_got(h: &mut Host, net: &mut Net, now: Ns, n: u64) {
    let App::BulkReader(r) = &mut h.app else { return };
    if n == 0 {
        r.eof_at = Some(now);
        h.close(net, now);
        return;
    }
    r.reads += 1;
    r.received += n;
    if r.reply_bytes > 0 && r.message > 0 {
        r.in_message += n;
        loop {
            let App::BulkReader(r) = &mut h.app else { return };
            let message = r.current_message();
            if !(r.in_message >= message && r.received < r.expect) {
                break;
            }
            r.in_message -= message;
            r.answered += 1;
            let reply = r.reply_bytes;
            h.write(net, now, reply, true);
        }
    }
    let App::BulkReader(r) = &mut h.app else { return };
    if r.received >= r.expect && r.last_byte_at.is_none() {
        r.last_byte_at = Some(now);
        net.finished_at = Some(now); // the transfer is complete: the run's finish time
    }
    let size = r.read_size;
    h.read(net, now, size);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_sums_its_sizes_and_is_checked() {
        let w = BulkWriter::scheduled(vec![(0, 100), (10, 50), (10, 7)], 0).unwrap();
        assert_eq!((w.total, w.write_size, w.message_sizes()), (157, 100, vec![100, 50, 7]));
        assert!(BulkWriter::scheduled(vec![], 0).is_err());
        assert!(BulkWriter::scheduled(vec![(0, 0)], 0).unwrap_err().contains("writes[0]"));
        assert!(BulkWriter::scheduled(vec![(-1, 5)], 0).unwrap_err().contains("writes[0]"));
        assert!(BulkWriter::scheduled(vec![(5, 5), (4, 5)], 0).unwrap_err().contains("writes[1]"));
    }

    #[test]
    fn a_reader_of_scheduled_writes_takes_each_message_size_in_turn() {
        let mut r = BulkReader::new(8192, 157, 8192, 10).unwrap();
        assert_eq!(r.current_message(), 8192);
        r.messages = vec![100, 50, 7];
        assert_eq!(r.current_message(), 100);
        r.answered = 2;
        assert_eq!(r.current_message(), 7);
        r.answered = 3;
        assert_eq!(r.current_message(), u64::MAX);
    }
}
