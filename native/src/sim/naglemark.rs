//! One naglemark trial (Mogul & Minshall, "Rethinking the TCP Nagle algorithm", §6-7): a client
//! asks a server for responses of given lengths and times each one, over one connection or one
//! per request. Each client connect builds a fresh host pair (hosts 2k and 2k + 1) and path, draws
//! both ISNs from the run's generator, and retires the previous pair a second later. The loop
//! checks for the end every 4096 events, so a trial stops at the first 4096-event boundary after
//! its last response (the event count and end time the golden traces hold).

use std::collections::VecDeque;

use super::app::{App, AppEvent, NmServer};
use super::engine::{Ns, NS_PER_MS, NS_PER_S};
use super::ground_truth::{Drop, Stall};
use super::segment::Segment;
use super::link::{preset, SerialLink};
use super::nagle::NagleVariant;
use super::net::{Event, HostIndex, Net, Tapped};
use super::tcp::congestion as cc_mod;
use super::tcp::costs::FREE;
use super::tcp::host::{Host, HostConfig, PeerWindow};
use super::tcp::personality::{get_personality, lan_server_personality, Personality};
use super::tcp::reader;

/// The hosts' addresses and ports: connection k's client port is FIRST_CLIENT_PORT + k.
pub const CLIENT_ADDR: &str = "10.0.0.1";
pub const SERVER_ADDR: &str = "10.0.0.2";
pub const SERVER_PORT: u16 = 8000;
pub const FIRST_CLIENT_PORT: u16 = 20000;
pub const REQUEST_BYTES: u64 = 16;
pub const CLIENT_READ_BYTES: u64 = 131_072;
const SLICE_EVENTS: u64 = 4096;
/// A closed connection's hosts keep running this long (FIN exchange), then stop their ticks.
const LINGER_NS: Ns = NS_PER_S;

#[derive(Clone, Debug)]
pub struct TrialConfig {
    pub personality: String,
    pub link: String,
    pub variant: NagleVariant,
    pub sockbuf: u32,
    pub receiver_inference: bool,
    pub per_request: bool,
    pub app_buf: u64,
    pub lengths: Vec<u64>,
    /// The client's time between a response's last byte and its next request (not measured).
    pub think_ns: Ns,
    /// Overrides of the link preset's rate, one-way delay and MTU (a capture rig's path).
    pub rate_bps: Option<i64>,
    pub delay_ns: Option<Ns>,
    pub mtu: Option<u32>,
    /// Record the servers' packets (what a capture at the server shows) and both ends' stalls.
    pub record: bool,
}

#[derive(Clone, Debug)]
pub struct TrialOutcome {
    /// (length, elapsed ns) per response.
    pub samples: Vec<(u64, Ns)>,
    pub finished_ns: Ns,
    pub events: u64,
    pub now: Ns,
    pub connections: u32,
    /// With `record`: every server's packets, by time (at equal times connection by connection,
    /// what arrived before what was sent).
    pub records: Vec<(Ns, Segment)>,
    /// With `record`: both ends' stalls in the order they were recorded.
    pub stalls: Vec<Stall>,
    pub drops: Vec<Drop>,
}

/// The client's state and the network's (one host pair per connection), kept in Net because it
/// spans connections and host pairs.
pub struct Naglemark {
    p: &'static Personality,
    link: String,
    /// (rate bit/s, one-way delay, MTU) of each connection's path.
    path: (i64, Ns, u32),
    variant: NagleVariant,
    sockbuf: u32,
    infer: bool,
    per_request: bool,
    app_buf: u64,
    think_ns: Ns,
    client_phase: Ns,
    server_phase: Ns,
    lengths: Vec<u64>,
    pub samples: Vec<(u64, Ns)>,
    /// The lengths of the requests sent and not yet read, oldest first: the client pushes one
    /// per request, the server pops one per request it reads.
    server_queue: VecDeque<u64>,
    length: u64,
    received: u64,
    t0: Ns,
    connections: u32,
    pairs: Vec<(HostIndex, HostIndex)>,
    pub finished: Option<Ns>,
    pub error: Option<String>,
    record: bool,
    /// Stalls collected from the hosts as they record them (one ground truth for the trial).
    stalls: Vec<Stall>,
}

fn nm(net: &mut Net) -> &mut Naglemark {
    net.naglemark.as_deref_mut().expect("naglemark state")
}

