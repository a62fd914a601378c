//! A bulk run (the sender writes `bytes`, in writes of one size or on a schedule of timed writes;
//! the receiver reads them, with replies when asked) over
//! a link preset with the path's impairments (loss stages, the ATM switch port, the PMTU hop and
//! the jumbo-slot NIC): builds the two hosts, the path and the apps, runs the event loop with the
//! watchdog, and collects the trace, the stalls and the counters. The run's seed draws each host's
//! tick phase and ISN before the first event, then the draws made during the run.

use super::app::{self, App, BulkReader, BulkWriter};
use super::atm::{AtmSwitchPath, CellSwitchBuffer, Policy};
use super::engine::{Ns, NS_PER_MS, NS_PER_S};
use super::ground_truth::{Drop, Stall};
use super::link::{preset, SerialLink};
use super::nagle::NagleVariant;
use super::net::{Event, Net, PathStages, Tapped, ASIDE, RECEIVER, SENDER};
use super::nic::{JumboNic, JumboSlotPool};
use super::pmtu::{Mode, PmtuHop, PmtuStage};
use super::rng::SimRng;
use super::segment::Segment;
use super::stage::{LossModel, LossStage, Replay, REASON_GILBERT_LOSS, REASON_INJECTED_LOSS, REASON_RANDOM_LOSS};
use super::tcp::costs::HostCost;
use super::tcp::host::{Host, HostConfig, PeerWindow};
use super::tcp::personality::get_personality;
use super::tcp::state::TcpState;

pub const MAX_SIM_NS: Ns = 4 * 3600 * NS_PER_S;

/// The bulk run's two ends (sender, receiver) as "addr:port", the stalls' directions.
pub const ENDPOINTS: [&str; 2] = ["10.0.0.1:40000", "10.0.0.2:5001"];

/// A bulk run's configuration: the stacks, the link preset and its overrides, buffers, write and
/// read sizes, the hosts' costs and TCP options, and the path's impairments.
#[derive(Clone, Debug)]
pub struct BulkRun {
    pub personality: String,
    pub receiver_personality: Option<String>,
    pub link: String,
    pub mtu: Option<u32>,
    pub mss: Option<u32>,
    pub sndbuf: Option<u32>,
    pub rcvbuf: Option<u32>,
    pub write: u64,
    pub read: u64,
    pub bytes: u64,
    pub nagle: Option<String>,
    pub receiver_nagle: Option<String>,
    pub receiver_inference: Option<bool>,
    pub rate_bps: Option<i64>,
    pub delay_ns: Option<Ns>,
    pub queue_bytes: Option<u64>,
    pub cost: HostCost,
    pub think_ns: Ns,
    pub reply: u64,
    /// Scheduled writes, (at_ns after the connection opened at the sender, nbytes): write i is
    /// issued at that time or when write i - 1 completed, whichever is later (app.rs). Their sizes
    /// must add up to `bytes`, and think_ns be 0; `write` then only sizes nothing (the reader
    /// answers each scheduled write as a message when `reply` > 0). None: write(`write`) in a loop.
    pub writes: Option<Vec<(Ns, u64)>>,
    pub route_mtu: Option<u32>,
    pub advertised_mss: Option<u32>,
    pub host_mtu: Option<u32>,
    pub mtu_probing: u8,
    /// Both hosts offer SACK (RFC 2018); None: the personality's.
    pub sack: Option<bool>,
    /// The sender's congestion control, "reno" (RFC 5681) or "cubic" (RFC 9438); None: the
    /// personality's.
    pub congestion: Option<String>,
    /// Where the capture is taken: beside the sender (false) or beside the receiver (true): its
    /// records are then the receiver's ACKs as they leave and the data as it arrives.
    pub tap_receiver: bool,
    /// The path's impairments; one not wanted is None (the caller maps a zero or empty setting
    /// to None).
    pub impair: Impairments,
}

/// The path's impairments: forward segment-exact drops, random loss, Gilbert-Elliott loss and
/// drop-nth (stages in that order, the last three with loss_data_only), reverse ACK-exact drops
/// and random loss, a reverse link rate, the ATM switch port (replacing the forward link), the
/// PMTU hop and the jumbo-slot NIC.
#[derive(Clone, Debug, Default)]
pub struct Impairments {
    /// (s, k): the forward path loses the k-th transmission (k >= 1) of the data segment whose
    /// first byte is the stream's byte s (sequence number s + the sender's ISN + 1). The stage
    /// comes first, so k counts what the sender sent. A segment starting elsewhere (one
    /// repacketized across s) is not matched.
    pub drop_segments: Option<Vec<(i64, u32)>>,
    pub loss: Option<f64>,
    pub gilbert: Option<(f64, f64, f64, f64)>,
    pub drop_nth: Option<Vec<u64>>,
    pub loss_data_only: bool,
    /// (a, k): the reverse path loses the k-th pure ACK (no data, SYN, FIN or RST; window updates
    /// count) whose ack number acknowledges the stream's bytes before a (ack = a + the sender's
    /// ISN + 1). First on the reverse path, like drop_segments on the forward one.
    pub drop_acks: Option<Vec<(i64, u32)>>,
    pub reverse_loss: Option<f64>,
    pub reverse_rate_bps: Option<i64>,
    pub atm_switch: Option<AtmSpec>,
    pub pmtu: Option<PmtuSpec>,
    pub jumbo: Option<JumboSpec>,
}

