"""A simulated end host with one TCP connection: socket buffers, the send path of its personality,
tcp_output's decision order, ACK/window-update policy, timers, recovery and a CPU cost model.

Time is always passed in (integer ns). Application hooks: `write(now, n, on_done)` behaves like a
blocking write() call (on_done when every byte is in the socket buffer); `read(now, max, on_data)`
like a blocking read() (on_data(now, n), n == 0 at end of stream).
"""

from __future__ import annotations

from typing import Callable

from .. import nagle as nagle_mod
from ..engine import NS_PER_MS, Simulator
from ..ground_truth import GroundTruth
from ..nagle import NagleVariant, SendContext
from ..segment import ACK, FIN, PSH, RST, SYN, Receiver, Segment
from . import congestion as cc_mod
from . import delack as delack_mod
from . import rules
from . import mtu_probe
from . import sack as sack_mod
from .costs import FREE, HostCost
from .cpu import HostCpu
from .personality import CopyRule, DelAckPolicy, Family, Personality, Recovery
from .state import TcpState, TimerKind
from .timers import Timers
from .stalls import (
    HOLD_APP_IDLE,
    HOLD_BUFFER_FULL,
    HOLD_NAGLE,
    HOLD_PARTIAL,
    HOLD_SWS,
    HOLD_WINDOW,
    TRIGGER_ACK,
    TRIGGER_PARTIAL_TIMER,
    TRIGGER_PERSIST,
    TRIGGER_RTO,
    TRIGGER_TIMER_ACK,
    LossClassifier,
    StallTracker,
)

TAG_TIMER_ACK = "delack_timer"
TAG_RETRANSMIT = "retransmit"
TAG_WINDOW_UPDATE = "window_update"
TAG_PERSIST = "persist_probe"

MAX_WINDOW = 65535