/// Run `f` on host `i`, which must not be the one being dispatched (that one is in hand).
pub fn with_host(net: &mut Net, i: HostIndex, f: impl FnOnce(&mut Host, &mut Net)) {
    let mut h = net.hosts[usize::from(i)].take().unwrap_or_else(|| panic!("host {i} is busy or absent"));
    f(&mut h, net);
    if !h.stalls.is_empty() {
        nm(net).stalls.append(&mut h.stalls);
    }
    net.hosts[usize::from(i)] = Some(h);
}

/// Open connection k: a fresh client/server pair over a fresh path; the client connects.
fn connect(net: &mut Net, now: Ns) {
    let state = nm(net);
    let n = state.connections;
    state.connections += 1;
    if !state.pairs.is_empty() {
        // The previous pair stops once its FIN exchange has had time to finish.
        let k = (state.pairs.len() - 1) as u32;
        net.schedule(now + LINGER_NS, Event::Retire(k));
    }
    let state = nm(net);
    let (c, s) = (2 * u64::from(n), 2 * u64::from(n) + 1);
    if s > HostIndex::MAX as u64 {
        state.error = Some(format!("naglemark: connection {n} needs host index {s}, beyond {}", HostIndex::MAX));
        return;
    }
    let (c, s) = (c as HostIndex, s as HostIndex);
    let (p, variant, sockbuf, infer, record) = (state.p, state.variant, state.sockbuf, state.infer, state.record);
    let (cphase, sphase) = (state.client_phase, state.server_phase);
    let pre = preset(&state.link).expect("link checked");
    let (rate, delay, mtu) = state.path;
    let link_name = state.link.clone();
    // A stall is a gap of 10 ms or two round trips, whichever is longer (as in a bulk run).
    let threshold = (10 * NS_PER_MS).max(4 * delay);
    let client_end = format!("{CLIENT_ADDR}:{}", u32::from(FIRST_CLIENT_PORT) + n);
    let server_end = format!("{SERVER_ADDR}:{SERVER_PORT}");
    // The client reads the responses; with the inference on, when its reads run decides what the
    // inference sees (tcp/reader.rs). Its generator's seed is drawn only then, so a trial without
    // the inference draws exactly what it did before the model existed.
    let client_reads = match (infer, reader::for_link(&link_name)) {
        (true, Some(sched)) => Some((sched, net.rng.getrandbits(32) as i64)),
        _ => None,
    };
    let host_cfg = |index: HostIndex, nagle, sndbuf, phase, uid_base, iss, peer_window, direction, reads| HostConfig {
        index,
        personality: p.name,
        mtu,
        sndbuf,
        rcvbuf: None,
        route_mtu: None,
        mss: None,
        advertised_mss: None,
        mtu_probing: 0,
        sack: None,
        cubic: None,
        nagle: Some(nagle),
        receiver_inference: Some(infer),
        read_scheduling: reads,
        cost: FREE,
        record_stalls: record,
        stall_threshold_ns: threshold,
        tick_phase_ns: phase,
        uid_base,
        iss,
        peer_window,
        direction,
    };
    let iss = net.rng.randrange(1 << 32) as i64;
    let client_dir = format!("{client_end} -> {server_end}");
    let mut client = Host::new(
        host_cfg(c, NagleVariant::Nagle, None, cphase, (2 * u64::from(n)) << 32, iss, PeerWindow::Unknown, client_dir,
                 client_reads),
        net,
    );
    let iss = net.rng.randrange(1 << 32) as i64;
    // The server is the data sender: whether its buffer can trigger the client's window update.
    let server_dir = format!("{server_end} -> {client_end}");
    let mut server = Host::new(
        host_cfg(s, variant, Some(sockbuf), sphase, (2 * u64::from(n) + 1) << 32, iss, PeerWindow::Host(c), server_dir,
                 None),
        net,
    );
    // A BSD-family server on the LAN starts without slow start (lan_server_personality). Host::new
    // took the plain personality; the initial window is the only difference, so swap the
    // personality and redo the congestion state, the one thing that depends on it.
    server.p = lan_server_personality(p);
    server.cc = cc_mod::new_state(server.p.recovery, 536, server.p.initial_cwnd_segments, server.p.linux_ca, server.p.cubic);
    let fwd = SerialLink::new(format!("{link_name}-fwd"), rate, delay, mtu, None, pre.framing)
        .expect("preset link");
    let rev = SerialLink::new(format!("{link_name}-rev"), rate, delay, mtu, None, pre.framing)
        .expect("preset link");
    net.connect_pair(c, s, fwd, rev);
    server.listen();
    server.app = App::NmServer(NmServer::default());
    client.app = App::NmClient;
    nm(net).pairs.push((c, s));
    if net.hosts.len() <= usize::from(s) {
        net.hosts.resize_with(usize::from(s) + 1, || None);
    }
    net.hosts[usize::from(s)] = Some(Box::new(server));
    client.connect(net, now);
    net.hosts[usize::from(c)] = Some(Box::new(client));
}