/// The ATM switch output port that replaces the forward link: its buffer, cell rate, discard
/// policy ("none", "ppd" or "epd", docs/tcp-rules.md#atm-cell-discard) and the delay beyond it.
#[derive(Clone, Debug)]
pub struct AtmSpec {
    pub buffer_bytes: i64,
    pub out_rate_bps: i64,
    pub policy: String,
    pub epd_threshold_cells: Option<i64>,
    pub out_delay_ns: Ns,
}

/// A hop with a smaller MTU, mode "icmp" or "blackhole" (docs/tcp-rules.md#path-mtu); with
/// "icmp" the hop's ICMP goes to the sender.
#[derive(Clone, Debug)]
pub struct PmtuSpec {
    pub mtu: u32,
    pub mode: String,
}

/// The receiving NIC's jumbo slots (docs/tcp-rules.md#nic-jumbo-receive-slots): how many, the
/// smallest frame that needs one, how long a freed slot takes to come back, and whether a slot is
/// held until the ACK covers its frame (the caller applies the defaults).
#[derive(Clone, Debug)]
pub struct JumboSpec {
    pub slots: i64,
    pub min_frame_len: i64,
    pub replenish_ns: Ns,
    pub hold_until_acked: bool,
}

/// The draws made before the first event: each host's delayed-ACK tick phase (independent
/// clocks) and initial sequence number, sender first.
#[derive(Clone, Copy, Debug)]
pub struct Draws {
    pub sender_tick_phase: Ns,
    pub sender_iss: i64,
    pub receiver_tick_phase: Ns,
    pub receiver_iss: i64,
}

#[derive(Clone, Debug, Default)]
pub struct HostSummary {
    pub segments_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub maxseg: u64,
    pub sndbuf: u64,
    pub rcvbuf: u64,
    pub rx_fifo_drops: u64,
    pub icmp_mss_changes: u64,
    pub aborted_at: Option<Ns>,
}

pub struct BulkOutcome {
    pub started_at: Option<Ns>,
    pub finished_at: Option<Ns>,
    /// Simulated time when the run ended: MAX_SIM_NS, the clock runs to the horizon once the
    /// queue has drained (so a run that never finished lasts the whole horizon).
    pub now: Ns,
    pub events: u64,
    pub received: u64,
    /// Both taps merged by time; at equal times the arrival comes first (a stable sort).
    pub records: Vec<(Ns, Segment)>,
    /// Both hosts' stalls, ordered by (end, start, direction).
    pub stalls: Vec<Stall>,
    pub drops: Vec<Drop>,
    pub sender: HostSummary,
    pub receiver: HostSummary,
    pub path_mtu: u32,
    /// The path stages' state after the run, for the counters the result reports.
    pub path: PathStages,
    /// Loss stages (forward, reverse) and the (sent_packets, sent_bytes) of the two serial links.
    pub loss_stages: [Vec<LossStage>; 2],
    pub link_sent: [(u64, u64); 2],
}

/// The sender's congestion control by name: "reno", or "cubic" only where cwnd counts packets.
fn cubic_of(name: &Option<String>, p: &crate::sim::tcp::personality::Personality) -> Result<Option<bool>, String> {
    match name.as_deref() {
        None => Ok(None),
        Some("reno") => Ok(Some(false)),
        Some("cubic") if p.linux_ca => Ok(Some(true)),
        Some(n) => Err(format!("congestion control {n:?} is not available on {}", p.name)),
    }
}

fn nagle_of(name: &Option<String>) -> Result<Option<NagleVariant>, String> {
    match name {
        None => Ok(None),
        Some(n) if n.is_empty() => Ok(None),
        Some(n) => NagleVariant::parse(n).map(Some).ok_or_else(|| format!("unknown Nagle variant {n:?}")),
    }
}

fn summary(h: &Host) -> HostSummary {
    HostSummary {
        segments_sent: h.segments_sent,
        retransmits: h.retransmits,
        timeouts: h.timeouts,
        maxseg: h.maxseg as u64,
        sndbuf: h.sndbuf as u64,
        rcvbuf: h.rcvbuf as u64,
        rx_fifo_drops: h.rx_drops.len() as u64,
        icmp_mss_changes: h.icmp_mss_changes,
        aborted_at: h.aborted_at,
    }
}

impl Draws {
    fn from(rng: &mut SimRng) -> Draws {
        Draws {
            sender_tick_phase: rng.randrange(NS_PER_S as u64) as Ns,
            sender_iss: rng.randrange(1 << 32) as i64,
            receiver_tick_phase: rng.randrange(NS_PER_S as u64) as Ns,
            receiver_iss: rng.randrange(1 << 32) as i64,
        }
    }
}

