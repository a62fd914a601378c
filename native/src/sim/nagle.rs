//! Every Nagle variant as one pure decision module: the 13 of Mogul & Minshall's table 3
//! (sections 3 and 5), Moldeklev & Gunningberg's UNACKED-MSS (section 4.2.1) and Linux TCP_CORK
//! (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay). The host's tcp_output asks
//! may_send_short at step 2 of the BSD decision order; its sosend calls the hooks of figures 4-6.

pub const MCLBYTES_TRU64: i64 = 8192;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NagleVariant {
    Nagle,
    Off,
    Minshall,
    Msmv,
    Eom,
    EM,
    MinMore,
    Dldet,
    EMM,
    EMD,
    Borman,
    UnackedMss,
    Cork,
}

impl NagleVariant {
    pub const ALL: [NagleVariant; 13] = [
        NagleVariant::Nagle,
        NagleVariant::Off,
        NagleVariant::Minshall,
        NagleVariant::Msmv,
        NagleVariant::Eom,
        NagleVariant::EM,
        NagleVariant::MinMore,
        NagleVariant::Dldet,
        NagleVariant::EMM,
        NagleVariant::EMD,
        NagleVariant::Borman,
        NagleVariant::UnackedMss,
        NagleVariant::Cork,
    ];

    /// The exact name of Mogul table 3 (UNACKED-MSS and CORK added).
    pub fn value(self) -> &'static str {
        match self {
            NagleVariant::Nagle => "NAGLE",
            NagleVariant::Off => "OFF",
            NagleVariant::Minshall => "MINSHALL",
            NagleVariant::Msmv => "MSMV",
            NagleVariant::Eom => "EOM",
            NagleVariant::EM => "E+M",
            NagleVariant::MinMore => "MIN+MORE",
            NagleVariant::Dldet => "DLDET",
            NagleVariant::EMM => "E+M+M",
            NagleVariant::EMD => "E+M+D",
            NagleVariant::Borman => "BORMAN",
            NagleVariant::UnackedMss => "UNACKED-MSS",
            NagleVariant::Cork => "CORK",
        }
    }

    /// The name as an identifier (E_M_D for E+M+D), which parse also accepts.
    fn member_name(self) -> &'static str {
        match self {
            NagleVariant::EM => "E_M",
            NagleVariant::MinMore => "MIN_MORE",
            NagleVariant::EMM => "E_M_M",
            NagleVariant::EMD => "E_M_D",
            NagleVariant::UnackedMss => "UNACKED_MSS",
            v => v.value(),
        }
    }

    /// The variant by its exact name or its identifier form, case-insensitively.
    pub fn parse(name: &str) -> Option<NagleVariant> {
        let key = name.trim().to_ascii_uppercase();
        NagleVariant::ALL.into_iter().find(|v| v.value() == key || v.member_name() == key)
    }

    fn eom_family(self) -> bool {
        matches!(self, NagleVariant::Eom | NagleVariant::EM | NagleVariant::EMM | NagleVariant::EMD)
    }
    fn more_family(self) -> bool {
        matches!(
            self,
            NagleVariant::EM | NagleVariant::MinMore | NagleVariant::EMM | NagleVariant::EMD | NagleVariant::Borman
        )
    }
    fn dldet_family(self) -> bool {
        matches!(self, NagleVariant::Dldet | NagleVariant::EMD)
    }
    fn msmv_family(self) -> bool {
        matches!(self, NagleVariant::Msmv | NagleVariant::EMM)
    }
    fn minshall_family(self) -> bool {
        matches!(self, NagleVariant::Minshall | NagleVariant::MinMore)
    }
}

