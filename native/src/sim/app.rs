//! The applications on the hosts: a bulk writer looping write(n) (optionally waiting for a reply
//! to each message, or thinking between writes), a bulk reader looping read(n), and the dispatch
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
    /// The bulk writer's next write, after its think time.
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
}

impl BulkReader {
    pub fn new(read_size: u64, expect: u64, message: u64, reply_bytes: u64) -> Result<Self, String> {
        if read_size == 0 {
            return Err(format!("bulk reader needs a positive read size, got {read_size}"));
        }
        Ok(BulkReader { read_size, expect, message, reply_bytes, ..Default::default() })
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
    let n = w.write_size.min(w.total - w.written);
    w.pending = n;
    h.write(net, now, n, true);
}

fn writer_after_message(h: &mut Host, net: &mut Net, now: Ns) {
    let App::BulkWriter(w) = &mut h.app else { return };
    if w.think_ns != 0 && w.written < w.total {
        let at = now + w.think_ns;
        h.idle_app();
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
            if !(r.in_message >= r.message && r.received < r.expect) {
                break;
            }
            r.in_message -= r.message;
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