/// One bulk run with the given seed.
pub fn run_bulk(cfg: &BulkRun, seed: i64) -> Result<BulkOutcome, String> {
    let mut rng = SimRng::from_seed(seed);
    let draws = Draws::from(&mut rng);
    let send_p = get_personality(&cfg.personality)
        .ok_or_else(|| format!("unknown personality {:?}", cfg.personality))?;
    let recv_name = cfg.receiver_personality.as_deref().unwrap_or(&cfg.personality);
    let recv_p = get_personality(recv_name).ok_or_else(|| format!("unknown personality {recv_name:?}"))?;
    let p = preset(&cfg.link).ok_or_else(|| format!("unknown link {:?}", cfg.link))?;
    let rate = cfg.rate_bps.unwrap_or(p.rate_bps);
    let delay = cfg.delay_ns.unwrap_or(p.delay_ns);
    let mtu = cfg.mtu.unwrap_or(p.mtu);
    if rate <= 0 {
        return Err(format!("link {:?} needs a positive rate_bps", cfg.link));
    }
    let rtt = 2 * delay;
    let threshold = (10 * NS_PER_MS).max(2 * rtt);
    let host_mtu = cfg.host_mtu.unwrap_or(mtu);
    // Building the path draws no randomness and schedules nothing, so it can come first.
    // With an ATM switch the forward SerialLink stays in its slot unused (the path replaces it).
    let im = &cfg.impair;
    let fwd = SerialLink::new(format!("{}-fwd", cfg.link), rate, delay, mtu, cfg.queue_bytes, p.framing)?;
    let rev_rate = im.reverse_rate_bps.unwrap_or(im.atm_switch.as_ref().map_or(rate, |a| a.out_rate_bps));
    let rev_delay = delay + im.atm_switch.as_ref().map_or(0, |a| a.out_delay_ns);
    let rev = SerialLink::new(format!("{}-rev", cfg.link), rev_rate, rev_delay, mtu, cfg.queue_bytes, p.framing)?;
    let mut net = Net::new(rng);
    net.connect_pair(SENDER, RECEIVER, fwd, rev);
    // The replay stages count stream offsets from the sender's first data byte (its ISN + 1).
    let (fwd_stages, rev_stages) = loss_stages(&cfg.link, im, draws.sender_iss + 1);
    net.stages[0] = fwd_stages;
    net.stages[1] = rev_stages;
    net.path = path_stages(&cfg.link, im, rate, delay, mtu, net.out_link[usize::from(SENDER)], net.out_link[usize::from(RECEIVER)])?;
    net.tapped = Tapped::One(if cfg.tap_receiver { RECEIVER } else { SENDER });
    net.rx_drops_logged = Some(RECEIVER);
    // The sender judges whether its send buffer can trigger the receiver's window update
    // (PeerWindow) before the receiver is up: it is given the receiver's initial buffer size.
    let receiver_rcvbuf = cfg.rcvbuf.unwrap_or(recv_p.default_rcvbuf as u32);
    let sender_cfg = HostConfig {
        index: SENDER,
        personality: send_p.name,
        mtu: host_mtu,
        sndbuf: cfg.sndbuf,
        rcvbuf: cfg.rcvbuf,
        route_mtu: cfg.route_mtu,
        mss: cfg.mss,
        advertised_mss: cfg.advertised_mss,
        mtu_probing: cfg.mtu_probing,
        sack: cfg.sack,
        cubic: cubic_of(&cfg.congestion, send_p)?,
        nagle: nagle_of(&cfg.nagle)?,
        receiver_inference: None,
        read_scheduling: None,
        cost: cfg.cost,
        record_stalls: true,
        stall_threshold_ns: threshold,
        tick_phase_ns: draws.sender_tick_phase,
        uid_base: 0,
        iss: draws.sender_iss,
        peer_window: PeerWindow::Fixed(recv_p.window_update, receiver_rcvbuf),
        direction: format!("{} -> {}", ENDPOINTS[0], ENDPOINTS[1]),
    };
    let receiver_cfg = HostConfig {
        index: RECEIVER,
        personality: recv_p.name,
        mtu: host_mtu,
        sndbuf: cfg.sndbuf,
        rcvbuf: cfg.rcvbuf,
        route_mtu: None,
        mss: cfg.mss,
        advertised_mss: None,
        mtu_probing: 0,
        sack: cfg.sack,
        cubic: None,
        nagle: nagle_of(&cfg.receiver_nagle)?,
        receiver_inference: cfg.receiver_inference,
        read_scheduling: None,
        cost: cfg.cost,
        record_stalls: true,
        stall_threshold_ns: threshold,
        tick_phase_ns: draws.receiver_tick_phase,
        uid_base: 1 << 40,
        iss: draws.receiver_iss,
        peer_window: PeerWindow::Unknown,
        direction: format!("{} -> {}", ENDPOINTS[1], ENDPOINTS[0]),
    };
    let sender = Host::new(sender_cfg, &mut net);
    let receiver = Host::new(receiver_cfg, &mut net);
    let mut hosts = [sender, receiver];
    let (writer, reader) = bulk_apps(cfg)?;
    hosts[0].app = App::BulkWriter(writer);
    hosts[1].app = App::BulkReader(reader);
    hosts[1].listen();
    net.schedule(0, Event::Start);
    net.schedule(NS_PER_S, Event::Watchdog);
    run_loop(&mut hosts, &mut net);
    net.queue.advance_to(MAX_SIM_NS);

    let received = match &hosts[1].app {
        App::BulkReader(r) => r.received,
        _ => 0,
    };
    let [out, inn] = std::mem::take(&mut net.taps);
    let records = merge_by_time(out, inn);
    // Both hosts record (the replying host's stalls too): one fixed order, by end, start and
    // direction (a stable sort, so the sender's first on a full tie).
    let mut stalls = std::mem::take(&mut hosts[0].stalls);
    stalls.append(&mut hosts[1].stalls);
    stalls.sort_by(|a, b| (a.end_ns, a.start_ns, &a.direction).cmp(&(b.end_ns, b.start_ns, &b.direction)));
    let link_sent = [(net.links[0].sent_packets, net.links[0].sent_bytes), (net.links[1].sent_packets, net.links[1].sent_bytes)];
    Ok(BulkOutcome {
        started_at: net.started_at,
        finished_at: net.finished_at,
        now: net.now(),
        events: net.queue.events_run(),
        received,
        records,
        stalls,
        drops: std::mem::take(&mut net.drops),
        sender: summary(&hosts[0]),
        receiver: summary(&hosts[1]),
        path_mtu: mtu,
        path: std::mem::take(&mut net.path),
        loss_stages: [std::mem::take(&mut net.stages[0]), std::mem::take(&mut net.stages[1])],
        link_sent,
    })
}

