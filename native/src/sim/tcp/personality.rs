//! Per-stack parameters of the six stacks the simulator models (sunos41, bsd44, freebsd4, tru64,
//! linux20, linux). Each field is a rule of docs/tcp-rules.md or a paper's observation.

use crate::sim::nagle::NagleVariant;

const NS_PER_MS: i64 = 1_000_000;
const NS_PER_S: i64 = 1_000_000_000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    Bsd,
    Linux,
    Linux20,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CopyRule {
    SunosChunk,
    PerCluster,
    WholeWrite,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum WindowUpdateRule {
    Sunos35,
    Bsd50,
    Linux,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DelAckPolicy {
    BsdTick,
    FreeBsd,
    LinuxAto,
    Linux20Ato,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Recovery {
    Tahoe,
    Reno,
    NewReno,
}

/// One stack's rules: socket copy loop, MSS and buffer sizing, window update, delayed ACK,
/// timers, loss recovery and Nagle (docs/tcp-rules.md, one section per group of fields).
#[derive(Clone, Copy, Debug)]
pub struct Personality {
    pub name: &'static str,
    pub family: Family,
    pub copy_rule: CopyRule,
    pub mclbytes: i64,
    pub send_chunk: i64,
    pub writer_lowat: i64,
    pub moretocome: bool,
    pub mss_cluster_round: bool,
    pub mss_nonlocal_cap: Option<i64>,
    pub buffer_round_to_mss: bool,
    pub timestamps: bool,
    pub window_update: WindowUpdateRule,
    pub suppress_update_with_delack: bool,
    pub delack: DelAckPolicy,
    pub delack_ns: i64,
    pub small_sender_inference: bool,
    pub slow_tick_ns: Option<i64>,
    pub rto_min_ns: i64,
    pub rto_max_ns: i64,
    pub rto_initial_ns: i64,
    pub rttvar_mult: i64,
    pub recovery: Recovery,
    pub initial_cwnd_segments: i64,
    pub nagle: NagleVariant,
    pub default_sndbuf: i64,
    pub default_rcvbuf: i64,
    pub partial_timer_ns: i64,
    pub max_window: i64,
    pub sndbuf_multiplier: i64,
    pub linux20_max_unacked: i64,
    pub max_retransmits: u32,
    /// Giving up an unanswered SYN / SYN-ACK: BSD's 75 s establishment timer, Linux's counts.
    pub establish_timeout_ns: Option<i64>,
    pub syn_retries: Option<i64>,
    pub synack_retries: Option<i64>,
    /// 4.4BSD / OSF tcp_xmit_timer: srtt and rttvar in slow ticks scaled by 8 and 4.
    pub rtt_fixed_point: bool,
    /// Modern Linux tcp_rtt_estimator / tcp_set_rto: a sample from every ACK of new data and
    /// RTO = srtt + rttvar with rttvar >= tcp_rto_min. False: one timed segment per round trip and
    /// srtt + k * rttvar clamped (BSD, Linux 2.0).
    pub linux_rtt: bool,
    /// cwnd counted in packets, grown per packet acknowledged (tcp_slow_start, tcp_cong_avoid_ai).
    pub linux_ca: bool,
    /// CUBIC window growth and 0.7 reduction (tcp_cubic.c, RFC 9438); false: Reno's.
    pub cubic: bool,
    /// OSF/1 sosend: a write with at least this many bytes left gets a cluster of
    /// min(resid, MCLBYTES) whatever space the round has left; 0 = 4.4BSD.
    pub mbuf_threshold: i64,
    /// OSF/1 tcp_mss: so_snd.sb_lowat = mss.
    pub lowat_is_mss: bool,
    /// SACK-permitted offered in the handshake (RFC 2018; recovery then follows RFC 6675):
    /// modern Linux only (net.ipv4.tcp_sack = 1); the papers' stacks predate it.
    pub sack: bool,
    /// The RFC 7323 timestamp clock's tick.
    pub ts_tick_ns: i64,
    /// Linux tcp_ack_update_rtt (2.6 on): with timestamps negotiated, an ACK of new data that
    /// Karn's rule leaves without a sample (some of it was retransmitted) is timed by its TSecr
    /// (tcp_rtt_tsopt_us), and that sample resets the RTO back-off (icsk_backoff = 0).
    /// False: Karn's rule alone, the back-off kept until a segment sent once is acknowledged
    /// (docs/tcp-rules.md#rtt-from-the-timestamp-echo).
    pub tsecr_rtt: bool,
    /// No short segment while a write() is part-way copied: not between its clusters (FreeBSD's
    /// PRUS_MORETOCOME) and not while the writer sleeps with bytes of it left (Mogul section 5.4's
    /// TF_MORE kept set across the sleep), so only a write's last segment can be short (Mogul
    /// section 3.3's OF+SFS model). TCP_NODELAY and DLDET's release (Mogul figure 6) override it.
    pub write_more_hold: bool,
    /// MINSHALL as Mogul measured it on Tru64 (tables 4 and 5): snd_sml only remembers a short
    /// segment a write() sent alone on an idle connection. Inferred from the tables, not source.
    /// False: every short segment counts (Linux tcp_minshall_update).
    pub minshall_idle_writes_only: bool,
}

pub const SUNOS41: Personality = Personality {
    name: "sunos41",
    family: Family::Bsd,
    copy_rule: CopyRule::SunosChunk,
    mclbytes: 1024,
    send_chunk: 4096,
    writer_lowat: 1024,
    moretocome: false,
    mss_cluster_round: false,
    mss_nonlocal_cap: None,
    buffer_round_to_mss: false,
    timestamps: false,
    window_update: WindowUpdateRule::Sunos35,
    suppress_update_with_delack: false,
    delack: DelAckPolicy::BsdTick,
    delack_ns: 200 * NS_PER_MS,
    small_sender_inference: false,
    // BSD timers (docs/tcp-rules.md#retransmission-timer)
    slow_tick_ns: Some(500 * NS_PER_MS),
    rto_min_ns: NS_PER_S,
    rto_max_ns: 64 * NS_PER_S,
    rto_initial_ns: 6 * NS_PER_S,
    rttvar_mult: 2,
    recovery: Recovery::Tahoe,
    initial_cwnd_segments: 0,
    nagle: NagleVariant::Nagle,
    default_sndbuf: 4096,
    default_rcvbuf: 4096,
    partial_timer_ns: NS_PER_S,
    max_window: 65535,
    sndbuf_multiplier: 1,
    linux20_max_unacked: 8192,
    max_retransmits: 12,
    establish_timeout_ns: Some(75 * NS_PER_S),
    syn_retries: None,
    synack_retries: None,
    rtt_fixed_point: false,
    linux_rtt: false,
    linux_ca: false,
    cubic: false,
    mbuf_threshold: 0,
    lowat_is_mss: false,
    sack: false,
    ts_tick_ns: 10 * NS_PER_MS, // FreeBSD `ticks` at hz = 100
    tsecr_rtt: false,
    write_more_hold: false,
    minshall_idle_writes_only: false,
};

pub const BSD44: Personality = Personality {
    name: "bsd44",
    copy_rule: CopyRule::PerCluster,
    mclbytes: 2048,
    send_chunk: 2048,
    writer_lowat: 2048,
    mss_cluster_round: true,
    buffer_round_to_mss: true,
    window_update: WindowUpdateRule::Bsd50,
    rttvar_mult: 4,
    rtt_fixed_point: true,
    recovery: Recovery::Reno,
    initial_cwnd_segments: 1,
    default_sndbuf: 8192,
    default_rcvbuf: 8192,
    ..SUNOS41
};

pub const FREEBSD4: Personality = Personality {
    name: "freebsd4",
    moretocome: true,
    timestamps: true,
    delack: DelAckPolicy::FreeBsd,
    delack_ns: 100 * NS_PER_MS,
    slow_tick_ns: None,
    rtt_fixed_point: false, // hz-based timers
    recovery: Recovery::NewReno,
    default_sndbuf: 32768,
    default_rcvbuf: 65536,
    ..BSD44
};

pub const TRU64: Personality = Personality {
    name: "tru64",
    mclbytes: 8192,
    send_chunk: 8192,
    writer_lowat: 8192,
    small_sender_inference: true,
    // Buffers kept at the size asked for: 4.4BSD rounds them to the MSS only inside tcp_mss, so a
    // later SO_SNDBUF stays; Mogul's hosts ran so ("the buffer size is not a multiple of MSS",
    // section 8; "2 * MSS = 8624, larger than an 8192-byte buffer", section 9).
    buffer_round_to_mss: false,
    default_sndbuf: 32768,
    default_rcvbuf: 32768,
    // OSF/1 sosend (uipc_socket.c, mbufthreshold = 1024). Its tcp_mss also sets sb_lowat = mss,
    // but with lowat_is_mss Mogul's Ethernet table moves away from the paper (EOM 37 %, MINSHALL
    // 10 %, against 32 % and 3 %), so Tru64 V4.0F is taken to keep soreserve's MCLBYTES mark.
    mbuf_threshold: 1024,
    // Mogul's scores follow his section 3.3 model and his MORE flag never changes one (E+M = EOM,
    // MIN+MORE = MINSHALL, E+M+M = MSMV): Tru64 V4.0F behaves as if it were always set.
    write_more_hold: true,
    minshall_idle_writes_only: true, // inferred from Mogul's tables 4 and 5
    ..BSD44
};

pub const LINUX: Personality = Personality {
    name: "linux",
    family: Family::Linux,
    copy_rule: CopyRule::WholeWrite,
    mclbytes: 4096,
    send_chunk: 65536,
    writer_lowat: 1,
    moretocome: false,
    mss_cluster_round: false,
    mss_nonlocal_cap: None,
    buffer_round_to_mss: false,
    timestamps: true, // net.ipv4.tcp_timestamps = 1
    window_update: WindowUpdateRule::Linux,
    suppress_update_with_delack: false,
    delack: DelAckPolicy::LinuxAto,
    delack_ns: 200 * NS_PER_MS,
    small_sender_inference: false,
    slow_tick_ns: None,
    rto_min_ns: 200 * NS_PER_MS,
    rto_max_ns: 120 * NS_PER_S,
    rto_initial_ns: NS_PER_S,
    rttvar_mult: 4,
    recovery: Recovery::NewReno,
    initial_cwnd_segments: 10,
    nagle: NagleVariant::Minshall,
    sndbuf_multiplier: 2,
    max_retransmits: 15,
    establish_timeout_ns: None,
    syn_retries: Some(6),
    synack_retries: Some(5),
    default_sndbuf: 65536,
    default_rcvbuf: 65536,
    partial_timer_ns: NS_PER_S,
    max_window: 65535,
    linux20_max_unacked: 8192,
    rtt_fixed_point: false,
    mbuf_threshold: 0,
    lowat_is_mss: false,
    sack: true, // modern Linux: net.ipv4.tcp_sack = 1
    ts_tick_ns: NS_PER_MS, // TCP_TS_HZ = 1000
    tsecr_rtt: true, // tcp_ack_update_rtt: seq_rtt_us < 0 -> tcp_rtt_tsopt_us
    write_more_hold: false,
    minshall_idle_writes_only: false,
    linux_rtt: true,
    linux_ca: true,
    cubic: true,
};

pub const LINUX20: Personality = Personality {
    name: "linux20",
    sack: false, // Linux 2.0 had no SACK (it came with 2.2)
    timestamps: false, // nor timestamps (2.1)
    tsecr_rtt: false,  // Karn alone (2.0.x tcp_ack)
    linux_rtt: false,  // Jacobson's estimator on one timed segment
    linux_ca: false,
    cubic: false,      // Reno (CUBIC became the default in 2.6.19)
    sndbuf_multiplier: 1,
    max_window: 32767,
    family: Family::Linux20,
    nagle: NagleVariant::Nagle,
    delack: DelAckPolicy::Linux20Ato,
    delack_ns: NS_PER_S / 3, // HZ/3 initial ATO
    rto_min_ns: 200 * NS_PER_MS,
    initial_cwnd_segments: 0,
    recovery: Recovery::Reno,
    syn_retries: Some(10),
    synack_retries: Some(15),
    default_sndbuf: 32768,
    default_rcvbuf: 32768,
    ..LINUX
};

pub static PERSONALITIES: [&Personality; 6] = [&SUNOS41, &BSD44, &FREEBSD4, &TRU64, &LINUX20, &LINUX];

/// The stack by its name, or None for an unknown one.
pub fn get_personality(name: &str) -> Option<&'static Personality> {
    PERSONALITIES.iter().copied().find(|p| p.name == name)
}

/// A naglemark server's stack: a BSD-family server starts each connection without slow start,
/// as a BSD stack exempting its local subnet does. Calibrated, not from Tru64 source: with a
/// 2-segment initial cwnd every FDDI response above 8192 bytes would wait for the 200 ms tick,
/// against Mogul table 5's 0.0 % for OFF.
pub fn lan_server_personality(p: &'static Personality) -> &'static Personality {
    const fn lan(p: Personality) -> Personality {
        Personality { initial_cwnd_segments: 0, ..p }
    }
    static SUNOS41_LAN: Personality = lan(SUNOS41);
    static BSD44_LAN: Personality = lan(BSD44);
    static FREEBSD4_LAN: Personality = lan(FREEBSD4);
    static TRU64_LAN: Personality = lan(TRU64);
    if p.family != Family::Bsd {
        return p;
    }
    match p.name {
        "sunos41" => &SUNOS41_LAN,
        "bsd44" => &BSD44_LAN,
        "freebsd4" => &FREEBSD4_LAN,
        "tru64" => &TRU64_LAN,
        other => panic!("no LAN server variant of BSD-family personality {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inherited_and_overridden_values() {
        assert_eq!(get_personality("bsd44").unwrap().send_chunk, 2048);
        assert_eq!(FREEBSD4.slow_tick_ns, None);
        assert_eq!(FREEBSD4.rttvar_mult, 4); // inherited from bsd44
        assert_eq!(FREEBSD4.default_rcvbuf, 65536);
        assert!(!TRU64.buffer_round_to_mss);
        assert_eq!(TRU64.delack, DelAckPolicy::BsdTick);
        assert_eq!(LINUX20.delack_ns, 333_333_333);
        assert_eq!(LINUX20.max_retransmits, 15);
        assert_eq!(LINUX20.sndbuf_multiplier, 1);
        assert_eq!(LINUX.sndbuf_multiplier, 2);
        assert!(get_personality("vms").is_none());
        let lan = lan_server_personality(&TRU64);
        assert_eq!((lan.name, lan.initial_cwnd_segments, lan.mclbytes), ("tru64", 0, 8192));
        assert_eq!(lan_server_personality(&LINUX).initial_cwnd_segments, 10);
    }
}