/// SendContext: filled by tcp_output for a candidate segment shorter than maxseg.
#[derive(Clone, Copy, Debug)]
pub struct SendContext {
    pub now: i64,
    pub length: i64,
    pub maxseg: i64,
    pub off: i64,
    pub sb_cc: i64,
    pub idle: bool,
    pub snd_una: i64,
    pub snd_nxt: i64,
    pub snd_max: i64,
    pub more_to_come: bool,
    pub end_of_message: bool,
    /// tcp_output called by sosend's PRU_SEND (not by input or a timer).
    pub from_write: bool,
    /// The application's message is wholly in the socket buffer (its last write copied) and no
    /// write of the next one has begun: TCP_CORK, set around each message, is cleared (uncork).
    pub message_done: bool,
    /// Linux tcp_push with TCP_NAGLE_PUSH (a writer about to wait for buffer space pushes what
    /// it copied): overrides TCP_CORK (read by CORK only).
    pub push: bool,
}

impl SendContext {
    pub fn emptying(&self) -> bool {
        self.length + self.off >= self.sb_cc
    }
}

/// NagleState: one field per flag or sequence variable of Mogul section 5.
#[derive(Clone, Debug)]
pub struct NagleState {
    pub variant: NagleVariant,
    pub mclbytes: i64,
    pub snd_sml: Option<i64>,
    pub small_prev: bool,
    pub eom: bool,
    pub more: bool,
    pub nodelay: bool,
    pub dldet_cr: bool,
    pub app_blocked: bool,
    pub hooks_used: bool,
    pub outcount: i64,
    pub idle_on_entry: bool,
    pub more_on_entry: bool,
    pub last_sb_cc: Option<i64>,
    pub last_end: Option<i64>,
    /// MINSHALL as Mogul's Tru64 kernel measured (Personality::minshall_idle_writes_only): snd_sml
    /// remembers only a short segment a write sent alone on an idle connection.
    pub sml_idle_writes_only: bool,
    pub last_idle_write: bool,
    /// TF_MORE kept natively (Personality::write_more_hold): no short segment while the write
    /// being copied has bytes left, whatever the variant (OFF and DLDET's release excepted).
    pub native_more: bool,
}

pub fn new_state(variant: NagleVariant, mclbytes: i64, sml_idle_writes_only: bool, native_more: bool) -> NagleState {
    NagleState {
        variant,
        mclbytes,
        snd_sml: None,
        small_prev: false,
        eom: false,
        more: false,
        nodelay: false,
        dldet_cr: false,
        app_blocked: false,
        hooks_used: false,
        outcount: 0,
        idle_on_entry: false,
        more_on_entry: false,
        last_sb_cc: None,
        last_end: None,
        sml_idle_writes_only,
        last_idle_write: false,
        native_more,
    }
}

/// Linux TCP_RTO_MIN and TCP_RTO_MAX (include/net/tcp.h), in ns. The Linux personality holds the
/// same values; it cannot be read here (personality uses this module: no import cycle).
pub const LINUX_RTO_MIN_NS: i64 = 200_000_000;
pub const LINUX_RTO_MAX_NS: i64 = 120_000_000_000;

/// TCP_CORK's "200 ms ceiling" as Linux implements it: no cork timer, but the zero-window probe
/// timer (ICSK_TIME_PROBE0) that __tcp_push_pending_frames arms through tcp_check_probe_timer
/// when data stays queued with nothing in flight and no other transmit timer pending. It fires
/// after tcp_probe0_base = max(icsk_rto, TCP_RTO_MIN), doubled per unanswered probe
/// (tcp_probe0_when, at most TCP_RTO_MAX), and tcp_write_wakeup sends the held data whatever
/// the cork (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay).
pub fn cork_probe_ns(rto_ns: i64, shift: i64) -> i64 {
    let base = rto_ns.max(LINUX_RTO_MIN_NS);
    base.saturating_mul(1i64 << shift.clamp(0, 62)).min(LINUX_RTO_MAX_NS)
}

fn short_unacked(state: &NagleState, snd_una: i64) -> bool {
    matches!(state.snd_sml, Some(sml) if sml > snd_una)
}

fn eom_flag(state: &NagleState, ctx: &SendContext) -> bool {
    if state.hooks_used { state.eom } else { ctx.end_of_message }
}

fn more_flag(state: &NagleState, ctx: &SendContext) -> bool {
    if state.hooks_used { state.more } else { ctx.more_to_come }
}

fn dldet_release(state: &NagleState) -> bool {
    state.dldet_cr && state.app_blocked
}