class Host:
    """One endpoint. Its output goes to `out` (a tap, a link); segments arrive at `receive`."""

    def __init__(
        self,
        sim: Simulator,
        name: str,
        addr: str,
        port: int,
        personality: Personality,
        *,
        mtu: int,
        sndbuf: int | None = None,
        rcvbuf: int | None = None,
        route_mtu: int | None = None,
        mss: int | None = None,
        mtu_probing: int = 0,
        sack: bool | None = None,
        congestion: str | None = None,
        advertised_mss: int | None = None,
        nagle: NagleVariant | None = None,
        receiver_inference: bool | None = None,
        cost: HostCost = FREE,
        ground_truth: GroundTruth | None = None,
        loss_classifier: LossClassifier | None = None,
        stall_threshold_ns: int = 10 * NS_PER_MS,
        tick_phase_ns: int = 0,
        uid_base: int = 0,
    ) -> None:
        p = personality
        self.sim, self.name, self.addr, self.port, self.p = sim, name, addr, port, p
        self.mtu, self.route_mtu = mtu, route_mtu
        self.mss_override, self.advertised_mss = mss, advertised_mss
        self.sndbuf = (sndbuf if sndbuf is not None else p.default_sndbuf) * p.sndbuf_multiplier
        self.rcvbuf = rcvbuf if rcvbuf is not None else p.default_rcvbuf
        if self.sndbuf <= 0 or self.rcvbuf <= 0:
            raise ValueError(f"{name}: socket buffers must be positive (sndbuf={self.sndbuf}, rcvbuf={self.rcvbuf})")
        self.variant = NagleVariant(nagle if nagle is not None else p.nagle)
        self.infer = p.small_sender_inference if receiver_inference is None else receiver_inference
        self.cost = cost
        self.gt = ground_truth
        self.out: Receiver | None = None
        self.state = TcpState.CLOSED
        self.peer: tuple[str, int] | None = None
        self._uid = uid_base
        self.stopped = False
        self.on_established: Callable[[int], None] | None = None
        self.on_established_hooks: list[Callable[[int], None]] = []  # run before on_established
        # Sequence space (unbounded ints from the ISN).
        self.iss = sim.rng.randrange(1 << 32)
        self.snd_una = self.snd_nxt = self.snd_max = self.iss
        self.snd_wnd = 0
        self.max_sndwnd = 0
        self.snd_wl1 = self.snd_wl2 = 0
        self.snd_scale = 0
        self.rcv_scale = 0
        self.irs = 0
        self.rcv_nxt = 0
        self.rcv_adv = 0
        self.last_ack_sent = 0
        self.maxseg = 536
        self.peer_mss: int | None = None
        # Socket buffers (byte counts; data content is not modelled).
        self.sb_cc = 0  # send buffer: bytes from snd_una (unacked + unsent)
        self.rcv_cc = 0  # receive buffer: in-order bytes not yet read
        self._ooo: list[tuple[int, int]] = []  # out-of-order (start, end)
        # SACK: offered in our SYN; used when the peer offered it too (RFC 2018).
        self.sack_enabled = p.sack if sack is None else sack
        self.sack_ok = False
        self._peer_sack = False
        self._ooo_arrivals: list[tuple[int, int]] = []  # out-of-order segments, oldest first
        self.sackb = sack_mod.Scoreboard()
        # RFC 7323 timestamps: offered in our SYN when the personality does; used when both SYNs
        # carry them (every segment then holds TSval and TSecr, and the MSS loses 12 bytes).
        self.ts_enabled = p.timestamps
        self.ts_ok = False
        self._peer_ts = False
        self.ts_recent = 0  # the peer's TSval we echo (RFC 7323 section 4.3)
        self._closing = False  # application closed: FIN after the data
        self._fin_seq: int | None = None  # sequence number our FIN occupies once sent
        self._peer_fin = False
        self._rcv_mss_seen = 1
        # Flags.
        self.acknow = False
        self.delack_flag = False
        self._lastidle = False
        self._force = False
        self._linux20_partial = False
        # Nagle, delayed ACK, congestion.
        self.nagle = nagle_mod.new_state(self.variant, p.mclbytes, p.minshall_idle_writes_only, p.write_more_hold)
        self.dack = delack_mod.new_state(p, self.rcvbuf, 536)
        # TCP_CONGESTION: "reno" or "cubic" on a stack that counts in packets (modern Linux).
        if congestion not in (None, "reno", "cubic") or (congestion == "cubic" and not p.linux_ca):
            raise ValueError(f"{name}: congestion control {congestion!r} is not available on {p.name}")
        self.cubic = p.cubic if congestion is None else congestion == "cubic"
        self.cc = cc_mod.new_state(p.recovery, 536, p.initial_cwnd_segments, p.linux_ca, self.cubic)
        # RTT / RTO.
        self.srtt_ns: int | None = None
        self.rttvar_ns = 0
        self._srtt_fp: int | None = None  # t_srtt / t_rttvar in fixed point (p.rtt_fixed_point)
        self._rttvar_fp = 0
        self.rxtshift = 0
        self.rxtcur = p.rto_initial_ns
        self._syn_started = 0  # when our SYN (or SYN-ACK) first went out
        self._syn_final = False  # the establishment limit falls before the next SYN resend
        self._rtt_seq: int | None = None
        self._rtt_start = 0
        self._rtt_start_tick = 0
        self._slow_ticks = 0
        self.timers = Timers(sim, p.slow_tick_ns, self._timer_fired)
        self._persist_shift = 0
        # seq -> (uid of its latest transmission, its first send time or -1 once resent: Karn).
        self._sent: dict[int, tuple[int, int]] = {}
        self._lrtt = rules.LinuxRtt() if p.linux_rtt else None  # Linux RTT estimator (p.linux_rtt)
        self.cpu = HostCpu(sim, cost)
        self.rx_drops: list[tuple[int, int]] = []  # (now, uid) dropped at the receive interface
        self.on_rx_drop: Callable[[int, Segment, str], None] | None = None
        # Applications.
        self._w_resid = 0
        self._w_total = 0  # bytes the current write() asked for
        self._w_cb: Callable[[int], None] | None = None
        self._w_blocked = False
        self._w_eom = True
        self._round_space = 0  # sosend: space left in the current copy round (4.4BSD/OSF)
        self._r_want = 0
        self._r_cb: Callable[[int, int], None] | None = None
        self._r_busy = False
        # Ground truth.
        # The Nagle detail comes from the hold (stalls.py _nagle_detail); the personality only says
        # whether its socket layer copies a write in fixed chunks (Moldeklev 2.1).
        self.stalls = StallTracker(ground_truth, stall_threshold_ns, f"{name} ->",
                                   p.copy_rule is CopyRule.SUNOS_CHUNK, loss_classifier)
        self.stalls.sticky_bytes = 2 * self.sndbuf
        # Counters.
        self.segments_sent = 0
        self.bytes_sent = 0
        self.retransmits = 0
        self.timeouts = 0
        self.icmp_mss_changes = 0  # "fragmentation needed" messages that lowered the MSS
        # Linux net.ipv4.tcp_mtu_probing = 1: black-hole detection after repeated timeouts lowers
        # the MSS to tcp_base_mss, then halves it (tcp_timer.c tcp_mtu_probing); from then on
        # probes search upwards (RFC 4821, tcp_mtu_probe: tcp/mtu_probe.py). Other stacks have no
        # such fallback.
        if mtu_probing not in (0, 1):
            raise ValueError(f"mtu_probing must be 0 or 1 (tcp_mtu_probing), got {mtu_probing}")
        self.mtu_probing = mtu_probing if personality.family is not Family.BSD else 0
        self._mtup_enabled = False
        self._mtup_low_mss = rules.LINUX_BASE_MSS
        self._mtup: mtu_probe.MtuSearch | None = None
        self.mtu_probes: list[tuple[int, int, bool | None]] = []  # (time, payload, acked?) per probe
        self._first_rexmit_at: int | None = None  # retrans_stamp: the episode's first timeout
        self.probe_mss_changes = 0
        self.aborted_at: int | None = None  # when we gave up and sent a RST
        self.reset_by_peer_at: int | None = None  # when the peer's RST closed us
        self._start_ticks(tick_phase_ns)

    # ------------------------------------------------------------------ wiring and clocks
    def attach(self, out: Receiver) -> None:
        self.out = out

    def stop(self) -> None:
        """Stop the free-running ticks and timers so the event queue can drain."""
        self.stopped = True
        self.timers.stop()

    def _next_uid(self) -> int:
        self._uid += 1
        return self._uid

    def _start_ticks(self, phase: int) -> None:
        p = self.p
        if p.delack is DelAckPolicy.BSD_TICK:
            self.sim.schedule(phase % p.delack_ns, self._fast_tick)
        if p.slow_tick_ns is not None:
            self.sim.schedule(phase % p.slow_tick_ns, self._slow_tick)

    def _fast_tick(self, now: int) -> None:
        """tcp_fasttimo: every 200 ms for all connections at once (docs/tcp-rules.md#delayed-ack-timers)."""
        if self.stopped:
            return
        self.sim.schedule(now + self.p.delack_ns, self._fast_tick)
        if self.delack_flag:
            self.delack_flag = False
            self.acknow = True
            self._tcp_output(now, "timer", tags=(TAG_TIMER_ACK,))

    def _slow_tick(self, now: int) -> None:
        """tcp_slowtimo: every 500 ms, counts REXMT and PERSIST down (docs/tcp-rules.md#retransmission-timer)."""
        if self.stopped:
            return
        self.sim.schedule(now + self.p.slow_tick_ns, self._slow_tick)
        self._slow_ticks += 1
        self.timers.slow_tick(now)

    def _timer_fired(self, now: int, kind: TimerKind) -> None:
        if self.stopped:
            return
        if kind is TimerKind.REXMT:
            self._retransmit_timeout(now)
        elif kind is TimerKind.PERSIST:
            self._persist_timeout(now)
        elif kind is TimerKind.DELACK:
            if self.delack_flag:
                self.delack_flag = False
                self.acknow = True
                self._tcp_output(now, "timer", tags=(TAG_TIMER_ACK,))
        elif kind is TimerKind.PARTIAL:
            if self._linux20_partial:
                self._linux20_partial = False
                self._tcp_output(now, "partial_timer", flush_partial=True)

    # ------------------------------------------------------------------ CPU and wire
    def _emit(self, now: int, seg: Segment) -> None:
        if self.out is None:
            raise RuntimeError(f"{self.name}: sending uid {seg.uid} but no output is attached")
        done = self.cpu.kernel(now, self.cost.output_ns(seg.payload_len))
        if done == now:
            self.out.receive(now, seg)
        else:
            out = self.out
            self.sim.schedule(done, lambda t: out.receive(t, seg))

    # ------------------------------------------------------------------ application API
    def listen(self) -> None:
        self.state = TcpState.LISTEN

    def connect(self, now: int, peer_addr: str, peer_port: int) -> None:
        self.peer = (peer_addr, peer_port)
        self.state = TcpState.SYN_SENT
        self._syn_started = now
        self._send_syn(now, ack=False)
        self._time_syn(now)

    def write(self, now: int, nbytes: int, on_done: Callable[[int], None], eom: bool = True) -> None:
        if self._w_cb is not None:
            raise RuntimeError(f"{self.name}: write while a write is in progress")
        if not self.state.can_send_data:
            raise RuntimeError(f"{self.name}: write in state {self.state.value}")
        self._w_resid, self._w_cb, self._w_eom = nbytes, on_done, eom
        self._w_total = nbytes
        nagle_mod.on_write_entry(self.nagle, self.snd_max == self.snd_una)
        self._sosend_step(now)

    def close(self, now: int) -> None:
        self._closing = True
        if self.state is TcpState.ESTABLISHED:
            self.state = TcpState.FIN_WAIT_1
        elif self.state is TcpState.CLOSE_WAIT:
            self.state = TcpState.LAST_ACK
        self._tcp_output(now, "close")

    def read(self, now: int, maxbytes: int, on_data: Callable[[int, int], None]) -> None:
        if self._r_cb is not None:
            raise RuntimeError(f"{self.name}: read while a read is in progress")
        self._r_want, self._r_cb = maxbytes, on_data
        self._reader_try(now)

    def idle_app(self) -> None:
        """The writer has nothing to send right now (think time): a stall now is application idle,
        unless data it wrote is still held back (then that hold explains the stall)."""
        if self.sb_cc <= self.snd_nxt - self.snd_una:
            self.stalls.hold(HOLD_APP_IDLE, "app")

    # ------------------------------------------------------------------ socket layer
    def _sosend_step(self, now: int) -> None:
        in_round = self._round_space > 0
        space = self._round_space if in_round else self.sndbuf - self.sb_cc
        lowat = self.maxseg if self.p.lowat_is_mss else self.p.writer_lowat
        n = rules.sosend_chunk(self.p, self._w_resid, space, in_round, lowat)
        if n and not in_round and rules.sosend_rounds(self.p):
            self._round_space = space  # measured once; the round copies until it is used up
        if n == 0:
            self._round_space = 0
            self._w_blocked = True
            if self.sb_cc and self.snd_max - self.snd_una >= self.sb_cc:
                self.stalls.hold(HOLD_BUFFER_FULL, "copy", b_sent=self.snd_max - self.snd_una, s_byte=self.sb_cc)
            if nagle_mod.on_app_block(self.nagle):
                self._tcp_output(now, "block")
            return
        self._w_blocked = False
        self.cpu.process(now, self.cost.write_ns(n), lambda t: self._copied(t, n))

    def _copied(self, now: int, n: int) -> None:
        self.sb_cc += n
        self._w_resid -= n
        more = self._w_resid > 0
        if self._round_space:
            self._round_space = self._round_space - n if more else 0
            space = self._round_space  # sosend's local `space` (Mogul figure 4 reads it)
        else:
            space = self.sndbuf - self.sb_cc
        nagle_mod.before_pru_send(self.nagle, self._w_resid, space)
        self._tcp_output(now, "copy", more_to_come=more, end_of_write=not more)
        if more:
            self._sosend_step(now)
        else:
            cb, self._w_cb = self._w_cb, None
            cb(now)

    def _writer_wake(self, now: int) -> None:
        if self._w_blocked and self._w_cb is not None:
            self._w_blocked = False
            nagle_mod.on_app_wake(self.nagle)
            self._sosend_step(now)

    def _reader_try(self, now: int) -> None:
        if self._r_cb is None or self._r_busy:
            return
        if self.rcv_cc == 0:
            if self._peer_fin:
                cb, self._r_cb = self._r_cb, None
                cb(now, 0)
            elif nagle_mod.on_app_block(self.nagle):
                self._tcp_output(now, "block")
            return
        n = min(self.rcv_cc, self._r_want)
        self._r_busy = True
        self.cpu.process(now, self.cost.read_ns(n), lambda t: self._read_done(t, n))

    def _read_done(self, now: int, n: int) -> None:
        self._r_busy = False
        self.rcv_cc -= n
        self._tcp_output(now, "read")  # PRU_RCVD: once per read call (docs/tcp-rules.md#window-update-per-read)
        cb, self._r_cb = self._r_cb, None
        cb(now, n)

    # ------------------------------------------------------------------ output
    def _window_to_advertise(self) -> int:
        peer_has = max(self.rcv_adv - self.rcv_nxt, 0)
        return rules.receive_window(
            self.rcvbuf - self.rcv_cc, self.rcvbuf, self.maxseg, peer_has, self.p.max_window << self.rcv_scale
        )

    def _tcp_output(
        self,
        now: int,
        context: str,
        *,
        more_to_come: bool = False,
        end_of_write: bool = False,
        tags: tuple[str, ...] = (),
        flush_partial: bool = False,
    ) -> None:
        """tcp_output: the BSD decision order (docs/tcp-rules.md#bsd-output-decision-order) with the Linux variants
        (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay, docs/tcp-rules.md#linux-20-partial-segment)."""
        if self.state in (TcpState.CLOSED, TcpState.LISTEN, TcpState.SYN_SENT, TcpState.SYN_RECEIVED):
            return
        if self._mtup is not None and context not in ("rto", "fast_retransmit", "persist") and self._mtu_probe(now) == 0:
            return  # tcp_write_xmit: a probe is due but must wait for room
        p = self.p
        if p.write_more_hold and self._w_cb is not None and 0 < self._w_resid < self._w_total:
            more_to_come = True  # the writer sleeps part-way through a write (TF_MORE stays set)
        idle = self.snd_max == self.snd_una  # computed once per call (docs/tcp-rules.md#bsd-output-decision-order)
        if p.moretocome:
            if self._lastidle:
                idle = True
            if idle and more_to_come:
                self._lastidle = True
                idle = False
            elif not more_to_come:
                self._lastidle = False
        trigger = TRIGGER_TIMER_ACK if context == "timer_ack" else (
            TRIGGER_RTO if context == "rto" else TRIGGER_PERSIST if context == "persist" else
            TRIGGER_PARTIAL_TIMER if context == "partial_timer" else TRIGGER_ACK
        )
        sent_any = False
        while True:
            off = self.snd_nxt - self.snd_una
            win = min(self.snd_wnd, self.cc.cwnd)
            if self._force and win == 0:
                win = 1
            length = min(self.sb_cc, win) - off
            unsent = self.sb_cc - off
            if length < 0:
                length = 0
                if win == 0:
                    # 4.4BSD: the window shut on data already sent (a probe): pull snd_nxt back and
                    # let the persist timer, not the retransmission timer, take over.
                    self.timers.cancel(TimerKind.REXMT)
                    self.snd_nxt = self.snd_una
                    off = 0
                    unsent = self.sb_cc
            if length > self.maxseg:
                length = self.maxseg
            reason = None
            hold = None
            if length > 0:
                nagle_ok = False
                if length < self.maxseg:
                    nagle_ok = self._nagle_ok(now, length, off, idle, more_to_come, end_of_write, context, flush_partial)
                reason = rules.bsd_send_reason(
                    length, self.maxseg, nagle_ok, self._force, self.max_sndwnd, self.snd_nxt < self.snd_max
                )
                if reason is None:
                    if length < unsent and win - off < self.maxseg:
                        # Sender SWS avoidance names the peer's window; when the congestion window is
                        # the smaller one (after a timeout, in slow start) the wait is cwnd's.
                        sws = length < self.max_sndwnd // 2 and win - off > 0 and self.snd_wnd <= self.cc.cwnd
                        hold = HOLD_SWS if sws else HOLD_WINDOW
                    elif self._linux20_partial and self.variant is NagleVariant.OFF:
                        hold = HOLD_PARTIAL
                    else:
                        hold = HOLD_NAGLE
            elif unsent > 0:
                hold = HOLD_WINDOW
            fin = self._closing and self._fin_seq is None and self.snd_nxt + length == self.snd_una + self.sb_cc
            # Window update (only if the receive window is open): docs/tcp-rules.md#window-update-thresholds.
            wupdate = False
            if reason is None and not self.acknow:
                space = self.rcvbuf - self.rcv_cc
                if space > 0 and self.state.receives_data:
                    peer_has = max(self.rcv_adv - self.rcv_nxt, 0)
                    adv = min(space, self.p.max_window << self.rcv_scale) - peer_has
                    wupdate = rules.window_update_due(p.window_update, adv, self.rcv_cc, self.rcvbuf, self.maxseg, peer_has)
                    if wupdate and p.suppress_update_with_delack and self.delack_flag:
                        wupdate = False
            if reason is None and not (wupdate or self.acknow or fin):
                if hold is not None:
                    # cwnd in the evidence only when it, not the peer's window, left no room.
                    cwnd = {"cwnd": self.cc.cwnd} if hold == HOLD_WINDOW and self.cc.cwnd < self.snd_wnd else {}
                    self.stalls.maxseg = self.maxseg
                    self.stalls.hold(hold, context, b_sent=self.snd_max - self.snd_una, s_byte=self.sb_cc,
                                     held=length, snd_wnd=self.snd_wnd,
                                     writing=self._w_resid > 0 or self._w_blocked, **cwnd,
                                     blocked=self._w_blocked)
                break
            if reason is None and not fin and p.family is not Family.BSD:
                # Linux sends a pure ACK; BSD's ACK carries whatever len allowed
                # (docs/tcp-rules.md#bsd-output-decision-order).
                length = 0
            seg_tags = tags
            if reason == "retransmit" or (self.snd_nxt < self.snd_max and length > 0):
                seg_tags = seg_tags + (TAG_RETRANSMIT,)
            if wupdate and length == 0:
                seg_tags = seg_tags + (TAG_WINDOW_UPDATE,)
            if reason == "persist":
                seg_tags = seg_tags + (TAG_PERSIST,)
            flags = ACK
            if fin and self.snd_nxt + length == self.snd_una + self.sb_cc:
                flags |= FIN
            if length and off + length == self.sb_cc:
                flags |= PSH
            new_before = self.snd_max
            self._send(now, self.snd_nxt, length, flags, seg_tags)
            sent_any = True
            if self.snd_max > new_before and length > 0:
                self.stalls.progress(now, trigger, self.snd_max - new_before)
            if reason is None:
                break
            # BSD loops only on sendalot; evaluating once more sends nothing else (the window or
            # the buffer bounded this segment) but records why the rest is held.
        if not sent_any:
            # Data queued and no timer running: persist (docs/tcp-rules.md#persist-timer), whatever the window; a
            # forced send then breaks a sender-SWS hold or probes a zero window.
            if (self.sb_cc > self.snd_nxt - self.snd_una and not self.timers.running(TimerKind.REXMT)
                    and not self.timers.running(TimerKind.PERSIST)):
                self._persist_shift = 0
                self._set_persist()
            if self.sb_cc == 0 and self._w_cb is None and not self._closing:
                self.stalls.hold(HOLD_APP_IDLE, context)

    def _nagle_ok(
        self, now: int, length: int, off: int, idle: bool, more: bool, eow: bool, context: str, flush: bool
    ) -> bool:
        p = self.p
        if p.family is Family.LINUX20:
            return self._linux20_tail(now, length, off, eow, context, flush)
        ctx = SendContext(
            now=now, length=length, maxseg=self.maxseg, off=off, sb_cc=self.sb_cc, idle=idle,
            snd_una=self.snd_una, snd_nxt=self.snd_nxt, snd_max=self.snd_max,
            more_to_come=more, end_of_message=self._w_eom and not more, from_write=context == "copy",
        )
        ok = nagle_mod.may_send_short(self.variant, self.nagle, ctx)
        if ok and p.moretocome and more and self.variant is NagleVariant.NAGLE:
            return False  # FreeBSD: step 2 also needs !TF_MORETOCOME (docs/tcp-rules.md#freebsd-more-to-come)
        return ok

    def _linux20_tail(self, now: int, length: int, off: int, eow: bool, context: str, flush: bool) -> bool:
        """Linux 2.0 partial segment (docs/tcp-rules.md#linux-20-partial-segment): the tail goes at the end of
        a write if nothing is outstanding, or with TCP_NODELAY if it fits the window; later only
        when nothing is outstanding (tcp_ack ignores TCP_NODELAY) or when the 1 s partial timer
        fires."""
        if length + off < self.sb_cc:
            return False
        packets_out = self.snd_max > self.snd_una
        nodelay = self.variant is NagleVariant.OFF
        if flush or not packets_out:
            self._linux20_partial = False
            self.timers.cancel(TimerKind.PARTIAL)
            return True
        if eow and nodelay:
            # At write time the tail went only if it fit the window (write_seq < window_seq).
            fits = self.snd_nxt + length <= self.snd_una + self.snd_wnd
            if fits:
                return True
        if not self._linux20_partial:
            self._linux20_partial = True
            self.timers.set(TimerKind.PARTIAL, self.p.partial_timer_ns)
        return False

    def _send(self, now: int, seq: int, length: int, flags: int, tags: tuple[str, ...] = ()) -> None:
        """Build, account and emit one segment; it carries the pending ACK."""
        win = self._window_to_advertise()
        self.rcv_adv = max(self.rcv_adv, self.rcv_nxt + win)
        seg = Segment(
            src=self.addr, dst=self.peer[0], sport=self.port, dport=self.peer[1], seq=seq, ack=self.rcv_nxt,
            flags=flags, window=min(win >> self.rcv_scale, MAX_WINDOW), payload_len=length,
            sack=sack_mod.receiver_blocks(self._ooo, self._ooo_arrivals, self._sack_max_blocks())
            if self.sack_ok and self._ooo else (),
            timestamp=(self._tsval(now), self.ts_recent) if self.ts_ok else None,
            uid=self._next_uid(), tags=tags,
        )
        self.last_ack_sent = self.rcv_nxt
        self.acknow = False
        if self.delack_flag:
            self.delack_flag = False
        self.timers.cancel(TimerKind.DELACK)
        delack_mod.on_ack_sent(self.dack)
        space = length + (1 if flags & FIN else 0)
        if space:
            if length:
                self._sent[seq] = (seg.uid, -1 if seq < self.snd_max else now)
            if flags & FIN and self._fin_seq is None:
                self._fin_seq = seq + length
            end = seq + space
            if seq < self.snd_max:
                self.retransmits += 1
            if end > self.snd_max:
                if self._rtt_seq is None and self._lrtt is None:  # Linux samples every ACK instead
                    self._rtt_seq, self._rtt_start, self._rtt_start_tick = seq, now, self._slow_ticks
                self.snd_max = end
            self.snd_nxt = end
            if not self.timers.running(TimerKind.REXMT):
                self.timers.cancel(TimerKind.PERSIST)
                self.timers.set(TimerKind.REXMT, self.rxtcur)
            nagle_mod.on_segment_sent(self.nagle, now, seq, length, self.maxseg)
        self._force = False
        self.segments_sent += 1
        self.bytes_sent += length
        self._emit(now, seg)

    def _send_syn(self, now: int, ack: bool, rto_ns: int | None = None) -> None:
        offer = self.advertised_mss if self.advertised_mss is not None else (
            self.mss_override if self.mss_override is not None else rules.offered_mss(self.p, self.mtu)
        )
        wscale = None
        if self.rcvbuf > MAX_WINDOW and self.p.name != "sunos41":
            while (self.rcvbuf >> (wscale or 0)) > MAX_WINDOW:
                wscale = (wscale or 0) + 1
        seg = Segment(
            src=self.addr, dst=self.peer[0], sport=self.port, dport=self.peer[1], seq=self.iss,
            ack=self.rcv_nxt if ack else 0, flags=SYN | (ACK if ack else 0),
            window=min(self.rcvbuf, self.p.max_window), mss=offer, wscale=wscale,
            sack_permitted=self.sack_enabled and (self._peer_sack or not ack),
            timestamp=(self._tsval(now), self.ts_recent if ack else 0) if self.ts_enabled and (self._peer_ts or not ack)
            else None,
            uid=self._next_uid(),
        )
        self._my_wscale = wscale
        self.snd_nxt = self.snd_max = self.iss + 1
        self.rcv_adv = self.rcv_nxt + min(self.rcvbuf, self.p.max_window)
        self.timers.set(TimerKind.REXMT, self.p.rto_initial_ns if rto_ns is None else rto_ns)
        self._emit(now, seg)

    def _tsval(self, now: int) -> int:
        """Our timestamp clock: the personality's tick count, offset by the ISN (a random start, as
        Linux's per-connection tsoffset), on 32 bits."""
        return (self.iss + now // self.p.ts_tick_ns) & 0xFFFFFFFF

    def _sack_max_blocks(self) -> int:
        """Blocks that fit beside the other options: 4, or 3 next to a timestamp (RFC 2018 section 3)."""
        return sack_mod.MAX_BLOCKS_WITH_TIMESTAMP if self.ts_ok else sack_mod.MAX_BLOCKS

    def _set_persist(self) -> None:
        srtt = self.srtt_ns or 0
        self.timers.set(TimerKind.PERSIST, rules.persist_ns(srtt, self.rttvar_ns, self._persist_shift))

    # ------------------------------------------------------------------ timers
    def _retransmit_timeout(self, now: int) -> None:
        if self.snd_una == self.snd_max:
            return
        if self.state in (TcpState.SYN_SENT, TcpState.SYN_RECEIVED):
            self._syn_timeout(now)
            return
        self.rxtshift += 1
        self.timeouts += 1
        if self.rxtshift > self.p.max_retransmits:
            self._abort(now)
            return
        if self._mtup is not None and self._mtup.probe is not None:
            self._mtu_probe_lost()  # the probe went unanswered until the timeout
        if self.mtu_probing and rules.black_hole_suspected(self._first_rexmit_at, now):
            self._mtu_probing_step()
        if self._first_rexmit_at is None:
            self._first_rexmit_at = now
        base = self._rto_base()
        self.rxtcur = rules.backed_off_rto(self.p, base, self.rxtshift)
        outstanding = sorted(u for s, (u, _) in self._sent.items() if s >= self.snd_una)
        self.stalls.timeout(outstanding)
        self.snd_nxt = self.snd_una
        self._rtt_seq = None  # Karn
        self.sackb.clear()  # RFC 2018 section 8: after a timeout the SACKed bits are turned off
        cc_mod.on_timeout(self.cc, self.snd_wnd)
        if self._fin_seq is not None and self.snd_una <= self._fin_seq:
            self._fin_seq = None
        self.timers.set(TimerKind.REXMT, self.rxtcur)
        self._tcp_output(now, "rto")

    def _time_syn(self, now: int) -> None:
        """Time the first SYN or SYN-ACK as tcp_output times any first transmission (t_rtt), so the
        connection starts with an RTT-based RTO rather than the initial one."""
        self._rtt_seq, self._rtt_start, self._rtt_start_tick = self.iss, now, self._slow_ticks

    def _mtu_probing_step(self) -> None:
        """tcp_mtu_probing: the first detection turns probing on, which caps the MSS at the search
        floor (tcp_base_mss); each later one halves the floor (not below tcp_mtu_probe_floor)."""
        if not self._mtup_enabled:
            self._mtup_enabled = True
            options = rules.TIMESTAMP_OPTION if self.ts_ok else 0  # tcp_mss_to_mtu counts them
            self._mtup = mtu_probe.new_search(self.maxseg + options, rules.LINUX_BASE_MSS, mtu_probe.HEADERS + options)
        else:
            self._mtup_low_mss = max(min(rules.LINUX_BASE_MSS, self._mtup_low_mss >> 1), rules.LINUX_MTU_PROBE_FLOOR)
            if self._mtup is not None:
                self._mtup.search_low = self._mtup_low_mss + self._mtup.headers
        mss = min(self.maxseg, self._mtup_low_mss)
        if mss < self.maxseg:
            self.maxseg = mss
            self.cc.mss = min(self.cc.mss, mss)
            self.probe_mss_changes += 1

    def _mtu_probe(self, now: int) -> int:
        """tcp_mtu_probe: -1 no probe now (send as usual), 0 wait for room, 1 a probe went."""
        st = self._mtup
        if (st is None or st.probe is not None or self.cc.in_recovery or self.snd_nxt < self.snd_max
                or self.cc.cwnd < mtu_probe.MIN_CWND_SEGMENTS * self.maxseg):
            return -1
        size = mtu_probe.probe_size(st)
        if size is None:
            return -1
        needed = size + (mtu_probe.REORDERING + 1) * self.maxseg
        if self.sb_cc - (self.snd_nxt - self.snd_una) < needed or self.snd_wnd < needed:
            return -1
        if self.snd_nxt + needed > self.snd_una + self.snd_wnd:
            return 0
        in_flight = (self.snd_max - self.snd_una) // self.maxseg
        if in_flight + 2 > self.cc.cwnd // self.maxseg:
            return 0 if in_flight else -1
        seq = self.snd_nxt
        st.probe = (size + st.headers, seq, seq + size)
        self.mtu_probes.append((now, size, None))
        self._send(now, seq, size, ACK)
        self.stalls.progress(now, TRIGGER_ACK, size)
        return 1

    def _mtu_probe_acked(self) -> None:
        """tcp_mtup_probe_success: the MSS becomes the probe's (cwnd kept in bytes)."""
        assert self._mtup is not None
        t, size, _ = self.mtu_probes[-1]
        self.mtu_probes[-1] = (t, size, True)
        mss = mtu_probe.succeeded(self._mtup)
        self._mtup_low_mss = mss
        if mss > self.maxseg:
            self.maxseg = mss
            self.cc.mss = mss
            self.probe_mss_changes += 1

    def _mtu_probe_lost(self) -> None:
        """tcp_mtup_probe_failed: the probe's size and above are taken to fail."""
        assert self._mtup is not None
        t, size, _ = self.mtu_probes[-1]
        self.mtu_probes[-1] = (t, size, False)
        mtu_probe.failed(self._mtup)

    def _syn_timeout(self, now: int) -> None:
        """The SYN (or our SYN-ACK) went unanswered: resend it with the backed-off RTO, or give up
        (the personality's establish_timeout_ns, syn_retries, synack_retries)."""
        p = self.p
        passive = self.state is TcpState.SYN_RECEIVED
        self.rxtshift += 1
        self.timeouts += 1
        limit = p.synack_retries if passive else p.syn_retries
        if self._syn_final or (limit is not None and self.rxtshift > limit):
            self._give_up_opening(now)
            return
        self._rtt_seq = None  # Karn: a resent SYN gives no RTT sample
        rto = rules.backed_off_rto(p, p.rto_initial_ns, self.rxtshift)
        if p.establish_timeout_ns is not None:
            left = self._syn_started + p.establish_timeout_ns - now
            if left <= rto:
                rto = max(left, 1)
                self._syn_final = True  # the establishment timer expires before the next resend
        self._send_syn(now, ack=passive, rto_ns=rto)

    def _give_up_opening(self, now: int) -> None:
        """BSD tcp_drop resets a peer whose SYN it has received; an unanswered connect, and Linux,
        close silently."""
        if self.state is TcpState.SYN_RECEIVED and self.p.family is Family.BSD:
            self._abort(now)
            return
        self.state = TcpState.CLOSED
        self.aborted_at = now
        self.stop()

    def _abort(self, now: int) -> None:
        """tcp_drop after too many retransmissions: a RST to the peer, the connection closed, and
        the stall up to here recorded with the cause of its losses."""
        self.stalls.abort(now)
        seg = Segment(
            src=self.addr, dst=self.peer[0], sport=self.port, dport=self.peer[1], seq=self.snd_nxt,
            ack=self.rcv_nxt, flags=RST | ACK, window=0, uid=self._next_uid(), tags=("abort",),
        )
        self.segments_sent += 1
        self._emit(now, seg)
        self.state = TcpState.CLOSED
        self.aborted_at = now
        self.stop()

    def on_icmp_frag_needed(self, now: int, mtu: int) -> None:
        """ICMP "fragmentation needed" with the next-hop MTU (RFC 1191). As 4.4BSD tcp_mtudisc and
        Linux tcp_v4_mtu_reduced: lower the MSS the connection uses and resend what was sent at the
        old size at once (snd_nxt back to snd_una), without waiting for the retransmission timer
        and without a congestion response. A larger or equal MTU changes nothing."""
        if self.stopped:
            return
        self.route_mtu = min(self.route_mtu or self.mtu, mtu)
        if self.state in (TcpState.CLOSED, TcpState.LISTEN, TcpState.SYN_SENT, TcpState.SYN_RECEIVED):
            return  # the MSS is chosen from the route MTU when the connection is established
        mss = rules.select_mss(self.p, mtu, self.peer_mss, timestamps=self.ts_ok)
        if mss >= self.maxseg:
            return
        self.maxseg = mss
        self.cc.mss = min(self.cc.mss, mss)
        self.icmp_mss_changes += 1
        self.snd_nxt = self.snd_una
        self._rtt_seq = None  # Karn: the resent data gives no RTT sample
        self._tcp_output(now, "icmp")

    def _persist_timeout(self, now: int) -> None:
        self._force = True
        self._tcp_output(now, "persist")
        self._force = False
        self._persist_shift = min(self._persist_shift + 1, rules.MAX_RXTSHIFT)
        if self.sb_cc > self.snd_nxt - self.snd_una and not self.timers.running(TimerKind.REXMT):
            self._set_persist()

    def _rto_base(self) -> int:
        if self.srtt_ns is None:
            return self.p.rto_initial_ns
        if self._lrtt is not None:
            return rules.linux_rto_ns(self.p, self._lrtt)
        if self._srtt_fp is not None:
            ticks = rules.bsd_rexmtval_ticks(self._srtt_fp, self._rttvar_fp)
            return min(max(ticks * self.p.slow_tick_ns, self.p.rto_min_ns), self.p.rto_max_ns)
        return rules.rto_ns(self.p, self.srtt_ns, self.rttvar_ns)

    def _linux_rtt_update(self, sample: int) -> None:
        """tcp_ack_update_rtt: the estimator, tcp_set_rto, and the back-off reset (RFC 6298)."""
        assert self._lrtt is not None
        rules.linux_rtt_estimator(self._lrtt, sample, self.snd_una, self.snd_nxt, self.p.rto_min_ns)
        self.srtt_ns, self.rttvar_ns = self._lrtt.srtt8 >> 3, self._lrtt.rttvar
        self.rxtshift = 0
        self.rxtcur = self._rto_base()

    def _rtt_sample(self, now: int) -> None:
        if self._lrtt is not None:  # the SYN or SYN-ACK timed by _time_syn
            self._rtt_seq = None
            self._linux_rtt_update(max(now - self._rtt_start, 1))
            return
        tick = self.p.slow_tick_ns
        if tick is not None and self.p.rtt_fixed_point:
            rtt_ticks = self._slow_ticks - self._rtt_start_tick + 1  # t_rtt counts slow ticks from 1
            self._srtt_fp, self._rttvar_fp = rules.bsd_xmit_timer(self._srtt_fp, self._rttvar_fp, rtt_ticks)
            self.srtt_ns = (self._srtt_fp * tick) >> rules.RTT_SHIFT
            self.rttvar_ns = (self._rttvar_fp * tick) >> rules.RTTVAR_SHIFT
            self._rtt_seq = None
            self.rxtshift = 0
            self.rxtcur = self._rto_base()
            return
        if tick is not None:
            sample = (self._slow_ticks - self._rtt_start_tick + 1) * tick  # t_rtt counts slow ticks
        else:
            sample = max(now - self._rtt_start, 1)
        if self.srtt_ns is None:
            self.srtt_ns, self.rttvar_ns = sample, sample // 2
        else:
            err = sample - self.srtt_ns
            self.srtt_ns += err // 8
            self.rttvar_ns += (abs(err) - self.rttvar_ns) // 4
        self._rtt_seq = None
        self.rxtshift = 0
        self.rxtcur = self._rto_base()

    # ------------------------------------------------------------------ input
    def receive(self, now: int, seg: Segment) -> None:
        """The network interface: frames wait in the receive FIFO for kernel input processing."""
        if self.stopped:
            return
        cpu = self.cpu
        ip_len = seg.ip_len
        if not cpu.rx_admit(now, ip_len):
            self.rx_drops.append((now, seg.uid))
            if self.on_rx_drop is not None:
                self.on_rx_drop(now, seg, "queue_overflow")  # the interface's receive buffer
            return
        done = cpu.kernel(now, cpu.input_cost(seg.payload_len))
        cpu.rx_hold(done, ip_len)
        if done == now:
            self._tcp_input(now, seg)
        else:
            self.sim.schedule(done, lambda t: self._tcp_input(t, seg))

    def _tcp_input(self, now: int, seg: Segment) -> None:
        if self.stopped:
            return
        st = self.state
        if st is TcpState.LISTEN:
            if seg.flags & SYN and not seg.flags & ACK:
                self.peer = (seg.src, seg.sport)
                self._accept_syn(seg)
                self.state = TcpState.SYN_RECEIVED
                self._syn_started = now
                self._send_syn(now, ack=True)
                self._time_syn(now)
            return
        if st is TcpState.SYN_SENT:
            if seg.flags & SYN and seg.flags & ACK and seg.ack == self.iss + 1:
                self._accept_syn(seg)
                if self._rtt_seq is not None:
                    self._rtt_sample(now)  # the SYN was timed (tcp_input: tcp_xmit_timer on the SYN-ACK)
                self.snd_una = seg.ack
                self.timers.cancel(TimerKind.REXMT)
                self._established(now, seg)
                self.acknow = True
                self._tcp_output(now, "input")
            return
        if st is TcpState.SYN_RECEIVED:
            if seg.flags & SYN:
                # The peer's SYN again: our SYN-ACK was lost. Linux answers with the SYN-ACK at once;
                # 4.4BSD trims the old SYN, finds no ACK and drops the segment, leaving the resend
                # to its own timer (tcp_input.c, "If the ACK bit is off we drop the segment").
                if self.p.family is not Family.BSD:
                    self._rtt_seq = None  # Karn: the SYN-ACK goes again
                    self._send_syn(now, ack=True)
                return
            if seg.flags & ACK and seg.ack == self.iss + 1:
                if self._rtt_seq is not None:
                    self._rtt_sample(now)  # the SYN-ACK was timed
                self.snd_una = seg.ack
                self.timers.cancel(TimerKind.REXMT)
                self._established(now, seg)
            else:
                return
        if seg.flags & RST:
            # RFC 793: a reset in the window closes the connection (the peer gave up).
            if self.rcv_nxt <= seg.seq <= self.rcv_nxt + max(self.rcvbuf, 1):
                self.state = TcpState.CLOSED
                self.reset_by_peer_at = now
                self.stop()
            return
        if seg.flags & SYN:
            self.acknow = True  # a retransmitted SYN-ACK: our ACK was lost
            self._tcp_output(now, "input")
            return
        if self.ts_ok and seg.timestamp is not None and seg.seq <= self.last_ack_sent:
            self.ts_recent = seg.timestamp[0]  # RFC 7323 section 4.3 (tcp_input: SEQ_LEQ(th_seq, last_ack_sent))
        timer_ack = TAG_TIMER_ACK in seg.tags
        if timer_ack:
            self.stalls.timer_ack()
        if seg.flags & ACK:
            self._process_ack(now, seg, timer_ack)
        if seg.payload_len or seg.flags & FIN:
            self._process_data(now, seg)
        if self.acknow:
            self._tcp_output(now, "input")

    def _accept_syn(self, seg: Segment) -> None:
        self.irs = seg.seq
        self.rcv_nxt = seg.seq + 1
        self.last_ack_sent = self.rcv_nxt
        self.peer_mss = seg.mss
        self._peer_sack = seg.sack_permitted
        self._peer_ts = seg.timestamp is not None
        if seg.timestamp is not None:
            self.ts_recent = seg.timestamp[0]
        if seg.wscale is not None and self.rcvbuf > MAX_WINDOW and self.p.name != "sunos41":
            self.snd_scale = seg.wscale
            s = 0
            while (self.rcvbuf >> s) > MAX_WINDOW:
                s += 1
            self.rcv_scale = s
        self.snd_wnd = seg.window
        self.max_sndwnd = seg.window
        self.snd_wl1, self.snd_wl2 = seg.seq, seg.ack

    def _established(self, now: int, seg: Segment) -> None:
        p = self.p
        self.rxtshift = 0  # the opening's back-off does not carry into the connection
        self._syn_final = False
        self.ts_ok = self.ts_enabled and self._peer_ts
        if self.mss_override is not None:
            # The forced MSS is what both offer; the timestamp option comes out of it (RFC 6691).
            self.maxseg = min(self.mss_override, self.peer_mss or self.mss_override)
            if self.ts_ok:
                self.maxseg -= rules.TIMESTAMP_OPTION
        else:
            self.maxseg = rules.select_mss(p, self.mtu, self.peer_mss, self.route_mtu, self.ts_ok)
        self.sndbuf = rules.round_buffer(p, self.sndbuf, self.maxseg)
        self.rcvbuf = rules.round_buffer(p, self.rcvbuf, self.maxseg)
        self.cc = cc_mod.new_state(p.recovery, self.maxseg, p.initial_cwnd_segments, p.linux_ca, self.cubic)
        self.sack_ok = self.sack_enabled and self._peer_sack
        self.dack = delack_mod.new_state(p, self.rcvbuf, self.maxseg)
        self.state = TcpState.ESTABLISHED
        self.stalls.start(now)
        self.stalls.direction = f"{self.addr}:{self.port} -> {self.peer[0]}:{self.peer[1]}"
        for hook in self.on_established_hooks:
            hook(now)
        if self.on_established is not None:
            self.on_established(now)

    def _process_ack(self, now: int, seg: Segment, timer_ack: bool) -> None:
        ack = seg.ack
        win = seg.window << self.snd_scale
        if ack > self.snd_max:
            self.acknow = True
            return
        if self.sack_ok and seg.sack:
            sack_mod.update(self.sackb, max(ack, self.snd_una), self.snd_max, seg.sack)
            if self.sackb.rexmit:
                newest = max((u for s, (u, _) in self._sent.items() if sack_mod.is_sacked(self.sackb, s)), default=-1)
                sack_mod.forget_lost_rexmits(self.sackb, newest)
        sack_recovery = self.sack_ok and self.cc.in_recovery
        if ack <= self.snd_una:
            dup = (
                ack == self.snd_una and seg.payload_len == 0 and not seg.flags & FIN
                and win == self.snd_wnd and self.timers.running(TimerKind.REXMT) and self.snd_max > self.snd_una
            )
            self._update_window(seg, win)
            if dup and self.sack_ok:
                self._sack_dupack(now)
            elif sack_recovery:
                self._sack_send(now)
            elif dup:
                if cc_mod.on_dupack(self.cc, self.snd_wnd, self.snd_max):
                    if self._mtup is not None and self._mtup.probe is not None and self.snd_una >= self._mtup.probe[1]:
                        self._mtu_probe_lost()
                    self._fast_retransmit(now)
                elif self.cc.dupacks > cc_mod.DUPACK_THRESHOLD and self.cc.in_recovery:
                    self._tcp_output(now, "ack")
            elif self.sb_cc > self.snd_nxt - self.snd_una:
                self._tcp_output(now, "timer_ack" if timer_ack else "ack")
            return
        acked = ack - self.snd_una
        self._first_rexmit_at = None  # new data acknowledged: the retransmission episode is over
        if self._rtt_seq is not None and ack > self._rtt_seq:
            self._rtt_sample(now)
        if sack_recovery:
            partial = False  # RFC 6675: a partial ACK keeps the recovery going, cwnd unchanged
            if ack >= self.cc.recover:
                cc_mod.leave_sack_recovery(self.cc)
                self.sackb.rexmit.clear()
        else:
            partial = cc_mod.on_new_ack(self.cc, acked, ack, now)
        data_acked = acked
        if self._fin_seq is not None and ack > self._fin_seq:
            data_acked -= 1
        self.sb_cc -= min(data_acked, self.sb_cc)
        self.snd_una = ack
        nagle_mod.on_ack(self.nagle, now, ack)
        sent = sorted((s, self._sent.pop(s)[1]) for s in [s for s in self._sent if s < ack])
        if self._lrtt is not None and sent and min(at for _, at in sent) >= 0:
            # tcp_clean_rtx_queue: the oldest newly acknowledged segment's send time, unless
            # any of them was retransmitted (Karn).
            rtt = max(now - sent[0][1], 1)
            self._linux_rtt_update(rtt)
            cc_mod.on_rtt_sample(self.cc, rtt)
        if self.snd_nxt < self.snd_una:
            self.snd_nxt = self.snd_una
        if ack == self.snd_max:
            self.timers.cancel(TimerKind.REXMT)
        else:
            self.timers.set(TimerKind.REXMT, self.rxtcur)
        self._update_window(seg, win)
        if self.snd_wnd > 0:
            self.timers.cancel(TimerKind.PERSIST)
        if self._fin_seq is not None and ack > self._fin_seq:
            self._our_fin_acked(now)
        if self._mtup is not None and self._mtup.probe is not None and ack >= self._mtup.probe[2]:
            self._mtu_probe_acked()
        if partial:
            self._fast_retransmit(now, newreno_partial=True)
        context = "timer_ack" if timer_ack else "ack"
        if self.sack_ok and self.cc.in_recovery:
            self._sack_send(now)
        elif self.p.family is Family.LINUX20 and self._linux20_partial and self.snd_una == self.snd_max:
            self._tcp_output(now, context, flush_partial=True)
        else:
            self._tcp_output(now, context)
        self._writer_wake(now)

    # ------------------------------------------------------------------ SACK loss recovery
    def _sack_dupack(self, now: int) -> None:
        """A duplicate ACK on a SACK connection: enter recovery on the third, or as soon as the
        scoreboard deems the first unacknowledged segment lost (RFC 6675 section 5)."""
        cc = self.cc
        cc.dupacks += 1
        if cc.in_recovery:
            self._sack_send(now)
        elif cc.dupacks >= sack_mod.DUP_THRESH or sack_mod.is_lost(self.sackb, self.snd_una, self.snd_max, self.maxseg):
            probe = self._mtup.probe if self._mtup is not None else None
            if probe is not None and self.snd_una >= probe[1]:
                # tcp_fastretrans_alert: the lost probe fails the search step and its data goes
                # again at the current MSS without a cut in cwnd (tcp_simple_retransmit).
                self._mtu_probe_lost()
                self._sack_enter_recovery(now, reduce=False)
            else:
                self._sack_enter_recovery(now)

    def _sack_enter_recovery(self, now: int, reduce: bool = True) -> None:
        if reduce:
            cc_mod.enter_sack_recovery(self.cc, self.snd_wnd, self.snd_max)
        else:
            cc_mod.enter_loss_without_reduction(self.cc, self.snd_max)
        self.stalls.repaired()
        self.sackb.rexmit.clear()
        self._rtt_seq = None  # Karn: what is retransmitted is not timed
        self.timers.cancel(TimerKind.REXMT)
        # (4.2) the first unacknowledged segment goes at once, whatever IsLost says.
        first_sacked = self.sackb.sacked[0][0] if self.sackb.sacked else self.snd_max
        data_end = self._fin_seq if self._fin_seq is not None else self.snd_max
        length = min(self.maxseg, first_sacked - self.snd_una, data_end - self.snd_una)
        if length > 0:
            self._sack_rexmit(now, self.snd_una, length)
        self._sack_send(now)

    def _sack_send(self, now: int) -> None:
        """RFC 6675 section 5 (C): while cwnd - pipe leaves a segment, send NextSeg: a lost hole,
        else a full segment of new data (a short tail waits for the end of recovery, when the
        Nagle test applies again)."""
        mss = self.maxseg
        while self.cc.cwnd - sack_mod.pipe(self.sackb, self.snd_una, self.snd_max, mss) >= mss:
            hole = sack_mod.next_hole(self.sackb, self.snd_una, self.snd_max, mss)
            if hole is not None:
                self._sack_rexmit(now, *hole)
                continue
            off = self.snd_max - self.snd_una
            length = min(mss, self.sb_cc - off, self.snd_una + self.snd_wnd - self.snd_max)
            if length < mss:
                return
            before = self.snd_max
            self.snd_nxt = self.snd_max
            self._send(now, self.snd_max, length, ACK)
            self.stalls.progress(now, TRIGGER_ACK, self.snd_max - before)

    def _sack_rexmit(self, now: int, seq: int, length: int) -> None:
        """Retransmit [seq, seq + length) without moving snd_nxt (it stays at snd_max in recovery)."""
        saved = self.snd_nxt
        self._send(now, seq, length, ACK, (TAG_RETRANSMIT,))
        self.snd_nxt = saved
        sack_mod.record_rexmit(self.sackb, seq, length, self._sent[seq][0])

    def _update_window(self, seg: Segment, win: int) -> None:
        if (self.snd_wl1 < seg.seq or (self.snd_wl1 == seg.seq and self.snd_wl2 <= seg.ack)):
            self.snd_wnd = win
            self.snd_wl1, self.snd_wl2 = seg.seq, seg.ack
            self.max_sndwnd = max(self.max_sndwnd, win)

    def _fast_retransmit(self, now: int, newreno_partial: bool = False) -> None:
        self.stalls.repaired()
        onxt = self.snd_nxt
        cwnd = self.cc.cwnd
        self.snd_nxt = self.snd_una
        self.cc.cwnd = self.cc.mss
        self._rtt_seq = None
        self.timers.cancel(TimerKind.REXMT)
        self._tcp_output(now, "fast_retransmit")
        self.cc.cwnd = self.cc.mss if self.p.recovery is Recovery.TAHOE else cwnd
        self.snd_nxt = max(onxt, self.snd_nxt)

    def _our_fin_acked(self, now: int) -> None:
        if self.state is TcpState.FIN_WAIT_1:
            self.state = TcpState.FIN_WAIT_2
        elif self.state in (TcpState.CLOSING, TcpState.LAST_ACK):
            self.state = TcpState.TIME_WAIT if self.state is TcpState.CLOSING else TcpState.CLOSED
            self.timers.cancel(TimerKind.REXMT)

    def _process_data(self, now: int, seg: Segment) -> None:
        start, end = seg.seq, seg.seq + seg.payload_len
        fin = bool(seg.flags & FIN)
        if end <= self.rcv_nxt and not (fin and end == self.rcv_nxt and not self._peer_fin):
            self.acknow = True  # an old duplicate
            return
        if not self.state.receives_data and not fin:
            return
        in_order = start <= self.rcv_nxt
        # A segment that meets a non-empty reassembly queue is ACKed at once, even when it fills
        # the last hole (4.4BSD TCP_REASS: tcp_reass and TF_ACKNOW unless the queue is empty;
        # Linux tcp_data_queue: ICSK_ACK_NOW once the out-of-order queue drains).
        queue_before = bool(self._ooo)
        unacked_before = self.rcv_nxt - self.last_ack_sent
        space = max(self.rcvbuf - self.rcv_cc, 0)
        if in_order and end - self.rcv_nxt > space:
            end = self.rcv_nxt + space  # beyond the window: trimmed (a zero-window probe's byte)
            fin = False
            self.acknow = True
        if in_order:
            added = end - self.rcv_nxt
            self.rcv_nxt = end
            self.rcv_cc += max(added, 0)
            self._pull_reassembly()
            if fin:
                self._peer_fin_arrived()
        else:
            self._ooo.append((start, end))
            self._ooo.sort()
            if self.sack_ok:
                self._ooo_arrivals.append((start, end))
        # Linux estimates the peer's MSS from the largest segment seen (tcp_measure_rcv_mss).
        self._rcv_mss_seen = max(self._rcv_mss_seen, min(seg.payload_len, self.maxseg))
        rcv_mss = self._rcv_mss_seen if self.p.family is not Family.BSD else self.maxseg
        decision = delack_mod.on_data(
            self.p, self.dack, now, in_order and not queue_before, unacked_before + seg.payload_len,
            rcv_mss, self.infer, self._rto_base(), self.srtt_ns or 0,
        )
        if fin or decision is delack_mod.AckNow.NOW or not in_order:
            self.acknow = True
        else:
            self.delack_flag = True
            delay = delack_mod.one_shot_delay(self.dack, now)
            if delay is not None and not self.timers.running(TimerKind.DELACK):
                self.timers.set(TimerKind.DELACK, delay)
        self._reader_try(now)

    def _pull_reassembly(self) -> None:
        while self._ooo and self._ooo[0][0] <= self.rcv_nxt:
            s, e = self._ooo.pop(0)
            if e > self.rcv_nxt:
                self.rcv_cc += e - self.rcv_nxt
                self.rcv_nxt = e
        if self._ooo_arrivals:
            self._ooo_arrivals = [a for a in self._ooo_arrivals if a[1] > self.rcv_nxt]

    def _peer_fin_arrived(self) -> None:
        self._peer_fin = True
        self.rcv_nxt += 1
        if self.state is TcpState.ESTABLISHED:
            self.state = TcpState.CLOSE_WAIT
        elif self.state is TcpState.FIN_WAIT_1:
            self.state = TcpState.CLOSING
        elif self.state is TcpState.FIN_WAIT_2:
            self.state = TcpState.TIME_WAIT