/// The sender's writer (a loop of equal writes, or the schedule) and the receiver's reader, which
/// answers each write as a message when the run has replies.
fn bulk_apps(cfg: &BulkRun) -> Result<(BulkWriter, BulkReader), String> {
    let mut reader = BulkReader::new(cfg.read, cfg.bytes, cfg.write, cfg.reply)?;
    let Some(writes) = &cfg.writes else {
        return Ok((BulkWriter::new(cfg.bytes, cfg.write, cfg.think_ns, cfg.reply)?, reader));
    };
    if cfg.think_ns != 0 {
        return Err(format!("think_ns must be 0 with scheduled writes (got {})", cfg.think_ns));
    }
    let writer = BulkWriter::scheduled(writes.clone(), cfg.reply)?;
    if writer.total != cfg.bytes {
        return Err(format!("bytes={} must equal the sum of the writes' sizes ({})", cfg.bytes, writer.total));
    }
    reader.messages = writer.message_sizes();
    Ok((writer, reader))
}

/// The forward path's ATM switch port, PMTU hop and jumbo NIC (with its ACK watcher on the
/// reverse link).
fn path_stages(name: &str, im: &Impairments, rate: i64, delay: Ns, mtu: u32, fwd: u32, rev: u32) -> Result<PathStages, String> {
    let mut path = PathStages::default();
    if let Some(a) = &im.atm_switch {
        let policy = Policy::parse(&a.policy).ok_or_else(|| format!("unknown discard policy {:?}", a.policy))?;
        let switch = CellSwitchBuffer::new(a.buffer_bytes / 48, a.out_rate_bps, policy, a.epd_threshold_cells)?;
        path.atm = Some((fwd, AtmSwitchPath::new(format!("{name}-switch"), rate, delay, switch, a.out_delay_ns, mtu)));
    }
    if let Some(h) = &im.pmtu {
        let mode = Mode::parse(&h.mode).ok_or_else(|| format!("unknown pmtu mode {:?}", h.mode))?;
        let hop = PmtuHop::new(h.mtu, mode)?;
        let sink = (mode == Mode::Icmp).then_some(SENDER); // the ICMP goes back to the sender (RFC 1191)
        path.pmtu = Some((fwd, PmtuStage { name: format!("{name}-pmtu"), hop, icmp_sink: sink, icmp_delay_ns: delay, icmp_sent: 0 }));
    }
    if let Some(j) = &im.jumbo {
        let pool = JumboSlotPool::new(j.slots, j.min_frame_len, j.replenish_ns)?;
        path.nic = Some((fwd, rev, JumboNic::new(format!("{name}-nic"), pool, j.hold_until_acked)));
    }
    Ok(path)
}

