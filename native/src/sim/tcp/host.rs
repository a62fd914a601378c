//! A simulated end host with one TCP connection: the socket layer (BSD sosend / soreceive), BSD
//! tcp_output / tcp_input and their Linux counterparts, per personality (docs/tcp-rules.md). Its
//! own scheduled work (ticks, timers, CPU completions, delayed wire and input) is a HostEvent; the
//! application hears from it through crate::sim::app::{established, write_done, read_data}.

use std::collections::VecDeque;

use super::congestion::{self as cc_mod, CongestionState};
use super::costs::HostCost;
use super::cpu::HostCpu;
use super::delack::{self as delack_mod, AckNow, DelAckState};
use super::personality::{get_personality, CopyRule, DelAckPolicy, Family, Personality, Recovery, WindowUpdateRule};
use super::reader::{ReadScheduling, Reader};
use super::rules::{self, SendReason};
use super::mtu_probe::{self, MtuSearch};
use super::sack::{self as sack_mod, Scoreboard};
use super::state::{TcpState, TimerKind};
use super::stalls::{Ctx, HoldEvidence, HoldReason, StallTracker, Trigger};
use super::timers::Timers;
use crate::sim::app::{self, App};
use crate::sim::engine::Ns;
use crate::sim::ground_truth::Stall;
use crate::sim::nagle::{self as nagle_mod, NagleState, NagleVariant, SendContext};
use crate::sim::net::{Event, HostIndex, Net};
use crate::sim::segment::{
    Segment, ACK, FIN, PSH, RST, SYN, TAG_ABORT, TAG_DELACK_TIMER, TAG_PERSIST, TAG_RETRANSMIT, TAG_WINDOW_UPDATE,
};

pub const MAX_WINDOW: i64 = 65535;

const NAMES: [&str; 2] = ["sender", "receiver"];

/// Application-level CPU work, run when HostCpu has done it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CpuJob {
    /// A write's chunk of n bytes is in the send buffer (sosend's uiomove done).
    Copied(i64),
    /// A read copied n bytes out (soreceive's uiomove done).
    ReadDone(i64),
    /// A reader asleep in soreceive has been dispatched (with a read-scheduling model only).
    ReaderRuns,
}

/// The host's own scheduled events.
#[derive(Debug)]
pub enum HostEvent {
    FastTick,
    SlowTick,
    /// An exact (one-shot) timer of this kind reached its deadline (Timers::event).
    Timer(TimerKind),
    /// Process-level CPU work finishing, unless kernel work pushed it back (HostCpu::process_fire).
    Cpu { snap: Ns, job: CpuJob },
    /// A segment leaving for the wire once the output CPU cost is paid.
    Emit(Segment),
    /// A segment reaching tcp_input once the input CPU cost is paid.
    Input(Segment),
}