/// may_send_short: the Nagle test (step 2 of the BSD order).
pub fn may_send_short(variant: NagleVariant, state: &mut NagleState, ctx: &SendContext) -> bool {
    state.last_sb_cc = Some(ctx.sb_cc);
    state.last_end = Some(ctx.snd_nxt + ctx.length);
    // Alone: nothing unacknowledged ahead of it, not even full segments this same call just sent.
    state.last_idle_write = ctx.idle && ctx.from_write && ctx.snd_nxt == ctx.snd_una;
    if !ctx.emptying() {
        return false;
    }
    let v = variant;
    match v {
        NagleVariant::Off => return true,
        // Corked: only full segments. Uncorked (the message's last write is in), Linux's own
        // test with TCP_NODELAY clear: tcp_nagle_check's Minshall rule
        // (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay).
        NagleVariant::Cork => {
            return ctx.push || (ctx.message_done && (ctx.idle || !short_unacked(state, ctx.snd_una)))
        }
        _ => {}
    }
    if state.native_more && ctx.more_to_come && !(v.dldet_family() && dldet_release(state)) {
        return false; // only a write's last segment may be short (DLDET's release overrides MORE)
    }
    match v {
        NagleVariant::Nagle => return ctx.idle,
        NagleVariant::UnackedMss => return ctx.idle || (ctx.snd_max - ctx.snd_una) > ctx.maxseg,
        _ => {}
    }
    // Borman's rule falls back on the ordinary Nagle test, which never delays a short segment with
    // nothing unacknowledged: MORE waits for an ACK that an idle connection will not get (issue 17).
    let more = v.more_family() && more_flag(state, ctx) && !(v == NagleVariant::Borman && ctx.idle);
    if more && !(v.dldet_family() && dldet_release(state)) {
        return false;
    }
    if ctx.idle {
        return true;
    }
    if v.minshall_family() {
        return !short_unacked(state, ctx.snd_una);
    }
    if v.msmv_family() && !state.small_prev {
        return true;
    }
    if v.eom_family() && eom_flag(state, ctx) {
        return true;
    }
    if v == NagleVariant::Borman && state.nodelay {
        return true;
    }
    if v.dldet_family() && dldet_release(state) {
        return true;
    }
    false
}

/// on_segment_sent: record a data segment handed to IP.
pub fn on_segment_sent(state: &mut NagleState, _now: i64, seq: i64, length: i64, maxseg: i64) {
    if length <= 0 {
        return;
    }
    if length >= maxseg {
        state.small_prev = false;
        return;
    }
    let decided = state.last_end == Some(seq + length);
    if !state.sml_idle_writes_only || (decided && state.last_idle_write) {
        state.snd_sml = Some(state.snd_sml.unwrap_or(0).max(seq + length));
    }
    // MSMV's tearing exemption (Mogul §5.2: "if the socket buffer size is a multiple of MCLBYTES,
    // the TF_SMALL_PREV flag is not set"), "size" read as sb_cc when the emptying segment was
    // decided: a configured size would exempt every short packet in all of Mogul's columns. Once
    // ACKs drop unaligned amounts it stops working (Mogul §8: "only works for messages smaller
    // than twice the socket buffer size").
    let aligned = decided && matches!(state.last_sb_cc, Some(cc) if cc % state.mclbytes == 0);
    state.small_prev = !aligned;
    if state.variant.dldet_family() && dldet_release(state) {
        state.dldet_cr = false;
    }
}

pub fn on_ack(state: &mut NagleState, _now: i64, ack: i64) {
    if matches!(state.snd_sml, Some(sml) if ack >= sml) {
        state.snd_sml = None;
    }
}

pub fn on_write_entry(state: &mut NagleState, idle: bool) {
    state.hooks_used = true;
    state.outcount = 0;
    state.idle_on_entry = idle;
    state.more_on_entry = state.more;
    if state.variant == NagleVariant::Borman {
        state.nodelay = false;
    }
}