/// The client's connection is up: start this connection's server (its first read) and send a
/// request.
pub fn client_established(h: &mut Host, net: &mut Net, now: Ns) {
    let server = h.index + 1;
    with_host(net, server, |srv, net| {
        srv.app = App::NmServer(NmServer::default());
        srv.read(net, now, REQUEST_BYTES); // the server waits for a request
    });
    client_request(h, net, now);
}

pub fn client_request(h: &mut Host, net: &mut Net, now: Ns) {
    let state = nm(net);
    let i = state.samples.len();
    state.length = state.lengths[i];
    let length = state.length;
    state.server_queue.push_back(length);
    state.received = 0;
    state.t0 = now;
    h.write(net, now, REQUEST_BYTES, true);
}

/// The request is written: the client reads the response.
pub fn client_write_done(h: &mut Host, net: &mut Net, now: Ns) {
    h.read(net, now, CLIENT_READ_BYTES);
}

/// The client read `n` bytes of the response (0: the server closed).
pub fn client_read_data(h: &mut Host, net: &mut Net, now: Ns, n: u64) {
    let state = nm(net);
    if n == 0 {
        state.error = Some(format!(
            "naglemark: server closed after {} of {} bytes (response {})",
            state.received,
            state.length,
            state.samples.len()
        ));
        return;
    }
    state.received += n;
    if state.received < state.length {
        h.read(net, now, CLIENT_READ_BYTES);
        return;
    }
    if state.received > state.length {
        state.error = Some(format!("naglemark: {} bytes received for a {}-byte response", state.received, state.length));
        return;
    }
    let sample = (state.length, now - state.t0);
    state.samples.push(sample);
    if state.samples.len() == state.lengths.len() {
        h.close(net, now);
        nm(net).finished = Some(now);
    } else if state.per_request {
        let think = state.think_ns;
        h.close(net, now);
        nm(net).server_queue.clear();
        if think > 0 {
            net.schedule(now + think, Event::Start); // connect after the think time
        } else {
            connect(net, now);
        }
    } else if state.think_ns > 0 {
        let at = now + state.think_ns;
        net.schedule(at, Event::App(h.index, AppEvent::NmRequest));
    } else {
        client_request(h, net, now);
    }
}

/// The server read `n` bytes of a request (0: the client closed).
pub fn server_read_data(h: &mut Host, net: &mut Net, now: Ns, n: u64) {
    if n == 0 {
        h.close(net, now); // the client closed (one connection per request)
        return;
    }
    let App::NmServer(srv) = &mut h.app else { return };
    srv.request_got += n;
    if srv.request_got < REQUEST_BYTES {
        let want = REQUEST_BYTES - srv.request_got;
        h.read(net, now, want);
        return;
    }
    srv.request_got = 0;
    let left = nm(net).server_queue.pop_front().expect("naglemark: request with no length queued");
    if let App::NmServer(srv) = &mut h.app {
        srv.left = left;
    }
    server_write_next(h, net, now);
}

/// The server writes the response's next chunk of at most app_buf bytes (also on each write's
/// completion); after the last one it reads the next request.
pub fn server_write_next(h: &mut Host, net: &mut Net, now: Ns) {
    let app_buf = nm(net).app_buf;
    let App::NmServer(srv) = &mut h.app else { return };
    if srv.left == 0 {
        h.read(net, now, REQUEST_BYTES);
        return;
    }
    let chunk = app_buf.min(srv.left);
    srv.left -= chunk;
    let last = srv.left == 0; // the response's last write ends the message (uncorks a CORK server)
    h.write(net, now, chunk, last);
}

/// The delayed-ACK tick period whose phase each end draws (independent clocks; the BSD 200 ms
/// tick, docs/tcp-rules.md#delayed-ack-timers).
const TICK_PHASE_RANGE_NS: u64 = 200 * NS_PER_MS as u64;