pub struct HostConfig {
    pub index: HostIndex,
    pub personality: &'static str,
    pub mtu: u32,
    pub sndbuf: Option<u32>,
    pub rcvbuf: Option<u32>,
    pub route_mtu: Option<u32>,
    pub mss: Option<u32>,
    pub advertised_mss: Option<u32>,
    /// Linux net.ipv4.tcp_mtu_probing (0 or 1; BSD-family stacks ignore it).
    pub mtu_probing: u8,
    /// Offer SACK in the handshake (None: the personality's).
    pub sack: Option<bool>,
    /// CUBIC (Some(true)) or Reno (Some(false)) instead of the personality's (TCP_CONGESTION).
    pub cubic: Option<bool>,
    pub nagle: Option<NagleVariant>,
    pub receiver_inference: Option<bool>,
    /// When the reader runs after a wakeup, and the seed of its draws (reader.rs); None: at once.
    pub read_scheduling: Option<(&'static ReadScheduling, i64)>,
    pub cost: HostCost,
    pub record_stalls: bool,
    pub stall_threshold_ns: Ns,
    pub tick_phase_ns: Ns,
    pub uid_base: u64,
    pub iss: i64,
    /// What the stall tracker knows of the peer's window-update rule (Moldeklev (1)).
    pub peer_window: PeerWindow,
    /// "addr:port -> addr:port" of this host's data, the stalls' direction once established.
    pub direction: String,
}

/// Where a sender learns whether its whole send buffer can trigger the receiver's window
/// update (Moldeklev & Gunningberg (1): S < R and S below the update threshold deadlocks on the
/// window-update rule, not on Nagle).
#[derive(Clone, Copy, Debug)]
pub enum PeerWindow {
    /// Not known: no stall is marked as the window-update rule's.
    Unknown,
    /// The receiver's rule and its receive buffer before the receiver is up (a bulk run's
    /// connecting sender is established first).
    Fixed(WindowUpdateRule, u32),
    /// Read from the peer host when this one is established (a naglemark server is established
    /// after its client, whose buffer is then rounded to its segment size).
    Host(HostIndex),
}

pub struct Host {
    pub index: HostIndex,
    pub app: App,
    pub p: &'static Personality,
    /// CUBIC or Reno: the personality's unless TCP_CONGESTION chose.
    cubic: bool,
    pub mtu: i64,
    pub route_mtu: Option<i64>,
    pub mss_override: Option<i64>,
    pub advertised_mss: Option<i64>,
    pub sndbuf: i64,
    pub rcvbuf: i64,
    pub variant: NagleVariant,
    pub infer: bool,
    /// The small-sender inference's estimate of the peer's send buffer (OSF/1 tp->max_rcvd), kept
    /// and used where the reads are modelled (`reader`); elsewhere delack.rs decides on arrival.
    pub max_rcvd: i64,
    /// The read-scheduling model, if any; `r_asleep`: the reader found nothing and sleeps.
    reader: Option<Reader>,
    r_asleep: bool,
    pub state: TcpState,
    uid: u64,
    /// The IPv4 id of the host's first packet less one: every packet it emits takes the next (one
    /// counter per host, as BSD's ip_id++ and Linux 2.0's; modern Linux's per-connection counter is
    /// the same for a host's one connection), so a packet lost before a tap leaves a gap there.
    ip_id_base: u16,
    uid_base: u64,
    pub stopped: bool,
    pub iss: i64,
    pub snd_una: i64,
    pub snd_nxt: i64,
    pub snd_max: i64,
    pub snd_wnd: i64,
    pub max_sndwnd: i64,
    pub snd_wl1: i64,
    pub snd_wl2: i64,
    pub snd_scale: u32,
    pub rcv_scale: u32,
    pub irs: i64,
    pub rcv_nxt: i64,
    pub rcv_adv: i64,
    pub last_ack_sent: i64,
    pub maxseg: i64,
    pub peer_mss: Option<i64>,
    pub sb_cc: i64,
    pub rcv_cc: i64,
    ooo: Vec<(i64, i64)>,
    /// SACK: offered, negotiated, the peer's offer, out-of-order arrivals (oldest first), scoreboard.
    sack_enabled: bool,
    pub sack_ok: bool,
    peer_sack: bool,
    /// RFC 7323 timestamps: offered, negotiated, the peer's offer, the TSval we echo.
    ts_enabled: bool,
    pub ts_ok: bool,
    peer_ts: bool,
    ts_recent: u32,
    ooo_arrivals: Vec<(i64, i64)>,
    sackb: Scoreboard,
    closing: bool,
    fin_seq: Option<i64>,
    peer_fin: bool,
    rcv_mss_seen: i64,
    pub acknow: bool,
    pub delack_flag: bool,
    lastidle: bool,
    force: bool,
    /// tcp_push(TCP_NAGLE_PUSH) of a CORK writer that blocks on a full buffer (sosend_step).
    cork_push: bool,
    linux20_partial: bool,
    pub nagle: NagleState,
    pub dack: DelAckState,
    pub cc: CongestionState,
    pub srtt_ns: Option<i64>,
    pub rttvar_ns: i64,
    /// t_srtt / t_rttvar in fixed point (p.rtt_fixed_point).
    srtt_fp: Option<i64>,
    rttvar_fp: i64,
    pub rxtshift: i64,
    pub rxtcur: i64,
    /// When our SYN (or SYN-ACK) first went out.
    syn_started: Ns,
    /// The establishment limit falls before the next SYN resend.
    syn_final: bool,
    rtt_seq: Option<i64>,
    rtt_start: Ns,
    rtt_start_tick: i64,
    slow_ticks: i64,
    pub timers: Timers,
    persist_shift: i64,
    /// The segments in flight, sorted by seq: (seq, uid of its latest transmission, first send
    /// time or -1 once resent: Karn). Acknowledged ones are removed.
    sent_uids: VecDeque<(i64, u64, i64)>,
    lrtt: Option<rules::LinuxRtt>,
    pub cpu: HostCpu,
    pub rx_drops: Vec<(Ns, u64)>,
    w_resid: i64,
    w_total: i64,
    /// A write() call is in progress (the writer is inside sosend).
    w_cb: bool,
    w_blocked: bool,
    /// The writer is asleep (think time, a scheduled write ahead): once what it wrote has gone
    /// out, the connection idles for the application (ground truth's AppIdle hold).
    app_asleep: bool,
    w_eom: bool,
    /// sosend: space left in the current copy round (4.4BSD/OSF).
    round_space: i64,
    r_want: i64,
    /// A read() call is in progress (the reader is inside soreceive).
    r_cb: bool,
    r_busy: bool,
    /// The sender's stall tracker; the stalls it attributes are `stalls` below.
    pub tracker: StallTracker,
    pub stalls: Vec<Stall>,
    pub segments_sent: u64,
    pub bytes_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub icmp_mss_changes: u64,
    /// Black-hole detection (tcp_mtu_probing = 1): on, the search floor, the episode's first timeout.
    mtu_probing: bool,
    mtup_enabled: bool,
    mtup_low_mss: i64,
    /// The RFC 4821 search once probing is on, and every probe sent: (time, payload, acked?).
    mtup: Option<MtuSearch>,
    pub mtu_probes: Vec<(Ns, i64, Option<bool>)>,
    first_rexmit_at: Option<Ns>,
    pub probe_mss_changes: u64,
    pub aborted_at: Option<Ns>,
    pub reset_by_peer_at: Option<Ns>,
    peer_window: PeerWindow,
    direction: String,
}

impl Host {
    /// Panics on an unknown personality or non-positive buffers: the caller validates the
    /// configuration first, so either is a bug, not bad input.
    pub fn new(cfg: HostConfig, net: &mut Net) -> Host {
        let p = get_personality(cfg.personality).unwrap_or_else(|| panic!("unknown personality {:?}", cfg.personality));
        let index = cfg.index;
        let sndbuf = cfg.sndbuf.map_or(p.default_sndbuf, i64::from) * p.sndbuf_multiplier;
        let rcvbuf = cfg.rcvbuf.map_or(p.default_rcvbuf, i64::from);
        let name = NAMES[usize::from(index & 1)];
        assert!(sndbuf > 0 && rcvbuf > 0, "{name}: socket buffers must be positive (sndbuf={sndbuf}, rcvbuf={rcvbuf})");
        let variant = cfg.nagle.unwrap_or(p.nagle);
        let infer = cfg.receiver_inference.unwrap_or(p.small_sender_inference);
        // The Nagle detail comes from the hold (stalls.rs nagle_detail); the personality only says
        // whether its socket layer copies a write in fixed chunks (Moldeklev 2.1).
        let chunked = p.copy_rule == CopyRule::SunosChunk;
        let mut tracker = StallTracker::new(cfg.record_stalls, cfg.stall_threshold_ns, format!("{name} ->"), chunked);
        tracker.sticky_bytes = 2 * sndbuf;
        let iss = cfg.iss;
        let mut h = Host {
            index,
            app: App::None,
            p,
            mtu: i64::from(cfg.mtu),
            route_mtu: cfg.route_mtu.map(i64::from),
            mss_override: cfg.mss.map(i64::from),
            advertised_mss: cfg.advertised_mss.map(i64::from),
            sndbuf,
            rcvbuf,
            variant,
            infer,
            max_rcvd: 0,
            reader: cfg.read_scheduling.map(|(sched, seed)| Reader::new(sched, seed)),
            r_asleep: false,
            state: TcpState::Closed,
            uid: cfg.uid_base,
            // Derived from the ISN, so the counter's start varies between runs without a draw.
            ip_id_base: ((iss as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) as u16,
            uid_base: cfg.uid_base,
            stopped: false,
            iss,
            snd_una: iss,
            snd_nxt: iss,
            snd_max: iss,
            snd_wnd: 0,
            max_sndwnd: 0,
            snd_wl1: 0,
            snd_wl2: 0,
            snd_scale: 0,
            rcv_scale: 0,
            irs: 0,
            rcv_nxt: 0,
            rcv_adv: 0,
            last_ack_sent: 0,
            maxseg: 536,
            peer_mss: None,
            sb_cc: 0,
            rcv_cc: 0,
            ooo: Vec::new(),
            sack_enabled: cfg.sack.unwrap_or(p.sack),
            sack_ok: false,
            peer_sack: false,
            ts_enabled: p.timestamps,
            ts_ok: false,
            peer_ts: false,
            ts_recent: 0,
            ooo_arrivals: Vec::new(),
            sackb: Scoreboard::default(),
            closing: false,
            fin_seq: None,
            peer_fin: false,
            rcv_mss_seen: 1,
            acknow: false,
            delack_flag: false,
            lastidle: false,
            force: false,
            cork_push: false,
            linux20_partial: false,
            nagle: nagle_mod::new_state(variant, p.mclbytes, p.minshall_idle_writes_only, p.write_more_hold),
            dack: delack_mod::new_state(p, rcvbuf, 536),
            cc: cc_mod::new_state(p.recovery, 536, p.initial_cwnd_segments, p.linux_ca, cfg.cubic.unwrap_or(p.cubic)),
            cubic: cfg.cubic.unwrap_or(p.cubic),
            srtt_ns: None,
            rttvar_ns: 0,
            srtt_fp: None,
            rttvar_fp: 0,
            rxtshift: 0,
            rxtcur: p.rto_initial_ns,
            syn_started: 0,
            syn_final: false,
            rtt_seq: None,
            rtt_start: 0,
            rtt_start_tick: 0,
            slow_ticks: 0,
            timers: Timers::new(index, p.slow_tick_ns),
            persist_shift: 0,
            sent_uids: VecDeque::with_capacity(64),
            lrtt: if p.linux_rtt { Some(rules::LinuxRtt::default()) } else { None },
            cpu: HostCpu::new(cfg.cost),
            rx_drops: Vec::new(),
            w_resid: 0,
            w_total: 0,
            w_cb: false,
            w_blocked: false,
            app_asleep: false,
            w_eom: true,
            round_space: 0,
            r_want: 0,
            r_cb: false,
            r_busy: false,
            tracker,
            stalls: Vec::new(),
            segments_sent: 0,
            bytes_sent: 0,
            retransmits: 0,
            timeouts: 0,
            icmp_mss_changes: 0,
            mtu_probing: cfg.mtu_probing == 1 && p.family != Family::Bsd,
            mtup_enabled: false,
            mtup_low_mss: rules::LINUX_BASE_MSS,
            mtup: None,
            mtu_probes: Vec::new(),
            first_rexmit_at: None,
            probe_mss_changes: 0,
            aborted_at: None,
            reset_by_peer_at: None,
            peer_window: cfg.peer_window,
            direction: cfg.direction,
        };
        h.start_ticks(net, cfg.tick_phase_ns);
        h
    }

    // ------------------------------------------------------------------ wiring and clocks

    /// Stop the free-running ticks and timers so the event queue can drain.
    pub fn stop(&mut self, net: &mut Net) {
        self.stopped = true;
        self.timers.stop(net);
    }

    fn next_uid(&mut self) -> u64 {
        self.uid += 1;
        self.uid
    }

    fn ev(&self, e: HostEvent) -> Event {
        Event::Host(self.index, e)
    }

    /// Start the free-running tcp_fasttimo / tcp_slowtimo ticks on the grid `phase + k * period`
    /// that started at t=0, so a host created mid-run (a naglemark trial) ticks in step with the
    /// host's other connections (docs/tcp-rules.md#delayed-ack-timers).
    fn start_ticks(&mut self, net: &mut Net, phase: Ns) {
        let p = self.p;
        let now = net.now();
        if p.delack == DelAckPolicy::BsdTick {
            net.schedule(now + (phase - now).rem_euclid(p.delack_ns), self.ev(HostEvent::FastTick));
        }
        if let Some(tick) = p.slow_tick_ns {
            net.schedule(now + (phase - now).rem_euclid(tick), self.ev(HostEvent::SlowTick));
        }
    }

    /// Dispatch of the host's own events.
    pub fn handle(&mut self, net: &mut Net, now: Ns, ev: HostEvent) {
        match ev {
            HostEvent::FastTick => self.fast_tick(net, now),
            HostEvent::SlowTick => self.slow_tick(net, now),
            HostEvent::Timer(kind) => {
                if self.timers.event(net, now, kind) {
                    self.timer_fired(net, now, kind);
                }
            }
            HostEvent::Cpu { snap, job } => {
                if let Some(job) = self.cpu.process_fire(net, self.index, now, snap, job) {
                    match job {
                        CpuJob::Copied(n) => self.copied(net, now, n),
                        CpuJob::ReadDone(n) => self.read_done(net, now, n),
                        CpuJob::ReaderRuns => self.read_start(net, now),
                    }
                }
            }
            HostEvent::Emit(seg) => net.emit(now, self.index, seg),
            HostEvent::Input(seg) => self.tcp_input(net, now, seg),
        }
    }

    /// tcp_fasttimo: every 200 ms for all connections at once.
    fn fast_tick(&mut self, net: &mut Net, now: Ns) {
        if self.stopped {
            return;
        }
        net.schedule(now + self.p.delack_ns, self.ev(HostEvent::FastTick));
        if self.delack_flag {
            self.delack_flag = false;
            self.acknow = true;
            self.tcp_output(net, now, Ctx::Timer, false, false, TAG_DELACK_TIMER, false);
        }
    }

    /// tcp_slowtimo: every 500 ms, counts REXMT and PERSIST down.
    fn slow_tick(&mut self, net: &mut Net, now: Ns) {
        if self.stopped {
            return;
        }
        let tick = self.p.slow_tick_ns.expect("slow tick without a slow-tick personality");
        net.schedule(now + tick, self.ev(HostEvent::SlowTick));
        self.slow_ticks += 1;
        // Fire every ticked timer that reaches zero, in the order they were set.
        for kind in self.timers.ticked_kinds().into_iter().flatten() {
            if self.timers.count_down(kind) {
                self.timer_fired(net, now, kind);
            }
        }
    }

    fn timer_fired(&mut self, net: &mut Net, now: Ns, kind: TimerKind) {
        if self.stopped {
            return;
        }
        match kind {
            TimerKind::Rexmt => self.retransmit_timeout(net, now),
            TimerKind::Persist => self.persist_timeout(net, now),
            TimerKind::Delack => {
                if self.delack_flag {
                    self.delack_flag = false;
                    self.acknow = true;
                    self.tcp_output(net, now, Ctx::Timer, false, false, TAG_DELACK_TIMER, false);
                }
            }
            TimerKind::Partial => {
                if self.linux20_partial {
                    self.linux20_partial = false;
                    self.tcp_output(net, now, Ctx::PartialTimer, false, false, 0, true);
                }
            }
        }
    }

    // ------------------------------------------------------------------ CPU and wire

    fn emit(&mut self, net: &mut Net, now: Ns, mut seg: Segment) {
        seg.ip_id = self.ip_id_base.wrapping_add(seg.uid.wrapping_sub(self.uid_base) as u16);
        let done = self.cpu.kernel(now, self.cpu.cost.output_ns(i64::from(seg.payload_len)));
        if done == now {
            net.emit(now, self.index, seg);
        } else {
            net.schedule(done, self.ev(HostEvent::Emit(seg)));
        }
    }

    // ------------------------------------------------------------------ application API

    pub fn listen(&mut self) {
        self.state = TcpState::Listen;
    }

    pub fn connect(&mut self, net: &mut Net, now: Ns) {
        self.state = TcpState::SynSent;
        self.syn_started = now;
        self.send_syn(net, now, false, None);
        self.time_syn(now);
    }

    /// A blocking write(): app::write_done once every byte is in the socket buffer.
    pub fn write(&mut self, net: &mut Net, now: Ns, nbytes: u64, eom: bool) {
        let name = NAMES[usize::from(self.index & 1)];
        assert!(!self.w_cb, "{name}: write while a write is in progress");
        assert!(self.state.can_send_data(), "{name}: write in state {}", self.state.value());
        self.w_resid = nbytes as i64;
        self.w_total = nbytes as i64;
        self.w_cb = true;
        self.app_asleep = false;
        self.w_eom = eom;
        nagle_mod::on_write_entry(&mut self.nagle, self.snd_max == self.snd_una);
        self.sosend_step(net, now);
    }

    pub fn close(&mut self, net: &mut Net, now: Ns) {
        self.closing = true;
        if self.state == TcpState::Established {
            self.state = TcpState::FinWait1;
        } else if self.state == TcpState::CloseWait {
            self.state = TcpState::LastAck;
        }
        self.tcp_output(net, now, Ctx::Close, false, false, 0, false);
    }

    /// A blocking read(): app::read_data(n) with n == 0 at end of stream.
    pub fn read(&mut self, net: &mut Net, now: Ns, maxbytes: u64) {
        let name = NAMES[usize::from(self.index & 1)];
        assert!(!self.r_cb, "{name}: read while a read is in progress");
        self.r_want = maxbytes as i64;
        self.r_cb = true;
        self.reader_try(net, now);
    }

    /// The writer has nothing to send right now (think time).
    pub fn idle_app(&mut self, now: Ns) {
        self.app_asleep = true;
        if self.sb_cc <= self.snd_nxt - self.snd_una {
            self.tracker.hold(HoldReason::AppIdle, Ctx::App, HoldEvidence::None, now);
        }
    }

    // ------------------------------------------------------------------ socket layer

    fn sosend_step(&mut self, net: &mut Net, now: Ns) {
        let in_round = self.round_space > 0;
        let space = if in_round { self.round_space } else { self.sndbuf - self.sb_cc };
        // The low-water mark never exceeds the buffer (soreserve; FreeBSD's sosetopt clips it again
        // after SO_SNDBUF): Tru64's 8 KB cluster mark under a 4 KB buffer would never be met, and
        // the writer would sleep forever with nothing sent.
        let lowat = if self.p.lowat_is_mss { self.maxseg } else { self.p.writer_lowat }.min(self.sndbuf);
        let n = rules::sosend_chunk(self.p, self.w_resid, space, in_round, Some(lowat));
        if n != 0 && !in_round && rules::sosend_rounds(self.p) {
            self.round_space = space; // measured once; the round copies until it is used up
        }
        if n == 0 {
            self.round_space = 0;
            self.w_blocked = true;
            if self.sb_cc != 0 && self.snd_max - self.snd_una >= self.sb_cc {
                let ev = HoldEvidence::Copy { b_sent: self.snd_max - self.snd_una, s_byte: self.sb_cc };
                self.tracker.hold(HoldReason::BufferFull, Ctx::Copy, ev, now);
            }
            if nagle_mod::on_app_block(&mut self.nagle) {
                self.tcp_output(net, now, Ctx::Block, false, false, 0, false);
            } else if self.variant == NagleVariant::Cork && self.w_resid < self.w_total {
                // Linux tcp_sendmsg, wait_for_space: a write that copied bytes and must wait for
                // room pushes them with TCP_NAGLE_PUSH, cork or not (else a buffer smaller than
                // a segment would wait for the probe timer every time it filled).
                self.cork_push = true;
                self.tcp_output(net, now, Ctx::Block, false, false, 0, false);
                self.cork_push = false;
            }
            return;
        }
        self.w_blocked = false;
        let cost = self.cpu.cost.write_ns(n);
        self.cpu.process(net, self.index, now, cost, CpuJob::Copied(n));
    }

    fn copied(&mut self, net: &mut Net, now: Ns, n: i64) {
        self.sb_cc += n;
        self.w_resid -= n;
        let more = self.w_resid > 0;
        let space = if self.round_space != 0 {
            self.round_space = if more { self.round_space - n } else { 0 };
            self.round_space // sosend's local `space` (Mogul figure 4 reads it)
        } else {
            self.sndbuf - self.sb_cc
        };
        nagle_mod::before_pru_send(&mut self.nagle, self.w_resid, space);
        self.tcp_output(net, now, Ctx::Copy, more, !more, 0, false);
        if more {
            self.sosend_step(net, now);
        } else {
            self.w_cb = false;
            app::write_done(self, net, now);
        }
    }

    fn writer_wake(&mut self, net: &mut Net, now: Ns) {
        if self.w_blocked && self.w_cb {
            self.w_blocked = false;
            nagle_mod::on_app_wake(&mut self.nagle);
            self.sosend_step(net, now);
        }
    }

    fn reader_try(&mut self, net: &mut Net, now: Ns) {
        if !self.r_cb || self.r_busy {
            return;
        }
        if self.rcv_cc == 0 {
            if self.peer_fin {
                self.r_cb = false;
                self.r_asleep = false;
                app::read_data(self, net, now, 0);
            } else {
                self.r_asleep = true;
                if nagle_mod::on_app_block(&mut self.nagle) {
                    self.tcp_output(net, now, Ctx::Block, false, false, 0, false);
                }
            }
            return;
        }
        if self.r_asleep {
            self.r_asleep = false;
            if let Some(reader) = self.reader.as_mut() {
                // sorwakeup: the reader runs once dispatched, and reads what is there by then.
                let wait = reader.wakeup_ns();
                self.r_busy = true;
                self.cpu.process(net, self.index, now, wait, CpuJob::ReaderRuns);
                return;
            }
        }
        self.read_start(net, now);
    }

    /// soreceive: copy what the buffer holds (at most what the read asked for); PRU_RCVD follows
    /// the copy (read_done).
    fn read_start(&mut self, net: &mut Net, now: Ns) {
        let n = self.rcv_cc.min(self.r_want);
        self.r_busy = true;
        let mut cost = self.cpu.cost.read_ns(n);
        if let Some(reader) = self.reader.as_ref() {
            cost += reader.copy_ns(n);
        }
        self.cpu.process(net, self.index, now, cost, CpuJob::ReadDone(n));
    }

    fn read_done(&mut self, net: &mut Net, now: Ns, n: i64) {
        self.r_busy = false;
        self.rcv_cc -= n;
        self.tcp_output(net, now, Ctx::Read, false, false, 0, false); // PRU_RCVD: once per read call
        self.r_cb = false;
        app::read_data(self, net, now, n as u64);
    }

    // ------------------------------------------------------------------ output

    fn window_to_advertise(&self) -> i64 {
        let peer_has = (self.rcv_adv - self.rcv_nxt).max(0);
        rules::receive_window(
            self.rcvbuf - self.rcv_cc,
            self.rcvbuf,
            self.maxseg,
            peer_has,
            self.p.max_window << self.rcv_scale,
        )
    }

    /// tcp_output: 4.4BSD tcp_output.c's decision order (docs/tcp-rules.md#bsd-output-decision-order), with
    /// Linux tcp_nagle_check / tcp_minshall_check (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay) and
    /// the Linux 2.0 partial segment (docs/tcp-rules.md#linux-20-partial-segment) for those families.
    #[allow(clippy::too_many_arguments)]
    fn tcp_output(
        &mut self,
        net: &mut Net,
        now: Ns,
        context: Ctx,
        more_to_come: bool,
        end_of_write: bool,
        tags: u8,
        flush_partial: bool,
    ) {
        if matches!(self.state, TcpState::Closed | TcpState::Listen | TcpState::SynSent | TcpState::SynReceived) {
            return;
        }
        if self.mtup.is_some()
            && !matches!(context, Ctx::Rto | Ctx::FastRetransmit | Ctx::Persist)
            && self.mtu_probe(net, now) == 0
        {
            return; // tcp_write_xmit: a probe is due but must wait for room
        }
        let p = self.p;
        let mut more_to_come = more_to_come;
        if p.write_more_hold && self.w_cb && 0 < self.w_resid && self.w_resid < self.w_total {
            more_to_come = true; // the writer sleeps part-way through a write (TF_MORE stays set)
        }
        // 4.4BSD tcp_output computes idle once per call (docs/tcp-rules.md#bsd-output-decision-order).
        let mut idle = self.snd_max == self.snd_una;
        if p.moretocome {
            if self.lastidle {
                idle = true;
            }
            if idle && more_to_come {
                self.lastidle = true;
                idle = false;
            } else if !more_to_come {
                self.lastidle = false;
            }
        }
        let trigger = match context {
            Ctx::TimerAck => Trigger::TimerAck,
            Ctx::Rto => Trigger::Rto,
            Ctx::Persist => Trigger::Persist,
            Ctx::PartialTimer => Trigger::PartialTimer,
            _ => Trigger::Ack,
        };
        let mut sent_any = false;
        loop {
            let mut off = self.snd_nxt - self.snd_una;
            let mut win = self.snd_wnd.min(self.cc.cwnd);
            if self.force && win == 0 {
                win = 1;
            }
            let mut length = self.sb_cc.min(win) - off;
            let mut unsent = self.sb_cc - off;
            if length < 0 {
                length = 0;
                if win == 0 {
                    // 4.4BSD: the window shut on data already sent (a probe): pull snd_nxt back
                    // and let the persist timer, not the retransmission timer, take over.
                    self.timers.cancel(TimerKind::Rexmt);
                    self.snd_nxt = self.snd_una;
                    off = 0;
                    unsent = self.sb_cc;
                }
            }
            if length > self.maxseg {
                length = self.maxseg;
            }
            let mut reason = None;
            let mut hold = None;
            if length > 0 {
                let mut nagle_ok = false;
                if length < self.maxseg {
                    nagle_ok = self.nagle_ok(net, now, length, off, idle, more_to_come, end_of_write, flush_partial, context == Ctx::Copy);
                }
                reason = rules::bsd_send_reason(
                    length,
                    self.maxseg,
                    nagle_ok,
                    self.force,
                    self.max_sndwnd,
                    self.snd_nxt < self.snd_max,
                );
                if reason.is_none() {
                    hold = Some(if length < unsent && win - off < self.maxseg {
                        // SWS names the peer's window; a smaller congestion window makes the wait cwnd's.
                        if length < self.max_sndwnd / 2 && win - off > 0 && self.snd_wnd <= self.cc.cwnd {
                            HoldReason::Sws
                        } else {
                            HoldReason::Window
                        }
                    } else if self.linux20_partial && self.variant == NagleVariant::Off {
                        HoldReason::Partial
                    } else {
                        HoldReason::Nagle
                    });
                }
            } else if unsent > 0 {
                hold = Some(HoldReason::Window);
            }
            let fin = self.closing && self.fin_seq.is_none() && self.snd_nxt + length == self.snd_una + self.sb_cc;
            // Window update, only if the receive window is open (4.4BSD / SunOS tcp_output:
            // docs/tcp-rules.md#window-update-thresholds).
            let mut wupdate = false;
            if reason.is_none() && !self.acknow {
                let space = self.rcvbuf - self.rcv_cc;
                if space > 0 && self.state.receives_data() {
                    let peer_has = (self.rcv_adv - self.rcv_nxt).max(0);
                    let adv = space.min(p.max_window << self.rcv_scale) - peer_has;
                    wupdate =
                        rules::window_update_due(p.window_update, adv, self.rcv_cc, self.rcvbuf, self.maxseg, peer_has)
                            || (self.infer
                                && self.reader.is_some()
                                && delack_mod::small_sender_update_due(self.max_rcvd, adv, self.maxseg));
                    if wupdate && p.suppress_update_with_delack && self.delack_flag {
                        wupdate = false;
                    }
                }
            }
            if reason.is_none() && !(wupdate || self.acknow || fin) {
                if let Some(hold) = hold {
                    let ev = HoldEvidence::Output {
                        b_sent: self.snd_max - self.snd_una,
                        s_byte: self.sb_cc,
                        held: length,
                        snd_wnd: self.snd_wnd,
                        writing: self.w_resid > 0 || self.w_blocked,
                        cwnd: if hold == HoldReason::Window && self.cc.cwnd < self.snd_wnd { Some(self.cc.cwnd) } else { None },
                        blocked: self.w_blocked,
                        maxseg: self.maxseg,
                    };
                    self.tracker.hold(hold, context, ev, now);
                }
                break;
            }
            if reason.is_none() && !fin && p.family != Family::Bsd {
                length = 0; // Linux sends a pure ACK; BSD's ACK carries whatever len allowed
            }
            let mut seg_tags = tags;
            if reason == Some(SendReason::Retransmit) || (self.snd_nxt < self.snd_max && length > 0) {
                seg_tags |= TAG_RETRANSMIT;
            }
            if wupdate && length == 0 {
                seg_tags |= TAG_WINDOW_UPDATE;
            }
            if reason == Some(SendReason::Persist) {
                seg_tags |= TAG_PERSIST;
            }
            let mut flags = ACK;
            if fin && self.snd_nxt + length == self.snd_una + self.sb_cc {
                flags |= FIN;
            }
            if length != 0 && off + length == self.sb_cc {
                flags |= PSH;
            }
            let new_before = self.snd_max;
            let seq = self.snd_nxt;
            self.send(net, now, seq, length, flags, seg_tags);
            sent_any = true;
            if self.snd_max > new_before && length > 0 {
                let n = self.snd_max - new_before;
                self.tracker.progress(&mut |u| net.classify_loss(u), &mut self.stalls, now, trigger, n);
            }
            if reason.is_none() {
                break;
            }
            // BSD loops only on sendalot; evaluating once more sends nothing else but records
            // why the rest is held.
        }
        if sent_any && self.app_asleep && !self.w_cb && self.sb_cc <= self.snd_nxt - self.snd_una {
            // The last of what the sleeping writer wrote went out: from here it idles.
            self.tracker.hold(HoldReason::AppIdle, Ctx::App, HoldEvidence::None, now);
        }
        if !sent_any {
            // Data queued and no timer running: tcp_setpersist, whatever the window
            // (docs/tcp-rules.md#persist-timer).
            if self.sb_cc > self.snd_nxt - self.snd_una
                && !self.timers.running(TimerKind::Rexmt)
                && !self.timers.running(TimerKind::Persist)
            {
                self.persist_shift = 0;
                self.set_persist(net);
            }
            if self.sb_cc == 0 && !self.w_cb && !self.closing {
                self.tracker.hold(HoldReason::AppIdle, context, HoldEvidence::None, now);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn nagle_ok(
        &mut self,
        net: &mut Net,
        now: Ns,
        length: i64,
        off: i64,
        idle: bool,
        more: bool,
        eow: bool,
        flush: bool,
        from_write: bool,
    ) -> bool {
        let p = self.p;
        if p.family == Family::Linux20 {
            return self.linux20_tail(net, length, off, eow, flush);
        }
        let ctx = SendContext {
            now,
            length,
            maxseg: self.maxseg,
            off,
            sb_cc: self.sb_cc,
            idle,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            snd_max: self.snd_max,
            more_to_come: more,
            end_of_message: self.w_eom && !more,
            from_write,
            // Uncorked once the message's last write is wholly copied, until the next write.
            message_done: self.w_eom && self.w_resid == 0,
            push: self.cork_push,
        };
        let ok = nagle_mod::may_send_short(self.variant, &mut self.nagle, &ctx);
        if ok && p.moretocome && more && self.variant == NagleVariant::Nagle {
            // FreeBSD 4 tcp_output: step 2 also needs !TF_MORETOCOME (docs/tcp-rules.md#freebsd-more-to-come).
            return false;
        }
        ok
    }

    /// Linux 2.0 partial segment (2.0.29 tcp_sendmsg and tcp_ack; Salamon's report):
    /// docs/tcp-rules.md#linux-20-partial-segment.
    fn linux20_tail(&mut self, net: &mut Net, length: i64, off: i64, eow: bool, flush: bool) -> bool {
        if length + off < self.sb_cc {
            return false;
        }
        let packets_out = self.snd_max > self.snd_una;
        let nodelay = self.variant == NagleVariant::Off;
        if flush || !packets_out {
            self.linux20_partial = false;
            self.timers.cancel(TimerKind::Partial);
            return true;
        }
        if eow && nodelay {
            // At write time the tail went only if it fit the window (write_seq < window_seq).
            let fits = self.snd_nxt + length <= self.snd_una + self.snd_wnd;
            if fits {
                return true;
            }
        }
        if !self.linux20_partial {
            self.linux20_partial = true;
            self.timers.set(net, TimerKind::Partial, self.p.partial_timer_ns);
        }
        false
    }

    /// Build, account and emit one segment; it carries the pending ACK.
    fn send(&mut self, net: &mut Net, now: Ns, seq: i64, length: i64, flags: u8, tags: u8) {
        let win = self.window_to_advertise();
        self.rcv_adv = self.rcv_adv.max(self.rcv_nxt + win);
        let uid = self.next_uid();
        let seg = Segment {
            src: self.index,
            seq,
            ack: self.rcv_nxt,
            flags,
            window: (win >> self.rcv_scale).min(MAX_WINDOW) as u32,
            payload_len: length as u32,
            sack: if self.sack_ok && !self.ooo.is_empty() {
                sack_mod::receiver_blocks(&self.ooo, &self.ooo_arrivals, self.sack_max_blocks())
            } else {
                Vec::new()
            },
            timestamp: if self.ts_ok { Some((self.tsval(now), self.ts_recent)) } else { None },
            uid,
            tags,
            ..Default::default()
        };
        self.last_ack_sent = self.rcv_nxt;
        self.acknow = false;
        if self.delack_flag {
            self.delack_flag = false;
        }
        self.timers.cancel(TimerKind::Delack);
        delack_mod::on_ack_sent(&mut self.dack);
        let space = length + i64::from(flags & FIN != 0);
        if space != 0 {
            if length != 0 {
                let at = if seq < self.snd_max { -1 } else { now };
                self.record_sent_uid(seq, uid, at);
            }
            if flags & FIN != 0 && self.fin_seq.is_none() {
                self.fin_seq = Some(seq + length);
            }
            let end = seq + space;
            if seq < self.snd_max {
                self.retransmits += 1;
            }
            if end > self.snd_max {
                if self.rtt_seq.is_none() && self.lrtt.is_none() {
                    // Linux samples every ACK instead
                    self.rtt_seq = Some(seq);
                    self.rtt_start = now;
                    self.rtt_start_tick = self.slow_ticks;
                }
                self.snd_max = end;
            }
            self.snd_nxt = end;
            if !self.timers.running(TimerKind::Rexmt) {
                self.timers.cancel(TimerKind::Persist);
                self.timers.set(net, TimerKind::Rexmt, self.rxtcur);
            }
            nagle_mod::on_segment_sent(&mut self.nagle, now, seq, length, self.maxseg);
        }
        self.force = false;
        self.segments_sent += 1;
        self.bytes_sent += length as u64;
        self.emit(net, now, seg);
    }

    /// RFC 7323 TSval: the personality's timestamp clock offset by the ISN, on 32 bits.
    fn tsval(&self, now: Ns) -> u32 {
        (self.iss + now.div_euclid(self.p.ts_tick_ns)).rem_euclid(1 << 32) as u32
    }

    /// SACK blocks that fit the 40 option bytes: four, or three beside a timestamp (RFC 2018 section 3).
    fn sack_max_blocks(&self) -> usize {
        if self.ts_ok {
            sack_mod::MAX_BLOCKS_WITH_TIMESTAMP
        } else {
            sack_mod::MAX_BLOCKS
        }
    }

    /// Record the latest transmission of `seq`, keeping `sent_uids` sorted by seq.
    fn record_sent_uid(&mut self, seq: i64, uid: u64, at: i64) {
        match self.sent_uids.back() {
            Some(&(last, _, _)) if last < seq => self.sent_uids.push_back((seq, uid, at)),
            None => self.sent_uids.push_back((seq, uid, at)),
            _ => match self.sent_uids.binary_search_by_key(&seq, |&(s, _, _)| s) {
                Ok(i) => {
                    self.sent_uids[i].1 = uid;
                    self.sent_uids[i].2 = at;
                }
                Err(i) => self.sent_uids.insert(i, (seq, uid, at)),
            },
        }
    }

    fn send_syn(&mut self, net: &mut Net, now: Ns, ack: bool, rto_ns: Option<i64>) {
        let offer = self
            .advertised_mss
            .or(self.mss_override)
            .unwrap_or_else(|| rules::offered_mss(self.p, self.mtu));
        let mut wscale = None;
        if self.rcvbuf > MAX_WINDOW && self.p.name != "sunos41" {
            let mut w = 0u8;
            while (self.rcvbuf >> w) > MAX_WINDOW {
                w += 1;
            }
            wscale = Some(w);
        }
        let uid = self.next_uid();
        let seg = Segment {
            src: self.index,
            seq: self.iss,
            ack: if ack { self.rcv_nxt } else { 0 },
            flags: SYN | if ack { ACK } else { 0 },
            window: self.rcvbuf.min(self.p.max_window) as u32,
            mss: Some(offer as u32),
            wscale,
            sack_permitted: self.sack_enabled && (self.peer_sack || !ack),
            timestamp: if self.ts_enabled && (self.peer_ts || !ack) {
                Some((self.tsval(now), if ack { self.ts_recent } else { 0 }))
            } else {
                None
            },
            uid,
            ..Default::default()
        };
        self.snd_nxt = self.iss + 1;
        self.snd_max = self.iss + 1;
        self.rcv_adv = self.rcv_nxt + self.rcvbuf.min(self.p.max_window);
        self.timers.set(net, TimerKind::Rexmt, rto_ns.unwrap_or(self.p.rto_initial_ns));
        self.emit(net, now, seg);
    }

    fn set_persist(&mut self, net: &mut Net) {
        let d = if self.variant == NagleVariant::Cork {
            // TCP_CORK is Linux's, and so is the timer that bounds it: ICSK_TIME_PROBE0 at
            // max(RTO, 200 ms), the "200 ms ceiling" (nagle::cork_probe_ns).
            nagle_mod::cork_probe_ns(self.rto_base(), self.persist_shift)
        } else {
            let srtt = self.srtt_ns.unwrap_or(0);
            rules::persist_ns(srtt, self.rttvar_ns, self.persist_shift)
        };
        self.timers.set(net, TimerKind::Persist, d);
    }

    // ------------------------------------------------------------------ timers

    fn retransmit_timeout(&mut self, net: &mut Net, now: Ns) {
        if self.snd_una == self.snd_max {
            return;
        }
        if matches!(self.state, TcpState::SynSent | TcpState::SynReceived) {
            self.syn_timeout(net, now);
            return;
        }
        self.rxtshift += 1;
        self.timeouts += 1;
        if self.rxtshift > i64::from(self.p.max_retransmits) {
            self.abort(net, now);
            return;
        }
        if self.mtup.as_ref().is_some_and(|st| st.probe.is_some()) {
            self.mtu_probe_lost(); // the probe went unanswered until the timeout
        }
        if self.mtu_probing && rules::black_hole_suspected(self.first_rexmit_at, now) {
            self.mtu_probing_step();
        }
        if self.first_rexmit_at.is_none() {
            self.first_rexmit_at = Some(now);
        }
        let base = self.rto_base();
        self.rxtcur = rules::backed_off_rto(self.p, base, self.rxtshift);
        let snd_una = self.snd_una;
        let mut outstanding: Vec<u64> =
            self.sent_uids.iter().filter(|&&(s, _, _)| s >= snd_una).map(|&(_, u, _)| u).collect();
        outstanding.sort_unstable();
        self.tracker.timeout(outstanding);
        self.snd_nxt = self.snd_una;
        self.rtt_seq = None; // Karn
        self.sackb.clear(); // RFC 2018 section 8: after a timeout the SACKed bits are turned off
        cc_mod::on_timeout(&mut self.cc, self.snd_wnd);
        if matches!(self.fin_seq, Some(f) if self.snd_una <= f) {
            self.fin_seq = None;
        }
        self.timers.set(net, TimerKind::Rexmt, self.rxtcur);
        self.tcp_output(net, now, Ctx::Rto, false, false, 0, false);
    }

    /// Time the first SYN or SYN-ACK like any first transmission (BSD t_rtt).
    fn time_syn(&mut self, now: Ns) {
        self.rtt_seq = Some(self.iss);
        self.rtt_start = now;
        self.rtt_start_tick = self.slow_ticks;
    }

    /// Linux tcp_mtu_probing: cap the MSS at the search floor, halving it after the first (RFC 4821).
    fn mtu_probing_step(&mut self) {
        if !self.mtup_enabled {
            self.mtup_enabled = true;
            let options = if self.ts_ok { rules::TIMESTAMP_OPTION } else { 0 }; // tcp_mss_to_mtu counts them
            self.mtup = Some(mtu_probe::new_search(self.maxseg + options, rules::LINUX_BASE_MSS, mtu_probe::HEADERS + options));
        } else {
            self.mtup_low_mss = rules::LINUX_BASE_MSS.min(self.mtup_low_mss >> 1).max(rules::LINUX_MTU_PROBE_FLOOR);
            if let Some(st) = self.mtup.as_mut() {
                st.search_low = self.mtup_low_mss + st.headers;
            }
        }
        let mss = self.maxseg.min(self.mtup_low_mss);
        if mss < self.maxseg {
            self.maxseg = mss;
            self.cc.mss = self.cc.mss.min(mss);
            self.probe_mss_changes += 1;
        }
    }

    /// Linux tcp_mtu_probe: -1 no probe now, 0 wait for room, 1 a probe went.
    fn mtu_probe(&mut self, net: &mut Net, now: Ns) -> i32 {
        let maxseg = self.maxseg;
        let Some(st) = self.mtup.as_ref() else { return -1 };
        if st.probe.is_some()
            || self.cc.in_recovery
            || self.snd_nxt < self.snd_max
            || self.cc.cwnd < mtu_probe::MIN_CWND_SEGMENTS * maxseg
        {
            return -1;
        }
        let Some(size) = mtu_probe::probe_size(st) else { return -1 };
        let needed = size + (mtu_probe::REORDERING + 1) * maxseg;
        if self.sb_cc - (self.snd_nxt - self.snd_una) < needed || self.snd_wnd < needed {
            return -1;
        }
        if self.snd_nxt + needed > self.snd_una + self.snd_wnd {
            return 0;
        }
        let in_flight = (self.snd_max - self.snd_una).div_euclid(maxseg);
        if in_flight + 2 > self.cc.cwnd.div_euclid(maxseg) {
            return if in_flight != 0 { 0 } else { -1 };
        }
        let seq = self.snd_nxt;
        let headers = st.headers;
        if let Some(st) = self.mtup.as_mut() {
            st.probe = Some((size + headers, seq, seq + size));
        }
        self.mtu_probes.push((now, size, None));
        self.send(net, now, seq, size, ACK, 0);
        self.tracker.progress(&mut |u| net.classify_loss(u), &mut self.stalls, now, Trigger::Ack, size);
        1
    }

    /// Linux tcp_mtup_probe_success.
    fn mtu_probe_acked(&mut self) {
        if let Some(last) = self.mtu_probes.last_mut() {
            last.2 = Some(true);
        }
        let mss = mtu_probe::succeeded(self.mtup.as_mut().expect("probing"));
        self.mtup_low_mss = mss;
        if mss > self.maxseg {
            self.maxseg = mss;
            self.cc.mss = mss;
            self.probe_mss_changes += 1;
        }
    }

    /// Linux tcp_mtup_probe_failed.
    fn mtu_probe_lost(&mut self) {
        if let Some(last) = self.mtu_probes.last_mut() {
            last.2 = Some(false);
        }
        mtu_probe::failed(self.mtup.as_mut().expect("probing"));
    }

    fn probe_outstanding_from(&self, snd_una: i64) -> bool {
        matches!(self.mtup.as_ref().and_then(|st| st.probe), Some(p) if snd_una >= p.1)
    }

    /// Resend the unanswered SYN (SYN-ACK) with the backed-off RTO, or give up (BSD's 75 s
    /// TCPTV_KEEP_INIT, Linux tcp_syn_retries / tcp_synack_retries).
    fn syn_timeout(&mut self, net: &mut Net, now: Ns) {
        let p = self.p;
        let passive = self.state == TcpState::SynReceived;
        self.rxtshift += 1;
        self.timeouts += 1;
        let limit = if passive { p.synack_retries } else { p.syn_retries };
        if self.syn_final || matches!(limit, Some(n) if self.rxtshift > n) {
            self.give_up_opening(net, now);
            return;
        }
        self.rtt_seq = None; // Karn: a resent SYN gives no RTT sample
        let mut rto = rules::backed_off_rto(p, p.rto_initial_ns, self.rxtshift);
        if let Some(limit_ns) = p.establish_timeout_ns {
            let left = self.syn_started + limit_ns - now;
            if left <= rto {
                rto = left.max(1);
                self.syn_final = true;
            }
        }
        self.send_syn(net, now, passive, Some(rto));
    }

    /// Give up opening: BSD resets a peer whose SYN it received; otherwise close silently.
    fn give_up_opening(&mut self, net: &mut Net, now: Ns) {
        if self.state == TcpState::SynReceived && self.p.family == Family::Bsd {
            self.abort(net, now);
            return;
        }
        self.state = TcpState::Closed;
        self.aborted_at = Some(now);
        self.stop(net);
    }

    /// tcp_drop after too many retransmissions: a RST, the connection closed, the stall recorded.
    fn abort(&mut self, net: &mut Net, now: Ns) {
        self.tracker.abort(&mut |u| net.classify_loss(u), &mut self.stalls, now);
        let uid = self.next_uid();
        let seg = Segment {
            src: self.index,
            seq: self.snd_nxt,
            ack: self.rcv_nxt,
            flags: RST | ACK,
            window: 0,
            uid,
            tags: TAG_ABORT,
            ..Default::default()
        };
        self.segments_sent += 1;
        self.emit(net, now, seg);
        self.state = TcpState::Closed;
        self.aborted_at = Some(now);
        self.stop(net);
    }

    /// ICMP "fragmentation needed" with the next-hop MTU (RFC 1191): on_icmp_frag_needed.
    pub fn on_icmp_frag_needed(&mut self, net: &mut Net, now: Ns, mtu: i64) {
        if self.stopped {
            return;
        }
        self.route_mtu = Some(self.route_mtu.unwrap_or(self.mtu).min(mtu));
        if matches!(self.state, TcpState::Closed | TcpState::Listen | TcpState::SynSent | TcpState::SynReceived) {
            return;
        }
        let mss = rules::select_mss(self.p, mtu, self.peer_mss, None, self.ts_ok);
        if mss >= self.maxseg {
            return;
        }
        self.maxseg = mss;
        self.cc.mss = self.cc.mss.min(mss);
        self.icmp_mss_changes += 1;
        self.snd_nxt = self.snd_una;
        self.rtt_seq = None;
        self.tcp_output(net, now, Ctx::Icmp, false, false, 0, false);
    }

    fn persist_timeout(&mut self, net: &mut Net, now: Ns) {
        self.force = true;
        self.tcp_output(net, now, Ctx::Persist, false, false, 0, false);
        self.force = false;
        self.persist_shift = (self.persist_shift + 1).min(rules::MAX_RXTSHIFT);
        if self.sb_cc > self.snd_nxt - self.snd_una && !self.timers.running(TimerKind::Rexmt) {
            self.set_persist(net);
        }
    }

    fn rto_base(&self) -> i64 {
        let Some(srtt) = self.srtt_ns else { return self.p.rto_initial_ns };
        if let Some(st) = &self.lrtt {
            return rules::linux_rto_ns(self.p, st);
        }
        if let Some(srtt_fp) = self.srtt_fp {
            let ticks = rules::bsd_rexmtval_ticks(srtt_fp, self.rttvar_fp);
            let tick = self.p.slow_tick_ns.expect("fixed-point RTT without a slow tick");
            return (ticks * tick).max(self.p.rto_min_ns).min(self.p.rto_max_ns);
        }
        rules::rto_ns(self.p, srtt, self.rttvar_ns)
    }

    /// Linux tcp_ack_update_rtt: the estimator, tcp_set_rto, the back-off reset.
    fn linux_rtt_update(&mut self, sample: i64) {
        let (una, nxt, min) = (self.snd_una, self.snd_nxt, self.p.rto_min_ns);
        let st = self.lrtt.as_mut().expect("linux_rtt");
        rules::linux_rtt_estimator(st, sample, una, nxt, min);
        self.srtt_ns = Some(st.srtt8 >> 3);
        self.rttvar_ns = st.rttvar;
        self.rxtshift = 0;
        self.rxtcur = self.rto_base();
    }

    /// The RTT an ACK of new data gives by its timestamp echo, where the personality takes one
    /// (Linux tcp_ack_update_rtt's RTTM rule: timestamps negotiated, the ACK carries a TSecr).
    fn tsecr_rtt(&self, seg: &Segment, now: Ns) -> Option<i64> {
        if !(self.p.tsecr_rtt && self.ts_ok) {
            return None;
        }
        let (_, tsecr) = seg.timestamp?;
        rules::tsopt_rtt_ns(self.tsval(now), tsecr, self.p.ts_tick_ns)
    }

    fn rtt_sample(&mut self, now: Ns) {
        if self.lrtt.is_some() {
            // the SYN or SYN-ACK timed by time_syn
            self.rtt_seq = None;
            self.linux_rtt_update((now - self.rtt_start).max(1));
            return;
        }
        if let (Some(tick), true) = (self.p.slow_tick_ns, self.p.rtt_fixed_point) {
            let rtt_ticks = self.slow_ticks - self.rtt_start_tick + 1; // t_rtt counts slow ticks from 1
            let (srtt_fp, rttvar_fp) = rules::bsd_xmit_timer(self.srtt_fp, self.rttvar_fp, rtt_ticks);
            self.srtt_fp = Some(srtt_fp);
            self.rttvar_fp = rttvar_fp;
            self.srtt_ns = Some((srtt_fp * tick) >> rules::RTT_SHIFT);
            self.rttvar_ns = (rttvar_fp * tick) >> rules::RTTVAR_SHIFT;
            self.rtt_seq = None;
            self.rxtshift = 0;
            self.rxtcur = self.rto_base();
            return;
        }
        let sample = match self.p.slow_tick_ns {
            Some(tick) => (self.slow_ticks - self.rtt_start_tick + 1) * tick, // t_rtt counts slow ticks
            None => (now - self.rtt_start).max(1),
        };
        match self.srtt_ns {
            None => {
                self.srtt_ns = Some(sample);
                self.rttvar_ns = rules::fdiv(sample, 2);
            }
            Some(srtt) => {
                let err = sample - srtt;
                self.srtt_ns = Some(srtt + rules::fdiv(err, 8));
                self.rttvar_ns += rules::fdiv(err.abs() - self.rttvar_ns, 4);
            }
        }
        self.rtt_seq = None;
        self.rxtshift = 0;
        self.rxtcur = self.rto_base();
    }

    // ------------------------------------------------------------------ input

    /// The network interface: frames wait in the receive FIFO for kernel input processing.
    pub fn receive(&mut self, net: &mut Net, now: Ns, seg: Segment) {
        if self.stopped {
            return;
        }
        let ip_len = i64::from(seg.ip_len());
        if !self.cpu.rx_admit(now, ip_len) {
            self.rx_drops.push((now, seg.uid));
            // Only a bulk run's receiver logs its interface drops (Net::record_drop ignores others).
            let place = if self.index == 1 { "receiver-rx-fifo" } else { "sender-rx-fifo" };
            net.record_drop(now, &seg, "queue_overflow", place);
            return;
        }
        let cost = self.cpu.input_cost(net, i64::from(seg.payload_len));
        let done = self.cpu.kernel(now, cost);
        self.cpu.rx_hold(done, ip_len);
        if done == now {
            self.tcp_input(net, now, seg);
        } else {
            net.schedule(done, self.ev(HostEvent::Input(seg)));
        }
    }

    fn tcp_input(&mut self, net: &mut Net, now: Ns, seg: Segment) {
        if self.stopped {
            return;
        }
        let st = self.state;
        if st == TcpState::Listen {
            if seg.flags & SYN != 0 && seg.flags & ACK == 0 {
                self.accept_syn(&seg);
                self.state = TcpState::SynReceived;
                self.syn_started = now;
                self.send_syn(net, now, true, None);
                self.time_syn(now);
            }
            return;
        }
        if st == TcpState::SynSent {
            if seg.flags & SYN != 0 && seg.flags & ACK != 0 && seg.ack == self.iss + 1 {
                self.accept_syn(&seg);
                if self.rtt_seq.is_some() {
                    self.rtt_sample(now); // the SYN was timed
                }
                self.snd_una = seg.ack;
                self.timers.cancel(TimerKind::Rexmt);
                self.established(net, now);
                self.acknow = true;
                self.tcp_output(net, now, Ctx::Input, false, false, 0, false);
            }
            return;
        }
        if st == TcpState::SynReceived {
            if seg.flags & SYN != 0 {
                // The peer's SYN again: our SYN-ACK was lost. Linux resends the SYN-ACK at once;
                // 4.4BSD tcp_input trims the old SYN, finds no ACK and drops the segment ("If the
                // ACK bit is off we drop the segment"), leaving the resend to its own timer.
                if self.p.family != Family::Bsd {
                    self.rtt_seq = None; // Karn: the SYN-ACK goes again
                    self.send_syn(net, now, true, None);
                }
                return;
            }
            if seg.flags & ACK != 0 && seg.ack == self.iss + 1 {
                if self.rtt_seq.is_some() {
                    self.rtt_sample(now); // the SYN-ACK was timed
                }
                self.snd_una = seg.ack;
                self.timers.cancel(TimerKind::Rexmt);
                self.established(net, now);
            } else {
                return;
            }
        }
        if seg.flags & RST != 0 {
            // RFC 793: a reset in the window closes the connection (the peer gave up).
            if self.rcv_nxt <= seg.seq && seg.seq <= self.rcv_nxt + self.rcvbuf.max(1) {
                self.state = TcpState::Closed;
                self.reset_by_peer_at = Some(now);
                self.stop(net);
            }
            return;
        }
        if seg.flags & SYN != 0 {
            self.acknow = true; // a retransmitted SYN-ACK: our ACK was lost
            self.tcp_output(net, now, Ctx::Input, false, false, 0, false);
            return;
        }
        if let Some((tsval, _)) = seg.timestamp {
            if self.ts_ok && seg.seq <= self.last_ack_sent {
                self.ts_recent = tsval; // RFC 7323 section 4.3
            }
        }
        let timer_ack = seg.has_tag(TAG_DELACK_TIMER);
        if timer_ack {
            self.tracker.timer_ack();
        }
        if seg.flags & ACK != 0 {
            self.process_ack(net, now, &seg, timer_ack);
        }
        if seg.payload_len != 0 || seg.flags & FIN != 0 {
            self.process_data(net, now, &seg);
        }
        if self.acknow {
            self.tcp_output(net, now, Ctx::Input, false, false, 0, false);
        }
    }

    fn accept_syn(&mut self, seg: &Segment) {
        self.irs = seg.seq;
        self.rcv_nxt = seg.seq + 1;
        self.last_ack_sent = self.rcv_nxt;
        self.peer_mss = seg.mss.map(i64::from);
        self.peer_sack = seg.sack_permitted;
        self.peer_ts = seg.timestamp.is_some();
        if let Some((tsval, _)) = seg.timestamp {
            self.ts_recent = tsval;
        }
        if let Some(ws) = seg.wscale {
            if self.rcvbuf > MAX_WINDOW && self.p.name != "sunos41" {
                self.snd_scale = u32::from(ws);
                let mut s = 0;
                while (self.rcvbuf >> s) > MAX_WINDOW {
                    s += 1;
                }
                self.rcv_scale = s;
            }
        }
        self.snd_wnd = i64::from(seg.window);
        self.max_sndwnd = i64::from(seg.window);
        self.snd_wl1 = seg.seq;
        self.snd_wl2 = seg.ack;
    }

    fn established(&mut self, net: &mut Net, now: Ns) {
        let p = self.p;
        self.rxtshift = 0; // the opening's back-off does not carry into the connection
        self.syn_final = false;
        self.ts_ok = self.ts_enabled && self.peer_ts;
        if let Some(over) = self.mss_override {
            let peer = match self.peer_mss {
                Some(m) if m != 0 => m, // a peer MSS option of 0 counts as none
                _ => over,
            };
            // The forced MSS is what both offer; the timestamp option comes out of it (RFC 6691).
            self.maxseg = over.min(peer) - if self.ts_ok { rules::TIMESTAMP_OPTION } else { 0 };
        } else {
            self.maxseg = rules::select_mss(p, self.mtu, self.peer_mss, self.route_mtu, self.ts_ok);
        }
        self.sndbuf = rules::round_buffer(p, self.sndbuf, self.maxseg);
        self.rcvbuf = rules::round_buffer(p, self.rcvbuf, self.maxseg);
        self.cc = cc_mod::new_state(p.recovery, self.maxseg, p.initial_cwnd_segments, p.linux_ca, self.cubic);
        self.sack_ok = self.sack_enabled && self.peer_sack;
        self.dack = delack_mod::new_state(p, self.rcvbuf, self.maxseg);
        self.state = TcpState::Established;
        self.tracker.start(now);
        self.tracker.direction = self.direction.clone();
        let peer = match self.peer_window {
            PeerWindow::Unknown => None,
            PeerWindow::Fixed(rule, r) => Some((rule, i64::from(r))),
            PeerWindow::Host(i) => net.hosts.get(usize::from(i)).and_then(|h| h.as_deref()).map(|h| (h.p.window_update, h.rcvbuf)),
        };
        if let Some((rule, r)) = peer {
            let s = self.sndbuf;
            self.tracker.update_unreachable = s < r && !rules::window_update_due(rule, s, 0, r, self.maxseg, r - s);
        }
        app::established(self, net, now);
    }

    fn process_ack(&mut self, net: &mut Net, now: Ns, seg: &Segment, timer_ack: bool) {
        let ack = seg.ack;
        let win = i64::from(seg.window) << self.snd_scale;
        if ack > self.snd_max {
            self.acknow = true;
            return;
        }
        if self.sack_ok && !seg.sack.is_empty() {
            sack_mod::update(&mut self.sackb, ack.max(self.snd_una), self.snd_max, &seg.sack);
            if !self.sackb.rexmit.is_empty() {
                let sb = &self.sackb;
                let newest = self
                    .sent_uids
                    .iter()
                    .filter(|&&(s, _, _)| sack_mod::is_sacked(sb, s))
                    .map(|&(_, u, _)| u as i64)
                    .max()
                    .unwrap_or(-1);
                sack_mod::forget_lost_rexmits(&mut self.sackb, newest);
            }
        }
        let sack_recovery = self.sack_ok && self.cc.in_recovery;
        if ack <= self.snd_una {
            let dup = ack == self.snd_una
                && seg.payload_len == 0
                && seg.flags & FIN == 0
                && win == self.snd_wnd
                && self.timers.running(TimerKind::Rexmt)
                && self.snd_max > self.snd_una;
            self.update_window(seg, win);
            if dup && self.sack_ok {
                self.sack_dupack(net, now);
            } else if sack_recovery {
                self.sack_send(net, now);
            } else if dup {
                if cc_mod::on_dupack(&mut self.cc, self.snd_wnd, self.snd_max) {
                    if self.probe_outstanding_from(self.snd_una) {
                        self.mtu_probe_lost();
                    }
                    self.fast_retransmit(net, now);
                } else if self.cc.dupacks > cc_mod::DUPACK_THRESHOLD && self.cc.in_recovery {
                    self.tcp_output(net, now, Ctx::Ack, false, false, 0, false);
                }
            } else if self.sb_cc > self.snd_nxt - self.snd_una {
                let ctx = if timer_ack { Ctx::TimerAck } else { Ctx::Ack };
                self.tcp_output(net, now, ctx, false, false, 0, false);
            }
            return;
        }
        let acked = ack - self.snd_una;
        self.first_rexmit_at = None; // new data acknowledged: the retransmission episode is over
        if matches!(self.rtt_seq, Some(r) if ack > r) {
            self.rtt_sample(now);
        }
        let partial = if sack_recovery {
            // RFC 6675: a partial ACK keeps the recovery going, cwnd unchanged
            if ack >= self.cc.recover {
                cc_mod::leave_sack_recovery(&mut self.cc);
                self.sackb.rexmit.clear();
            }
            false
        } else {
            cc_mod::on_new_ack(&mut self.cc, acked, ack, now)
        };
        let mut data_acked = acked;
        if matches!(self.fin_seq, Some(f) if ack > f) {
            data_acked -= 1;
        }
        self.sb_cc -= data_acked.min(self.sb_cc);
        self.snd_una = ack;
        nagle_mod::on_ack(&mut self.nagle, now, ack);
        // tcp_clean_rtx_queue: the oldest newly acknowledged segment's send time, unless any of
        // them was retransmitted (Karn).
        let mut first_sent: Option<i64> = None;
        let mut any_resent = false;
        while let Some(&(s, _, at)) = self.sent_uids.front() {
            if s >= ack {
                break;
            }
            first_sent.get_or_insert(at);
            any_resent |= at < 0;
            self.sent_uids.pop_front();
        }
        if self.lrtt.is_some() {
            // tcp_ack_update_rtt: the send time's sample (seq_rtt_us), or where some of the data
            // was resent (Karn), with timestamps, the echo's (tcp_rtt_tsopt_us):
            // docs/tcp-rules.md#rtt-from-the-timestamp-echo. (An ACK of the FIN alone finds no
            // send time here; Linux times the FIN's skb, so it is left without a sample as before.)
            let sample = if any_resent {
                self.tsecr_rtt(seg, now)
            } else {
                first_sent.map(|at| (now - at).max(1))
            };
            if let Some(rtt) = sample {
                self.linux_rtt_update(rtt);
                cc_mod::on_rtt_sample(&mut self.cc, rtt);
            }
        }
        if self.snd_nxt < self.snd_una {
            self.snd_nxt = self.snd_una;
        }
        if ack == self.snd_max {
            self.timers.cancel(TimerKind::Rexmt);
        } else {
            self.timers.set(net, TimerKind::Rexmt, self.rxtcur);
        }
        self.update_window(seg, win);
        if self.snd_wnd > 0 {
            self.timers.cancel(TimerKind::Persist);
        }
        if matches!(self.fin_seq, Some(f) if ack > f) {
            self.our_fin_acked();
        }
        if matches!(self.mtup.as_ref().and_then(|st| st.probe), Some(p) if ack >= p.2) {
            self.mtu_probe_acked();
        }
        if partial {
            self.fast_retransmit(net, now);
        }
        let context = if timer_ack { Ctx::TimerAck } else { Ctx::Ack };
        if self.sack_ok && self.cc.in_recovery {
            self.sack_send(net, now);
        } else if self.p.family == Family::Linux20 && self.linux20_partial && self.snd_una == self.snd_max {
            self.tcp_output(net, now, context, false, false, 0, true);
        } else {
            self.tcp_output(net, now, context, false, false, 0, false);
        }
        self.writer_wake(net, now);
    }

    // ------------------------------------------------------------------ SACK loss recovery

    /// RFC 6675 section 5: recovery on the third duplicate ACK or once the first hole IsLost.
    fn sack_dupack(&mut self, net: &mut Net, now: Ns) {
        self.cc.dupacks += 1;
        if self.cc.in_recovery {
            self.sack_send(net, now);
        } else if self.cc.dupacks >= sack_mod::DUP_THRESH
            || sack_mod::is_lost(&self.sackb, self.snd_una, self.snd_max, self.maxseg)
        {
            if self.probe_outstanding_from(self.snd_una) {
                // the lost probe fails the search step; its data goes again without a cwnd cut
                self.mtu_probe_lost();
                self.sack_enter_recovery(net, now, false);
            } else {
                self.sack_enter_recovery(net, now, true);
            }
        }
    }

    fn sack_enter_recovery(&mut self, net: &mut Net, now: Ns, reduce: bool) {
        if reduce {
            cc_mod::enter_sack_recovery(&mut self.cc, self.snd_wnd, self.snd_max);
        } else {
            cc_mod::enter_loss_without_reduction(&mut self.cc, self.snd_max);
        }
        self.tracker.repaired();
        self.sackb.rexmit.clear();
        self.rtt_seq = None; // Karn
        self.timers.cancel(TimerKind::Rexmt);
        let first_sacked = self.sackb.sacked.first().map_or(self.snd_max, |r| r.0);
        let data_end = self.fin_seq.unwrap_or(self.snd_max);
        let length = self.maxseg.min(first_sacked - self.snd_una).min(data_end - self.snd_una);
        if length > 0 {
            self.sack_rexmit(net, now, self.snd_una, length);
        }
        self.sack_send(net, now);
    }

    /// RFC 6675 section 5 (C) with NextSeg(): while cwnd - pipe leaves a segment, a lost hole,
    /// else a full new segment.
    fn sack_send(&mut self, net: &mut Net, now: Ns) {
        let mss = self.maxseg;
        while self.cc.cwnd - sack_mod::pipe(&self.sackb, self.snd_una, self.snd_max, mss) >= mss {
            if let Some((seq, length)) = sack_mod::next_hole(&self.sackb, self.snd_una, self.snd_max, mss) {
                self.sack_rexmit(net, now, seq, length);
                continue;
            }
            let off = self.snd_max - self.snd_una;
            let length = mss.min(self.sb_cc - off).min(self.snd_una + self.snd_wnd - self.snd_max);
            if length < mss {
                return;
            }
            let before = self.snd_max;
            self.snd_nxt = self.snd_max;
            self.send(net, now, self.snd_max, length, ACK, 0);
            let n = self.snd_max - before;
            self.tracker.progress(&mut |u| net.classify_loss(u), &mut self.stalls, now, Trigger::Ack, n);
        }
    }

    /// Resend [seq, seq + length) without moving snd_nxt (a retransmission moves RFC 6675's
    /// HighRxt, not HighData).
    fn sack_rexmit(&mut self, net: &mut Net, now: Ns, seq: i64, length: i64) {
        let saved = self.snd_nxt;
        self.send(net, now, seq, length, ACK, TAG_RETRANSMIT);
        self.snd_nxt = saved;
        let uid = self.sent_uids.iter().find(|&&(s, _, _)| s == seq).map_or(0, |&(_, u, _)| u);
        sack_mod::record_rexmit(&mut self.sackb, seq, length, uid);
    }

    fn update_window(&mut self, seg: &Segment, win: i64) {
        if self.snd_wl1 < seg.seq || (self.snd_wl1 == seg.seq && self.snd_wl2 <= seg.ack) {
            self.snd_wnd = win;
            self.snd_wl1 = seg.seq;
            self.snd_wl2 = seg.ack;
            self.max_sndwnd = self.max_sndwnd.max(win);
        }
    }

    fn fast_retransmit(&mut self, net: &mut Net, now: Ns) {
        self.tracker.repaired();
        let onxt = self.snd_nxt;
        let cwnd = self.cc.cwnd;
        self.snd_nxt = self.snd_una;
        self.cc.cwnd = self.cc.mss;
        self.rtt_seq = None;
        self.timers.cancel(TimerKind::Rexmt);
        self.tcp_output(net, now, Ctx::FastRetransmit, false, false, 0, false);
        self.cc.cwnd = if self.p.recovery == Recovery::Tahoe { self.cc.mss } else { cwnd };
        self.snd_nxt = onxt.max(self.snd_nxt);
    }

    fn our_fin_acked(&mut self) {
        if self.state == TcpState::FinWait1 {
            self.state = TcpState::FinWait2;
        } else if matches!(self.state, TcpState::Closing | TcpState::LastAck) {
            self.state = if self.state == TcpState::Closing { TcpState::TimeWait } else { TcpState::Closed };
            self.timers.cancel(TimerKind::Rexmt);
        }
    }

    fn process_data(&mut self, net: &mut Net, now: Ns, seg: &Segment) {
        let start = seg.seq;
        let mut end = seg.seq + i64::from(seg.payload_len);
        let mut fin = seg.flags & FIN != 0;
        if end <= self.rcv_nxt && !(fin && end == self.rcv_nxt && !self.peer_fin) {
            self.acknow = true; // an old duplicate
            return;
        }
        if !self.state.receives_data() && !fin {
            return;
        }
        let in_order = start <= self.rcv_nxt;
        // A segment meeting a non-empty reassembly queue is ACKed at once (4.4BSD TCP_REASS,
        // Linux ICSK_ACK_NOW when the out-of-order queue drains).
        let queue_before = !self.ooo.is_empty();
        let unacked_before = self.rcv_nxt - self.last_ack_sent;
        let space = (self.rcvbuf - self.rcv_cc).max(0);
        if in_order && end - self.rcv_nxt > space {
            end = self.rcv_nxt + space; // beyond the window: trimmed (a zero-window probe's byte)
            fin = false;
            self.acknow = true;
        }
        if in_order {
            let added = end - self.rcv_nxt;
            self.rcv_nxt = end;
            self.rcv_cc += added.max(0);
            self.pull_reassembly();
            if fin {
                self.peer_fin_arrived();
            }
        } else {
            // The reassembly queue (4.4BSD tcp_reass), kept sorted; a duplicate goes after its twin.
            let pos = self.ooo.partition_point(|&x| x <= (start, end));
            self.ooo.insert(pos, (start, end));
            if self.sack_ok {
                self.ooo_arrivals.push((start, end));
            }
        }
        let infer_at_read = self.infer && self.reader.is_some();
        if infer_at_read {
            // OSF/1 tcp_input: how far the peer has sent into our window (small-sender inference).
            self.max_rcvd = delack_mod::note_sent_into_window(self.max_rcvd, self.rcvbuf, self.rcv_adv, self.rcv_nxt);
        }
        // Linux estimates the peer's MSS from the largest segment seen (tcp_measure_rcv_mss).
        self.rcv_mss_seen = self.rcv_mss_seen.max(i64::from(seg.payload_len).min(self.maxseg));
        let rcv_mss = if self.p.family != Family::Bsd { self.rcv_mss_seen } else { self.maxseg };
        let rto = self.rto_base();
        let decision = delack_mod::on_data(
            self.p,
            &mut self.dack,
            now,
            in_order && !queue_before,
            unacked_before + i64::from(seg.payload_len),
            rcv_mss,
            self.infer && !infer_at_read,
            rto,
            self.srtt_ns.unwrap_or(0),
        );
        if fin || decision == AckNow::Now || !in_order {
            self.acknow = true;
        } else {
            self.delack_flag = true;
            let delay = delack_mod::one_shot_delay(&self.dack, now);
            if let Some(delay) = delay {
                if !self.timers.running(TimerKind::Delack) {
                    self.timers.set(net, TimerKind::Delack, delay);
                }
            }
        }
        self.reader_try(net, now);
    }

    fn pull_reassembly(&mut self) {
        while let Some(&(s, e)) = self.ooo.first() {
            if s > self.rcv_nxt {
                break;
            }
            self.ooo.remove(0);
            if e > self.rcv_nxt {
                self.rcv_cc += e - self.rcv_nxt;
                self.rcv_nxt = e;
            }
        }
        if !self.ooo_arrivals.is_empty() {
            let rcv_nxt = self.rcv_nxt;
            self.ooo_arrivals.retain(|a| a.1 > rcv_nxt);
        }
    }

    fn peer_fin_arrived(&mut self) {
        self.peer_fin = true;
        self.rcv_nxt += 1;
        match self.state {
            TcpState::Established => self.state = TcpState::CloseWait,
            TcpState::FinWait1 => self.state = TcpState::Closing,
            TcpState::FinWait2 => self.state = TcpState::TimeWait,
            _ => {}
        }
    }
}