pub fn before_pru_send(state: &mut NagleState, resid: i64, space: i64) {
    state.hooks_used = true;
    let v = state.variant;
    if v.eom_family() {
        state.eom = (resid == 0 || space <= 0) && (state.outcount > 0 || state.more);
    }
    if v.more_family() {
        state.more = resid > 0;
        if resid > 0 {
            state.eom = false;
        }
    }
    state.outcount += 1;
    if v == NagleVariant::Borman && resid == 0 && (state.idle_on_entry || state.more_on_entry) {
        state.nodelay = true;
    }
}

pub fn on_app_block(state: &mut NagleState) -> bool {
    if !state.variant.dldet_family() {
        return false;
    }
    state.dldet_cr = true;
    state.app_blocked = true;
    true
}

pub fn on_app_wake(state: &mut NagleState) {
    state.app_blocked = false;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(length: i64, sb_cc: i64, idle: bool, una: i64, nxt: i64, max: i64, more: bool, eom: bool) -> SendContext {
        SendContext {
            now: 0, length, maxseg: 1460, off: nxt - una, sb_cc, idle, snd_una: una, snd_nxt: nxt, snd_max: max,
            more_to_come: more, end_of_message: eom, from_write: true, message_done: false, push: false,
        }
    }

    #[test]
    fn parse_accepts_values_and_member_names() {
        for v in NagleVariant::ALL {
            assert_eq!(NagleVariant::parse(v.value()), Some(v));
            assert_eq!(NagleVariant::parse(&v.value().to_lowercase()), Some(v));
        }
        assert_eq!(NagleVariant::parse(" e_m_d "), Some(NagleVariant::EMD));
        assert_eq!(NagleVariant::parse("unacked_mss"), Some(NagleVariant::UnackedMss));
        assert_eq!(NagleVariant::parse("sometimes"), None);
    }

    #[test]
    fn a_segment_that_does_not_empty_the_buffer_is_held_by_every_variant() {
        for v in NagleVariant::ALL {
            let mut st = new_state(v, 8192, false, false);
            assert!(!may_send_short(v, &mut st, &ctx(500, 2000, true, 0, 0, 0, false, true)), "{v:?}");
        }
    }

    #[test]
    fn the_classic_variants_on_a_busy_connection() {
        // 1000 bytes outstanding, a 500-byte tail that empties the buffer.
        let c = ctx(500, 1500, false, 0, 1000, 1000, false, true);
        let mut st = new_state(NagleVariant::Nagle, 8192, false, false);
        assert!(!may_send_short(NagleVariant::Nagle, &mut st, &c));
        assert!(may_send_short(NagleVariant::Off, &mut new_state(NagleVariant::Off, 8192, false, false), &c));
        assert!(!may_send_short(NagleVariant::Cork, &mut new_state(NagleVariant::Cork, 8192, false, false), &ctx(500, 500, true, 0, 0, 0, false, true)));
        // Minshall: the outstanding data was full-sized, so the short one may go ...
        let mut m = new_state(NagleVariant::Minshall, 8192, false, false);
        assert!(may_send_short(NagleVariant::Minshall, &mut m, &c));
        // ... but not while an earlier short segment is unacknowledged.
        on_segment_sent(&mut m, 0, 0, 300, 1460);
        assert!(!may_send_short(NagleVariant::Minshall, &mut m, &c));
        on_ack(&mut m, 0, 300);
        assert_eq!(m.snd_sml, None);
        // Unacked-MSS: sends once more than one MSS is outstanding.
        let big = ctx(500, 2500, false, 0, 2000, 2000, false, true);
        assert!(may_send_short(NagleVariant::UnackedMss, &mut new_state(NagleVariant::UnackedMss, 8192, false, false), &big));
        assert!(!may_send_short(NagleVariant::UnackedMss, &mut new_state(NagleVariant::UnackedMss, 8192, false, false), &c));
    }

    #[test]
    fn mogul_minshall_remembers_only_shorts_a_write_sent_idle() {
        // Sends the short segment `c` on a fresh Mogul-Minshall state; what snd_sml remembers of it.
        fn remembered(c: &SendContext, seq: i64) -> Option<i64> {
            let mut m = new_state(NagleVariant::Minshall, 8192, true, false);
            assert!(may_send_short(NagleVariant::Minshall, &mut m, c));
            on_segment_sent(&mut m, 0, seq, c.length, 1460);
            m.snd_sml
        }
        // A short sent while data was outstanding does not hold the next one (Mogul table 4).
        assert_eq!(remembered(&ctx(500, 1500, false, 0, 1000, 1000, false, true), 1000), None);
        // One a write sent alone on an idle connection does.
        assert_eq!(remembered(&ctx(500, 500, true, 0, 0, 0, false, true), 0), Some(500));
        // An ACK's tcp_output (not a write) sending on an idle connection: not remembered.
        let mut on_ack_ctx = ctx(500, 500, true, 0, 0, 0, false, true);
        on_ack_ctx.from_write = false;
        assert_eq!(remembered(&on_ack_ctx, 0), None);
        // A write's short that follows full segments in the same idle call (Ethernet, 4 KB write:
        // 1460 + 1460 + 1176): not remembered, so the next write's short goes.
        assert_eq!(remembered(&ctx(1176, 4096, true, 0, 2920, 2920, false, true), 2920), None);
    }

    #[test]
    fn eom_more_and_dldet_hooks() {
        let c = ctx(500, 1500, false, 0, 1000, 1000, false, false);
        // EOM: the last PRU_SEND of a multi-chunk write carries EOM.
        let mut e = new_state(NagleVariant::Eom, 8192, false, false);
        on_write_entry(&mut e, false);
        before_pru_send(&mut e, 100, 1000);
        assert!(!e.eom);
        before_pru_send(&mut e, 0, 1000);
        assert!(e.eom);
        assert!(may_send_short(NagleVariant::Eom, &mut e, &c));
        // E+M: MORE holds the short segment while the write still has bytes to copy.
        let mut em = new_state(NagleVariant::EM, 8192, false, false);
        on_write_entry(&mut em, true);
        before_pru_send(&mut em, 100, 1000);
        assert!(em.more && !em.eom);
        assert!(!may_send_short(NagleVariant::EM, &mut em, &ctx(500, 500, true, 0, 0, 0, true, false)));
        // DLDET: an application blocking on the socket releases the held segment once.
        let mut d = new_state(NagleVariant::Dldet, 8192, false, false);
        assert!(!may_send_short(NagleVariant::Dldet, &mut d, &c));
        assert!(on_app_block(&mut d));
        assert!(may_send_short(NagleVariant::Dldet, &mut d, &c));
        on_segment_sent(&mut d, 0, 1000, 500, 1460);
        assert!(!d.dldet_cr);
        assert!(!on_app_block(&mut new_state(NagleVariant::Nagle, 8192, false, false)));
        // Borman: NODELAY for the write that found the connection idle.
        let mut b = new_state(NagleVariant::Borman, 8192, false, false);
        on_write_entry(&mut b, true);
        before_pru_send(&mut b, 0, 1000);
        assert!(b.nodelay);
        assert!(may_send_short(NagleVariant::Borman, &mut b, &c));
    }

    #[test]
    fn msmv_forgives_a_short_packet_when_the_buffer_holds_whole_clusters() {
        let mut s = new_state(NagleVariant::Msmv, 8192, false, false);
        // The emptying segment decided with sb_cc = 8192 (one whole cluster): not a small packet.
        let aligned = ctx(892, 8192, true, 0, 7300, 7300, false, false);
        assert!(may_send_short(NagleVariant::Msmv, &mut s, &aligned));
        on_segment_sent(&mut s, 0, 7300, 892, 1460);
        assert!(!s.small_prev);
        // An ACK dropped 1460 bytes: sb_cc 6732 is not whole clusters, so the same tail counts.
        let unaligned = ctx(892, 6732, true, 1460, 7300, 7300, false, true);
        assert!(may_send_short(NagleVariant::Msmv, &mut s, &unaligned));
        on_segment_sent(&mut s, 0, 7300, 892, 1460);
        assert!(s.small_prev);
        assert!(!may_send_short(NagleVariant::Msmv, &mut s, &ctx(200, 6932, false, 1460, 8192, 8192, false, true)));
        // A segment other than the one just decided (a retransmission) is not forgiven either.
        let mut s = new_state(NagleVariant::Msmv, 8192, false, false);
        may_send_short(NagleVariant::Msmv, &mut s, &ctx(892, 8192, true, 0, 7300, 7300, false, false));
        on_segment_sent(&mut s, 0, 0, 500, 1460);
        assert!(s.small_prev);
    }

    // Transition tables for every variant (Mogul & Minshall section 5, Moldeklev section 4.2.1).

    const MSS: i64 = 1460;

    /// A candidate short segment: `off` bytes already sent past `una`, all of them outstanding;
    /// sb_cc defaults to off + length (the segment empties the buffer).
    #[derive(Clone, Copy)]
    struct Ctx {
        length: i64,
        off: i64,
        sb_cc: Option<i64>,
        idle: bool,
        una: i64,
        more: bool,
        eom: bool,
    }

    const C: Ctx = Ctx { length: 500, off: 0, sb_cc: None, idle: false, una: 0, more: false, eom: false };
    /// Three full segments unacknowledged and a 500-byte tail.
    const BUSY: Ctx = Ctx { off: 3 * MSS, ..C };

    impl Ctx {
        fn get(self) -> SendContext {
            let nxt = self.una + self.off;
            SendContext {
                now: 0, length: self.length, maxseg: MSS, off: self.off,
                sb_cc: self.sb_cc.unwrap_or(self.off + self.length), idle: self.idle, snd_una: self.una,
                snd_nxt: nxt, snd_max: nxt, more_to_come: self.more, end_of_message: self.eom, from_write: false,
                message_done: false, push: false,
            }
        }
    }

    fn fresh(v: NagleVariant) -> NagleState {
        new_state(v, MCLBYTES_TRU64, false, false)
    }

    fn decide(v: NagleVariant, c: Ctx) -> bool {
        may_send_short(v, &mut fresh(v), &c.get())
    }

    fn may(st: &mut NagleState, c: Ctx) -> bool {
        may_send_short(st.variant, st, &c.get())
    }

    /// The sosend hooks for one write copied in PRU_SENDs leaving `resids` bytes each.
    fn write(st: &mut NagleState, idle: bool, resids: &[i64], space_after: i64) {
        on_write_entry(st, idle);
        for &resid in resids {
            before_pru_send(st, resid, space_after);
        }
    }

    #[test]
    fn every_variant_has_its_exact_name() {
        // Mogul table 3, Moldeklev's UNACKED-MSS and Linux TCP_CORK.
        let names: Vec<&str> = NagleVariant::ALL.iter().map(|v| v.value()).collect();
        assert_eq!(
            names,
            ["NAGLE", "OFF", "MINSHALL", "MSMV", "EOM", "E+M", "MIN+MORE", "DLDET", "E+M+M", "E+M+D", "BORMAN", "UNACKED-MSS", "CORK"]
        );
        assert_eq!(NagleVariant::parse("e+m+d"), Some(NagleVariant::EMD));
        assert_eq!(NagleVariant::parse("E_M_D"), Some(NagleVariant::EMD));
        assert_eq!(NagleVariant::parse("NAGEL"), None);
    }

    #[test]
    fn idle_connection_sends_the_emptying_short_segment() {
        for v in NagleVariant::ALL.into_iter().filter(|&v| v != NagleVariant::Cork) {
            assert!(decide(v, Ctx { idle: true, ..C }), "{v:?}");
        }
        assert!(!decide(NagleVariant::Cork, Ctx { idle: true, ..C }), "CORK holds even when idle");
    }

    #[test]
    fn cork_holds_partial_frames_until_the_message_is_written_then_applies_linux_nagle() {
        let v = NagleVariant::Cork;
        let done = |c: Ctx| SendContext { message_done: true, ..c.get() };
        // Corked: a partial frame waits, idle or not (tcp_nagle_check: nonagle & TCP_NAGLE_CORK).
        assert!(!decide(v, Ctx { idle: true, ..C }));
        assert!(!decide(v, BUSY));
        // Uncorked at the message's end: on an idle connection it goes at once ...
        assert!(may_send_short(v, &mut fresh(v), &done(Ctx { idle: true, ..C })));
        // ... behind unacknowledged full segments too (Minshall: no short one outstanding) ...
        let mut st = fresh(v);
        for i in 0..3 {
            on_segment_sent(&mut st, 0, i * MSS, MSS, MSS);
        }
        assert!(may_send_short(v, &mut st, &done(BUSY)));
        // ... but not behind an unacknowledged short one, until its ACK.
        let mut st = fresh(v);
        on_segment_sent(&mut st, 0, 0, 300, MSS);
        let behind = Ctx { off: 300, ..C };
        assert!(!may_send_short(v, &mut st, &done(behind)));
        on_ack(&mut st, 0, 300);
        assert!(may_send_short(v, &mut st, &done(Ctx { una: 300, ..C })));
        // Only the buffer's tail can be partial: a segment that leaves data behind still waits.
        assert!(!may_send_short(v, &mut fresh(v), &done(Ctx { idle: true, sb_cc: Some(2000), ..C })));
        // TCP_NAGLE_PUSH (a writer blocking on a full buffer) sends the corked tail at once.
        let mut st = fresh(v);
        on_segment_sent(&mut st, 0, 0, 300, MSS);
        assert!(may_send_short(v, &mut st, &SendContext { push: true, ..behind.get() }));
    }

    #[test]
    fn cork_ceiling_is_the_linux_probe_timer() {
        // tcp_probe0_base = max(icsk_rto, TCP_RTO_MIN): on a LAN the RTO's 200 ms floor ...
        assert_eq!(cork_probe_ns(0, 0), 200_000_000);
        assert_eq!(cork_probe_ns(2_000_000, 0), 200_000_000);
        // ... a longer RTO as it is, doubled per unanswered probe, at most TCP_RTO_MAX.
        assert_eq!(cork_probe_ns(250_000_000, 0), 250_000_000);
        assert_eq!(cork_probe_ns(250_000_000, 2), 1_000_000_000);
        assert_eq!(cork_probe_ns(250_000_000, 12), LINUX_RTO_MAX_NS);
        assert_eq!(cork_probe_ns(i64::MAX / 2, 62), LINUX_RTO_MAX_NS);
    }

    #[test]
    fn of_sfs_short_tail_behind_unacked_full_segments() {
        // Three full segments sent and unacked, a 500-byte tail left: Mogul's OF+SFS case (section 3).
        use NagleVariant::*;
        let cases = [
            (Nagle, false), (Off, true), (Minshall, true), (MinMore, true), (Msmv, true), (EMM, true),
            (Eom, false), (EM, false), (Borman, false), (Dldet, false), (EMD, false), (UnackedMss, true),
            (Cork, false),
        ];
        for (v, expected) in cases {
            let mut st = fresh(v);
            for i in 0..3 {
                on_segment_sent(&mut st, 0, i * MSS, MSS, MSS);
            }
            assert_eq!(may(&mut st, Ctx { sb_cc: Some(3 * MSS + 500), ..BUSY }), expected, "{v:?}");
        }
    }

    #[test]
    fn minshall_holds_while_a_short_segment_is_unacked_and_releases_on_its_ack() {
        let mut st = fresh(NagleVariant::Minshall);
        on_segment_sent(&mut st, 0, 0, 300, MSS); // short segment [0, 300)
        on_segment_sent(&mut st, 0, 300, MSS, MSS);
        assert!(!may(&mut st, Ctx { length: 100, off: 300 + MSS, ..C }));
        on_ack(&mut st, 1, 300); // the short one is acked, a full one still outstanding
        assert!(may(&mut st, Ctx { length: 100, off: MSS, una: 300, ..C }));
    }

    #[test]
    fn msmv_holds_after_a_short_packet_but_not_after_a_full_one() {
        let mut st = fresh(NagleVariant::Msmv);
        may(&mut st, Ctx { length: 700, off: MSS, sb_cc: Some(MSS + 700 + 1), ..C }); // not emptying: probe only
        on_segment_sent(&mut st, 0, MSS, 700, MSS); // short, buffer not a cluster multiple
        assert!(st.small_prev);
        assert!(!may(&mut st, Ctx { length: 10, off: MSS + 700, ..C }));
        on_segment_sent(&mut st, 0, MSS + 700, MSS, MSS);
        assert!(may(&mut st, Ctx { length: 10, off: 2 * MSS + 700, ..C }));
    }

    #[test]
    fn unacked_mss_needs_strictly_more_than_one_mss_outstanding() {
        // Moldeklev section 4.2.1: "more than MSS outstanding unacknowledged bytes".
        assert!(!decide(NagleVariant::UnackedMss, Ctx { off: MSS, ..C }));
        assert!(decide(NagleVariant::UnackedMss, Ctx { off: MSS + 1, ..C }));
    }

    #[test]
    fn eom_marks_only_writes_that_called_tcp_output_more_than_once() {
        // Mogul section 5.3: EOM acts like NAGLE unless the write took more than one MCLBYTES copy.
        let mut st = fresh(NagleVariant::Eom);
        write(&mut st, false, &[0], 10_000); // one copy: no mark
        assert!(!may(&mut st, BUSY));
        write(&mut st, false, &[4000, 0], 10_000); // two copies: marked
        assert!(may(&mut st, BUSY));
    }

    #[test]
    fn eom_alone_marks_a_full_socket_buffer_but_e_m_does_not() {
        // Mogul figure 11 tearing: EOM marks a buffer-full copy; E+M sets MORE instead and holds.
        for (v, expected) in [(NagleVariant::Eom, true), (NagleVariant::EM, false)] {
            let mut st = fresh(v);
            write(&mut st, false, &[20_000, 12_000], 0);
            assert_eq!(may(&mut st, BUSY), expected, "{v:?}");
        }
    }

    #[test]
    fn more_holds_a_short_segment_even_on_an_idle_connection() {
        let mut st = fresh(NagleVariant::MinMore);
        write(&mut st, true, &[5000], 0);
        assert!(!may(&mut st, Ctx { idle: true, ..C }));
        before_pru_send(&mut st, 0, 100); // rest of the write copied
        assert!(may(&mut st, Ctx { idle: true, ..C }));
    }

    #[test]
    fn more_and_eom_fall_back_on_the_context_without_hooks() {
        assert!(!decide(NagleVariant::EM, Ctx { idle: true, more: true, ..C }));
        assert!(decide(NagleVariant::EM, Ctx { eom: true, ..BUSY }));
        assert!(!decide(NagleVariant::Eom, BUSY));
    }

    #[test]
    fn borman_releases_the_tail_of_a_write_that_began_idle_only() {
        let mut st = fresh(NagleVariant::Borman);
        write(&mut st, true, &[8000, 0], 10_000);
        assert!(may(&mut st, BUSY));
        write(&mut st, false, &[0], 10_000); // the next write began busy: plain Nagle
        assert!(!may(&mut st, BUSY));
    }

    #[test]
    fn dldet_releases_one_short_segment_when_the_application_blocks() {
        // Mogul figure 6: the block sets the one-bit counter; one short segment consumes it.
        let mut st = fresh(NagleVariant::Dldet);
        assert!(!may(&mut st, BUSY));
        assert!(on_app_block(&mut st));
        assert!(may(&mut st, BUSY));
        on_segment_sent(&mut st, 0, 3 * MSS, 500, MSS);
        // a second short write while still blocked (multi-threaded Telnet) is held again
        assert!(!may(&mut st, Ctx { length: 1, off: 3 * MSS + 500, ..C }));
    }

    #[test]
    fn dldet_does_nothing_until_blocked_and_other_variants_ignore_blocking() {
        let mut st = fresh(NagleVariant::Nagle);
        assert!(!on_app_block(&mut st));
        assert!(!may(&mut st, BUSY));
        let mut st = fresh(NagleVariant::EMD);
        on_app_block(&mut st);
        on_app_wake(&mut st);
        assert!(!may(&mut st, BUSY));
    }
}