/// One trial with the given seed: the client's and the server's tick phases are drawn first, then
/// each connection's ISNs as it opens.
pub fn run_trial(cfg: &TrialConfig, seed: i64) -> Result<TrialOutcome, String> {
    let mut rng = super::rng::SimRng::from_seed(seed);
    let client_phase = rng.randrange(TICK_PHASE_RANGE_NS) as Ns;
    let server_phase = rng.randrange(TICK_PHASE_RANGE_NS) as Ns;
    let p = get_personality(&cfg.personality).ok_or_else(|| format!("unknown personality {:?}", cfg.personality))?;
    let path = match preset(&cfg.link) {
        Some(pre) => (cfg.rate_bps.unwrap_or(pre.rate_bps), cfg.delay_ns.unwrap_or(pre.delay_ns), cfg.mtu.unwrap_or(pre.mtu)),
        None => return Err(format!("unknown link preset {:?} for naglemark", cfg.link)),
    };
    if path.0 <= 0 || path.1 < 0 || path.2 < 68 {
        return Err(format!("naglemark: the path needs a positive rate, a delay >= 0 and an MTU >= 68, got {path:?}"));
    }
    if cfg.think_ns < 0 {
        return Err(format!("naglemark: think time must not be negative, got {}", cfg.think_ns));
    }
    if cfg.sockbuf == 0 || cfg.app_buf == 0 || cfg.lengths.is_empty() {
        return Err("naglemark: sockbuf, app_buf and the lengths must be positive / non-empty".into());
    }
    let mut net = Net::new(rng);
    net.naglemark = Some(Box::new(Naglemark {
        p,
        link: cfg.link.clone(),
        path,
        variant: cfg.variant,
        sockbuf: cfg.sockbuf,
        infer: cfg.receiver_inference,
        per_request: cfg.per_request,
        app_buf: cfg.app_buf,
        think_ns: cfg.think_ns,
        client_phase,
        server_phase,
        lengths: cfg.lengths.clone(),
        samples: Vec::with_capacity(cfg.lengths.len()),
        server_queue: VecDeque::new(),
        length: 0,
        received: 0,
        t0: 0,
        connections: 0,
        pairs: Vec::new(),
        finished: None,
        error: None,
        record: cfg.record,
        stalls: Vec::new(),
    }));
    if cfg.record {
        net.tapped = Tapped::Servers;
    }
    net.schedule(0, Event::Start); // the client's first connect, at t = 0
    let mut ran: u64 = 0;
    while let Some((now, ev)) = net.queue.pop(Ns::MAX) {
        match ev {
            Event::Host(i, hev) => with_host(&mut net, i, |h, net| h.handle(net, now, hev)),
            Event::App(i, aev) => with_host(&mut net, i, |h, net| super::app::handle(h, net, now, aev)),
            Event::Link(l, seg) => {
                let to = net.deliver_to(now, l, &seg);
                with_host(&mut net, to, |h, net| h.receive(net, now, seg));
            }
            Event::Start => connect(&mut net, now), // the first, and each after a think time
            Event::Retire(k) => {
                let (a, b) = nm(&mut net).pairs[k as usize];
                for i in [a, b] {
                    with_host(&mut net, i, |h, net| h.stop(net));
                }
            }
            Event::Watchdog => unreachable!("naglemark has no watchdog"),
        }
        ran += 1;
        if let Some(e) = nm(&mut net).error.take() {
            return Err(e);
        }
        if ran.is_multiple_of(SLICE_EVENTS) && nm(&mut net).finished.is_some() {
            break;
        }
    }
    let state = net.naglemark.take().expect("naglemark state");
    let Some(finished_ns) = state.finished else {
        return Err(format!(
            "naglemark trial stopped after {} of {} responses at t={} ns",
            state.samples.len(),
            state.lengths.len(),
            net.now()
        ));
    };
    // The taps' records: sorted by time, connection (src >> 1: hosts 2k and 2k + 1) and arrival
    // before emission; a stable sort keeps each tap's own order.
    let [out, inn] = std::mem::take(&mut net.taps);
    let mut records: Vec<(Ns, bool, Segment)> =
        inn.into_iter().map(|(t, s)| (t, false, s)).chain(out.into_iter().map(|(t, s)| (t, true, s))).collect();
    records.sort_by_key(|(t, emitted, s)| (*t, s.src >> 1, *emitted));
    Ok(TrialOutcome {
        samples: state.samples,
        finished_ns,
        events: net.queue.events_run(),
        now: net.now(),
        connections: state.connections,
        records: records.into_iter().map(|(t, _, s)| (t, s)).collect(),
        stalls: state.stalls,
        drops: std::mem::take(&mut net.drops),
    })
}