/// The loss stages of (forward, reverse), in the order a packet meets them; `base` is the
/// sequence number of the sender's first data byte (the replay stages count from it).
fn loss_stages(name: &str, im: &Impairments, base: i64) -> (Vec<LossStage>, Vec<LossStage>) {
    let fwd_place = format!("{name}-fwd-loss");
    let rev_place = format!("{name}-rev-loss");
    let stage = |model, reason, place: &String, data_only| LossStage { model, reason, place: place.clone(), data_only, offered: 0, lost: 0 };
    let mut fwd = Vec::new();
    if let Some(pairs) = &im.drop_segments {
        fwd.push(stage(LossModel::Segments(Replay::new(base, pairs)), REASON_INJECTED_LOSS, &fwd_place, true));
    }
    if let Some(p) = im.loss {
        fwd.push(stage(LossModel::Random { p }, REASON_RANDOM_LOSS, &fwd_place, im.loss_data_only));
    }
    if let Some((p_gb, p_bg, loss_good, loss_bad)) = im.gilbert {
        let model = LossModel::Gilbert { p_gb, p_bg, loss_good, loss_bad, bad: false };
        fwd.push(stage(model, REASON_GILBERT_LOSS, &fwd_place, im.loss_data_only));
    }
    if let Some(indices) = &im.drop_nth {
        let model = LossModel::Nth { indices: indices.clone(), offered: 0 };
        fwd.push(stage(model, REASON_INJECTED_LOSS, &fwd_place, im.loss_data_only));
    }
    let mut rev = Vec::new();
    if let Some(pairs) = &im.drop_acks {
        rev.push(stage(LossModel::Acks(Replay::new(base, pairs)), REASON_INJECTED_LOSS, &rev_place, false));
    }
    if let Some(p) = im.reverse_loss {
        rev.push(stage(LossModel::Random { p }, REASON_RANDOM_LOSS, &rev_place, false));
    }
    (fwd, rev)
}

fn run_loop(hosts: &mut [Host; 2], net: &mut Net) {
    while let Some((now, ev)) = net.queue.pop(MAX_SIM_NS) {
        match ev {
            Event::Host(i, hev) => hosts[usize::from(i)].handle(net, now, hev),
            Event::App(i, aev) => app::handle(&mut hosts[usize::from(i)], net, now, aev),
            Event::Link(code, seg) if code >= ASIDE => {
                if let Some((to, mtu)) = net.aside(now, code, &seg) {
                    hosts[usize::from(to)].on_icmp_frag_needed(net, now, mtu);
                }
            }
            Event::Link(l, seg) => {
                if !net.pass_stages(now, l, &seg) {
                    continue;
                }
                let to = net.deliver_to(now, l, &seg);
                hosts[usize::from(to)].receive(net, now, seg);
            }
            Event::Start => hosts[0].connect(net, now),
            Event::Watchdog => watchdog(hosts, net, now),
            Event::Retire(_) => unreachable!("run_bulk retires no hosts"),
        }
    }
}

/// run_bulk's watchdog: stop both hosts once the transfer is over (or hopeless) so the queue drains.
fn watchdog(hosts: &mut [Host; 2], net: &mut Net, now: Ns) {
    let finished = net.finished_at;
    let rstate = hosts[1].state;
    if (finished.is_some() && matches!(rstate, TcpState::Closed | TcpState::LastAck)) || now >= MAX_SIM_NS {
        hosts[0].stop(net);
        hosts[1].stop(net);
        return;
    }
    if let Some(at) = finished {
        if now - at > 5 * NS_PER_S {
            hosts[0].stop(net);
            hosts[1].stop(net);
            return;
        }
    }
    if hosts[0].stopped && net.started_at.is_none() {
        hosts[1].stop(net); // the sender gave up opening the connection
        return;
    }
    if hosts[0].stopped && hosts[1].stopped {
        return;
    }
    net.schedule(now + NS_PER_S, Event::Watchdog);
}

/// The tap's two time-ordered lists merged by time: at equal times an arrival comes before an
/// emission (cause before effect).
fn merge_by_time(out: Vec<(Ns, Segment)>, inn: Vec<(Ns, Segment)>) -> Vec<(Ns, Segment)> {
    let mut merged = Vec::with_capacity(out.len() + inn.len());
    let mut a = out.into_iter().peekable();
    let mut b = inn.into_iter().peekable();
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => x.0 < y.0,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        merged.push(if take_a { a.next() } else { b.next() }.expect("peeked"));
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::segment::{PSH, SYN};
    use crate::sim::tcp::costs::FREE;

    fn run(personality: &str, bytes: u64) -> BulkRun {
        BulkRun {
            personality: personality.into(), receiver_personality: None, link: "fastethernet".into(), mtu: None,
            mss: None, sndbuf: None, rcvbuf: None, write: 8192, read: 8192, bytes, nagle: None, receiver_nagle: None,
            receiver_inference: None, rate_bps: None, delay_ns: Some(5 * NS_PER_MS), queue_bytes: None, cost: FREE,
            think_ns: 0, reply: 0, writes: None, route_mtu: None, advertised_mss: None, host_mtu: None,
            mtu_probing: 0, sack: None, congestion: None, tap_receiver: false, impair: Impairments::default(),
        }
    }

    /// The sender's SYN's sequence number + 1: the stream's byte 0.
    fn base(out: &BulkOutcome) -> i64 {
        out.records.iter().find(|(_, s)| s.src == SENDER && s.flags & SYN != 0).expect("a SYN").1.seq + 1
    }

    fn data(out: &BulkOutcome) -> Vec<(Ns, i64, u32, u8)> {
        let b = base(out);
        out.records.iter().filter(|(_, s)| s.src == SENDER && s.payload_len > 0).map(|(t, s)| (*t, s.seq - b, s.payload_len, s.flags)).collect()
    }

    #[test]
    fn scheduled_writes_go_out_at_their_times() {
        let ms = NS_PER_MS;
        let writes = vec![(0, 1000), (50 * ms, 3000), (200 * ms, 500), (200 * ms, 700)];
        let mut cfg = run("linux", 5200);
        cfg.writes = Some(writes.clone());
        let out = run_bulk(&cfg, 3).unwrap();
        assert_eq!(out.received, 5200);
        let started = out.started_at.unwrap();
        let sent = data(&out);
        let mut offset = 0;
        for (i, &(at, n)) in writes.iter().enumerate() {
            let first = sent.iter().find(|d| d.1 == offset).unwrap_or_else(|| panic!("write {i} not sent"));
            // The previous writes are acknowledged long before (10 ms RTT): each goes out at once.
            if i != 3 {
                assert_eq!(first.0 - started, at, "write {i}");
            }
            offset += n as i64;
        }
        // Every segment ends with its write (PSH), except where two writes coalesced.
        let ends: Vec<i64> = sent.iter().filter(|d| d.3 & PSH != 0).map(|d| d.1 + i64::from(d.2)).collect();
        for end in [1000, 4000] {
            assert!(ends.contains(&end), "no PSH at {end}: {ends:?}");
        }
        assert_eq!(ends.last(), Some(&5200));
    }

    #[test]
    fn a_write_late_for_its_time_waits_for_the_previous() {
        // 1 MB at 100 Mbit/s takes about 84 ms; the second write's time (10 ms) has passed by then.
        let mut cfg = run("linux", 1_000_100);
        cfg.sndbuf = Some(65536);
        cfg.writes = Some(vec![(0, 1_000_000), (10 * NS_PER_MS, 100)]);
        let out = run_bulk(&cfg, 1).unwrap();
        assert_eq!(out.received, 1_000_100);
        let sent = data(&out);
        let last = sent.iter().find(|d| d.1 <= 1_000_000 && 1_000_000 < d.1 + i64::from(d.2)).expect("the second write");
        assert!(last.0 - out.started_at.unwrap() > 50 * NS_PER_MS);
    }

    #[test]
    fn scheduled_writes_are_checked() {
        let mut cfg = run("linux", 100);
        cfg.writes = Some(vec![(0, 60), (5, 60)]);
        assert!(run_bulk(&cfg, 1).err().unwrap().contains("bytes=100 must equal the sum"));
        cfg.writes = Some(vec![(5, 50), (0, 50)]);
        assert!(run_bulk(&cfg, 1).err().unwrap().contains("writes[1]"));
        cfg.writes = Some(vec![(0, 100)]);
        cfg.think_ns = 1;
        assert!(run_bulk(&cfg, 1).err().unwrap().contains("think_ns"));
    }

    #[test]
    fn scheduled_writes_with_replies_answer_each_write() {
        let ms = NS_PER_MS;
        let mut cfg = run("bsd44", 3000);
        cfg.reply = 100;
        cfg.writes = Some(vec![(0, 500), (ms, 1500), (30 * ms, 1000)]);
        let out = run_bulk(&cfg, 2).unwrap();
        assert_eq!(out.received, 3000);
        // Two replies (the last write is not answered), 100 bytes each.
        let replied: u32 = out.records.iter().filter(|(_, s)| s.src == RECEIVER).map(|(_, s)| s.payload_len).sum();
        assert_eq!(replied, 200);
        // The second write waits for the first one's reply (an RTT and more), not its 1 ms.
        let sent = data(&out);
        let second = sent.iter().find(|d| d.1 == 500).unwrap();
        assert!(second.0 - out.started_at.unwrap() >= 10 * ms);
    }

    /// TCP_CORK (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay): a write loop is one
    /// message, so only full segments go until its last write uncorks the tail.
    #[test]
    fn cork_coalesces_a_write_loop_and_pushes_the_tail_at_its_end() {
        let mut cfg = run("linux", 10_000);
        cfg.write = 1000;
        cfg.nagle = Some("CORK".into());
        let out = run_bulk(&cfg, 1).unwrap();
        assert_eq!(out.received, 10_000);
        let lens: Vec<u32> = data(&out).iter().map(|d| d.2).collect();
        assert_eq!(lens, [1448, 1448, 1448, 1448, 1448, 1448, 1312]); // MSS 1460 less the timestamps
        // No timer held the tail: the transfer takes a few round trips of 10 ms.
        assert!(out.finished_at.unwrap() - out.started_at.unwrap() < 50 * NS_PER_MS);
    }

    #[test]
    fn cork_uncorks_at_each_message_end() {
        // Each scheduled write is a message: its tail leaves when the write is in, not later.
        let ms = NS_PER_MS;
        let mut cfg = run("linux", 4000);
        cfg.nagle = Some("CORK".into());
        cfg.writes = Some(vec![(0, 1000), (50 * ms, 3000)]);
        let out = run_bulk(&cfg, 2).unwrap();
        assert_eq!(out.received, 4000);
        let started = out.started_at.unwrap();
        let sent: Vec<(Ns, i64, u32)> = data(&out).iter().map(|d| (d.0 - started, d.1, d.2)).collect();
        assert_eq!(sent, [(0, 0, 1000), (50 * ms, 1000, 1448), (50 * ms, 2448, 1448), (50 * ms, 3896, 104)]);
    }

    #[test]
    fn cork_pushes_when_the_writer_waits_for_buffer_space() {
        // A 4 KB send buffer under a 9000-byte MTU never holds a full segment: each write that
        // fills it pushes what it copied (tcp_sendmsg's wait_for_space), no probe timer waits.
        let mut cfg = run("linux", 20_000);
        cfg.link = "gige".into();
        cfg.mtu = Some(9000);
        cfg.sndbuf = Some(4096);
        cfg.write = 3000;
        cfg.nagle = Some("CORK".into());
        let out = run_bulk(&cfg, 4).unwrap();
        assert_eq!(out.received, 20_000);
        // Linux doubles SO_SNDBUF: 8192-byte partial frames, one per round trip.
        let lens: Vec<u32> = data(&out).iter().map(|d| d.2).collect();
        assert_eq!(lens, [8192, 8192, 3616]);
        assert!(out.finished_at.unwrap() - out.started_at.unwrap() < 100 * NS_PER_MS);
    }

    #[test]
    fn cork_ceiling_releases_a_held_frame_after_the_linux_probe_timer() {
        // One message written slowly: 1000-byte writes taking 300 ms each to copy. The first is
        // corked on an idle connection; Linux's probe timer (max(RTO, 200 ms), RTO here 200 ms
        // plus the 10 ms round trip) sends it, not the BSD persist timer's 5 s.
        let ms = NS_PER_MS;
        let mut cfg = run("linux", 3000);
        cfg.write = 1000;
        cfg.nagle = Some("CORK".into());
        cfg.cost = HostCost { write_copy_ns_per_kb: 307_200_000, ..FREE };
        let out = run_bulk(&cfg, 3).unwrap();
        assert_eq!(out.received, 3000);
        let started = out.started_at.unwrap();
        let first = data(&out)[0];
        assert_eq!((first.1, first.2), (0, 1000));
        let after_write = first.0 - started - 300 * ms;
        assert!((200 * ms..260 * ms).contains(&after_write), "held {after_write} ns after the write");
        // Without CORK (Linux Nagle) the same write leaves at once.
        cfg.nagle = None;
        let plain = run_bulk(&cfg, 3).unwrap();
        assert_eq!(data(&plain)[0].0 - plain.started_at.unwrap(), 300 * ms);
    }

    fn drop_segments_case(personality: &str, sack: bool) {
        let mut cfg = run(personality, 100_000);
        cfg.sack = Some(sack);
        let s1 = data(&run_bulk(&cfg, 5).unwrap())[5].1;
        // The segments after a loss are cut where the recovery cuts them: the second named
        // segment is one the run with the first losses sent.
        cfg.impair.drop_segments = Some(vec![(s1, 1), (s1, 2)]);
        let probe = run_bulk(&cfg, 5).unwrap();
        let sent = data(&probe);
        let s2 = sent[sent.iter().rposition(|d| d.1 == s1).unwrap() + 10].1;
        cfg.impair.drop_segments = Some(vec![(s1, 1), (s1, 2), (s2, 1)]);
        let out = run_bulk(&cfg, 5).unwrap();
        assert_eq!(out.received, 100_000);
        let b = base(&out);
        let dropped: Vec<(i64, &str)> = out.drops.iter().map(|d| (d.seq - b, d.reason)).collect();
        assert_eq!(dropped, vec![(s1, REASON_INJECTED_LOSS), (s1, REASON_INJECTED_LOSS), (s2, REASON_INJECTED_LOSS)]);
        assert!(out.drops.iter().all(|d| d.flow_src == SENDER && d.place == "fastethernet-fwd-loss"));
        let sent = data(&out);
        assert!(sent.iter().filter(|d| d.1 == s1).count() >= 3, "{personality}: {s1} sent fewer than three times");
        assert!(sent.iter().filter(|d| d.1 == s2).count() >= 2);
        assert_eq!(out.loss_stages[0].len(), 1);
        assert_eq!(out.loss_stages[0][0].lost, 3);
    }

    #[test]
    fn drop_segments_drop_the_named_transmissions_with_sack() {
        drop_segments_case("linux", true);
    }

    #[test]
    fn drop_segments_drop_the_named_transmissions_without_sack() {
        drop_segments_case("sunos41", false);
    }

    #[test]
    fn drop_acks_drop_the_named_pure_ack() {
        let mut cfg = run("linux", 50_000);
        let probe = run_bulk(&cfg, 4).unwrap();
        let b = base(&probe);
        let acks: Vec<i64> = probe.records.iter().filter(|(_, s)| s.src == RECEIVER && s.payload_len == 0 && s.flags & SYN == 0).map(|(_, s)| s.ack - b).collect();
        let a = acks[3];
        cfg.impair.drop_acks = Some(vec![(a, 1)]);
        let out = run_bulk(&cfg, 4).unwrap();
        assert_eq!(out.received, 50_000);
        assert_eq!(out.drops.len(), 1);
        let d = &out.drops[0];
        assert_eq!((d.flow_src, d.reason, d.payload_len), (RECEIVER, REASON_INJECTED_LOSS, 0));
        assert_eq!(d.place, "fastethernet-rev-loss");
    }

    #[test]
    fn without_replay_the_stages_are_as_before() {
        let mut cfg = run("linux", 10_000);
        cfg.impair.drop_nth = Some(vec![4]);
        let (fwd, rev) = loss_stages("x", &cfg.impair, 0);
        assert_eq!((fwd.len(), rev.len()), (1, 0));
        cfg.impair.drop_segments = Some(vec![(0, 1)]);
        cfg.impair.drop_acks = Some(vec![(0, 1)]);
        let (fwd, rev) = loss_stages("x", &cfg.impair, 0);
        assert!(matches!(fwd[0].model, LossModel::Segments(_)) && matches!(fwd[1].model, LossModel::Nth { .. }));
        assert!(matches!(rev[0].model, LossModel::Acks(_)));
    }

    /// Two loss episodes, each a segment lost twice (sent, then fast-retransmitted) so that a
    /// timeout resends it; the second is the first new segment after the first episode, so every
    /// ACK between them covers a resent segment. Returns how long each episode's resend waited
    /// for the retransmission timer (its second transmission to its third), and the timeouts.
    fn two_timeout_episodes(receiver: Option<&str>) -> (Ns, Ns, u64) {
        let mut cfg = run("linux", 300_000);
        cfg.receiver_personality = receiver.map(Into::into);
        cfg.sack = Some(false);
        let s1 = data(&run_bulk(&cfg, 5).unwrap())[20].1;
        cfg.impair.drop_segments = Some(vec![(s1, 1), (s1, 2)]);
        let sent = data(&run_bulk(&cfg, 5).unwrap());
        let i3 = sent.iter().enumerate().filter(|(_, d)| d.1 == s1).map(|(i, _)| i).nth(2).expect("s1 resent twice");
        let old_max = sent[..i3].iter().map(|d| d.1).max().unwrap();
        let n1 = sent[i3..].iter().find(|d| d.1 > old_max).expect("new data after the timeout").1;
        cfg.impair.drop_segments = Some(vec![(s1, 1), (s1, 2), (n1, 1), (n1, 2)]);
        let out = run_bulk(&cfg, 5).unwrap();
        assert_eq!(out.received, 300_000);
        let sent = data(&out);
        let wait = |s: i64| {
            let t: Vec<Ns> = sent.iter().filter(|d| d.1 == s).map(|d| d.0).collect();
            assert_eq!(t.len(), 3, "segment {s} sent {} times", t.len());
            t[2] - t[1]
        };
        (wait(s1), wait(n1), out.sender.timeouts)
    }

    #[test]
    fn with_timestamps_the_echo_times_resent_data_and_resets_the_backoff() {
        // Linux tcp_ack_update_rtt: the ACK of the resent segment is timed by its TSecr
        // (tcp_rtt_tsopt_us), which resets icsk_backoff: the next episode's timeout is the base RTO.
        let (first, second, timeouts) = two_timeout_episodes(None);
        assert_eq!(timeouts, 2);
        assert!((200 * NS_PER_MS..260 * NS_PER_MS).contains(&first), "first timeout after {first} ns");
        assert!(second < first * 5 / 4, "second timeout after {second} ns, backed off from {first} ns");
    }

    #[test]
    fn without_timestamps_karn_keeps_the_backoff_into_the_next_episode() {
        // A Linux 2.0 peer offers no timestamps: every ACK between the episodes covers a resent
        // segment, Karn's rule takes no sample, and the second episode waits for the doubled RTO.
        let (first, second, timeouts) = two_timeout_episodes(Some("linux20"));
        assert_eq!(timeouts, 2);
        assert!((200 * NS_PER_MS..260 * NS_PER_MS).contains(&first), "first timeout after {first} ns");
        assert!(second > first * 9 / 5, "second timeout after {second} ns, not backed off from {first} ns");
    }
}
