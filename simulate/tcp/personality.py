"""Per-stack parameters. Each field cites the rule it models, as a section of docs/tcp-rules.md
(`docs/tcp-rules.md#socket-copy-loop`), or the paper section it comes from."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from ..engine import NS_PER_MS, NS_PER_S
from ..nagle import NagleVariant


class Family(str, Enum):
    BSD = "bsd"  # tcp_output decision order (docs/tcp-rules.md#bsd-output-decision-order)
    LINUX = "linux"  # docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay
    LINUX20 = "linux20"  # docs/tcp-rules.md#linux-20-partial-segment


class CopyRule(str, Enum):
    """How sosend hands a write to TCP (docs/tcp-rules.md#socket-copy-loop)."""

    SUNOS_CHUNK = "sunos_chunk"  # SunOS: copy min(space, 4096) then one PRU_SEND
    PER_CLUSTER = "per_cluster"  # 4.4BSD / FreeBSD: one cluster per PRU_SEND
    WHOLE_WRITE = "whole_write"  # Linux: append as much as fits, then push


class WindowUpdateRule(str, Enum):
    """When a read sends a pure window update (docs/tcp-rules.md#window-update-thresholds)."""

    SUNOS_35 = "sunos_35"  # (rcv empty and adv >= 2 MSS) or adv >= 35 % of the buffer
    BSD_50 = "bsd_50"  # adv >= 2 MSS or adv >= 50 %
    LINUX = "linux"  # new window >= 2 x what the peer still has, once that fell to half (tcp_cleanup_rbuf)


class DelAckPolicy(str, Enum):
    """When a data segment is acknowledged (docs/tcp-rules.md#delayed-ack-timers)."""

    BSD_TICK = "bsd_tick"  # free-running global 200 ms fast tick
    FREEBSD = "freebsd"  # one-shot 100 ms callout, ACK every second in-order segment
    LINUX_ATO = "linux_ato"  # quick-ACK, > 1 full frame unacked, 40..200 ms ATO
    LINUX20_ATO = "linux20_ato"  # ATO estimator starting at HZ/3, ACK after max_unacked bytes


class Recovery(str, Enum):
    TAHOE = "tahoe"
    RENO = "reno"
    NEWRENO = "newreno"


@dataclass(frozen=True, slots=True)
class Personality:
    name: str
    family: Family
    copy_rule: CopyRule
    mclbytes: int  # cluster size (docs/tcp-rules.md#socket-copy-loop)
    send_chunk: int  # SunOS SEND_CHUNK; bytes per PRU_SEND otherwise = mclbytes
    writer_lowat: int  # the writer sleeps while less than this is free (and the write does not fit)
    moretocome: bool  # FreeBSD PRUS_MORETOCOME / TF_LASTIDLE (docs/tcp-rules.md#freebsd-more-to-come)
    # MSS and buffer sizing (docs/tcp-rules.md#mss-and-buffer-sizing):
    mss_cluster_round: bool  # round MSS down to a multiple of MCLBYTES when larger
    mss_nonlocal_cap: int | None  # min(mss, 512) for a non-local peer; None: not modelled
    buffer_round_to_mss: bool  # socket buffers rounded up to a multiple of the MSS
    # RFC 7323 timestamps offered in the SYN. When both ends offer them every segment carries the
    # 12-byte option (TSval, TSecr) and the MSS taken from the MTU drops by 12 (FreeBSD tcp_mss,
    # docs/tcp-rules.md#mss-and-buffer-sizing; Linux tcp_current_mss: 1448 on a 1500-byte path).
    timestamps: bool
    window_update: WindowUpdateRule
    suppress_update_with_delack: bool  # modern FreeBSD (docs/tcp-rules.md#window-update-thresholds)
    delack: DelAckPolicy
    delack_ns: int  # tick period / one-shot delay / ATO maximum
    small_sender_inference: bool  # Tru64 (docs/tcp-rules.md#small-sender-inference); switchable per run
    # 500 ms slow tick grid for REXMT/PERSIST (docs/tcp-rules.md#retransmission-timer); None = exact timers
    slow_tick_ns: int | None
    rto_min_ns: int
    rto_max_ns: int
    rto_initial_ns: int
    rttvar_mult: int  # RTO = srtt + k * rttvar (SunOS 2, BSD 4: docs/tcp-rules.md#retransmission-timer)
    recovery: Recovery
    initial_cwnd_segments: int  # 0 = no slow start at connection start (Moldeklev section 3: "not an issue")
    nagle: NagleVariant  # the stack's default Nagle behaviour
    default_sndbuf: int
    default_rcvbuf: int
    # Linux 2.0 (docs/tcp-rules.md#linux-20-partial-segment): the partial segment timer; the largest window
    # advertised (Linux 2.0's MAX_WINDOW is 32767).
    partial_timer_ns: int = NS_PER_S
    max_window: int = 65535
    sndbuf_multiplier: int = 1  # Linux doubles SO_SNDBUF for its bookkeeping (socket(7))
    linux20_max_unacked: int = 8192  # Linux 2.0 ACKs once this many bytes are unacked (Salamon: 6-7 segments)
    # Retransmissions before the connection is dropped with a RST: BSD TCP_MAXRXTSHIFT = 12
    # (tcp_timer.c); Linux net.ipv4.tcp_retries2 = 15 (ip-sysctl.txt).
    max_retransmits: int = 12
    # Giving up on an unanswered SYN or SYN-ACK. BSD: the connection-establishment timer
    # (TCPTV_KEEP_INIT, 75 s, tcp_timer.h) drops either side, whatever the retransmissions.
    # Linux: a count of retransmissions (tcp_syn_retries 6, tcp_synack_retries 5, ip-sysctl.txt;
    # Linux 2.0 TCP_SYN_RETRIES 10 in include/net/tcp.h, its SYN_RECV socket under TCP_RETR2 15).
    establish_timeout_ns: int | None = 75 * NS_PER_S
    syn_retries: int | None = None
    synack_retries: int | None = None
    # 4.4BSD / OSF tcp_xmit_timer: srtt and rttvar kept in slow ticks as integers scaled by 8 and 4
    # (rules.bsd_xmit_timer). False: the same smoothing on exact nanoseconds.
    rtt_fixed_point: bool = False
    # Modern Linux (tcp_rtt_estimator, tcp_set_rto): an RTT sample from every ACK of new data none
    # of which was retransmitted, and RTO = srtt + rttvar with rttvar >= tcp_rto_min (200 ms), so
    # the RTO sits above the minimum by srtt. False: one timed segment per round trip and
    # RTO = srtt + k * rttvar clamped to [rto_min, rto_max] (BSD, Linux 2.0).
    linux_rtt: bool = False
    # Modern Linux counts cwnd in packets and grows it by the packets each ACK covers (tcp_slow_start,
    # tcp_cong_avoid_ai); BSD and Linux 2.0 add one segment (or mss^2 / cwnd) per ACK.
    linux_ca: bool = False
    # Modern Linux's default congestion control (net.ipv4.tcp_congestion_control = cubic): window
    # growth by the cubic function and a 0.7 reduction (tcp/congestion.py). False: Reno's.
    cubic: bool = False
    # OSF/1 sosend (uipc_socket.c, `mbufthreshold = 1024`): a write with at least this many bytes
    # left is copied into a cluster of min(resid, MCLBYTES) whatever space the round has left
    # (space may go negative and ends the round), one PRU_SEND each. 0: 4.4BSD, where a cluster
    # is used only while space >= MCLBYTES and the copy never passes the space measured.
    mbuf_threshold: int = 0
    # OSF/1 tcp_mss sets so_snd.sb_lowat = mss once the peer's MSS is known ("adjust generic socket
    # value based on protocol and MTU"): the writer sleeps only while less than one MSS is free
    # (and the write does not fit). False: the fixed writer_lowat (soreserve's MCLBYTES).
    lowat_is_mss: bool = False
    # Selective acknowledgment (RFC 2018) offered in the handshake; when both ends offer it, loss
    # recovery follows RFC 6675 (tcp/sack.py) instead of `recovery`. On for modern Linux
    # (net.ipv4.tcp_sack = 1); the papers' stacks predate it. Host(sack=) / BulkConfig(sack=)
    # override it for both ends of a run.
    sack: bool = False
    # The timestamp clock's tick: FreeBSD's `ticks` at hz = 100; Linux's TCP_TS_HZ = 1000.
    ts_tick_ns: int = 10 * NS_PER_MS
    # No short segment while the application's write() is part-way through being copied: not
    # between its clusters (FreeBSD's PRUS_MORETOCOME) and not while the writer sleeps for space
    # with bytes of it left (Mogul's TF_MORE, section 5.4, kept set across the sleep). Only a
    # write's last segment can be short, as Mogul's section 3.3 model of OF+SFS assumes (delayed
    # iff (2N+1)*MSS < length < (2N+2)*MSS); a write that has copied nothing yet does not count.
    # Not held: TCP_NODELAY (Nagle OFF) and DLDET's forced release (Mogul figure 6 overrides MORE).
    # The Nagle module applies it (NagleState.native_more); the host marks a sleeping writer.
    write_more_hold: bool = False
    # Nagle variant MINSHALL as Mogul measured it on his Tru64 kernel (tables 4 and 5): a short
    # segment waits only while one that a write() sent alone on an idle connection (nothing else
    # unacknowledged as it left) is unacknowledged. His figure 9 case holds (a 4 KB write leaves
    # alone on FDDI, the next waits for the ACK); these do not hold the next one:
    # - a short sent while data was outstanding (a write's end after full segments), including
    #   one that follows full segments in the same idle tcp_output call: on Ethernet a 4 KB write
    #   leaves as 1460 + 1460 + 1176, and his MINSHALL scores 0.3-1.1 % in every 4 KB column of
    #   table 4 ("does well ... except when app_buf_size is smaller than the MSS", section 8),
    #   where counting the 1176 stalls 4100..7000 bytes (2.9 %);
    # - a short sent by an ACK's tcp_output (the rest of the buffer after a refill).
    # Inferred from the tables, not from source (the paper leaves the code to Minshall's draft):
    # with the literal rule FDDI MINSHALL scores 66.4 % (4 KB writes) and 14.6 % (32 KB writes)
    # with a 16 KB buffer where the paper has 8.8 % and 0.0 %, while its EOM and MSMV stall at the
    # same write boundaries (14.1 % and 10.3 %). False: every short segment sent counts (Linux
    # tcp_minshall_update, docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay).
    minshall_idle_writes_only: bool = False

    def with_(self, **changes) -> "Personality":
        return replace(self, **changes)


_BSD_TIMERS = dict(
    slow_tick_ns=500 * NS_PER_MS,
    rto_min_ns=1 * NS_PER_S,
    rto_max_ns=64 * NS_PER_S,
    rto_initial_ns=6 * NS_PER_S,
)

SUNOS41 = Personality(
    name="sunos41",
    family=Family.BSD,
    copy_rule=CopyRule.SUNOS_CHUNK,
    mclbytes=1024,
    send_chunk=4096,
    writer_lowat=1024,
    moretocome=False,
    mss_cluster_round=False,
    mss_nonlocal_cap=None,
    buffer_round_to_mss=False,
    timestamps=False,
    window_update=WindowUpdateRule.SUNOS_35,
    suppress_update_with_delack=False,
    delack=DelAckPolicy.BSD_TICK,
    delack_ns=200 * NS_PER_MS,
    small_sender_inference=False,
    rttvar_mult=2,
    recovery=Recovery.TAHOE,
    initial_cwnd_segments=0,
    nagle=NagleVariant.NAGLE,
    default_sndbuf=4096,
    default_rcvbuf=4096,
    **_BSD_TIMERS,
)

BSD44 = SUNOS41.with_(
    name="bsd44",
    copy_rule=CopyRule.PER_CLUSTER,
    mclbytes=2048,
    send_chunk=2048,
    writer_lowat=2048,
    mss_cluster_round=True,
    buffer_round_to_mss=True,
    window_update=WindowUpdateRule.BSD_50,
    rttvar_mult=4,
    rtt_fixed_point=True,
    recovery=Recovery.RENO,
    initial_cwnd_segments=1,
    default_sndbuf=8192,
    default_rcvbuf=8192,
)

FREEBSD4 = BSD44.with_(
    name="freebsd4",
    moretocome=True,
    timestamps=True,
    delack=DelAckPolicy.FREEBSD,
    delack_ns=100 * NS_PER_MS,
    slow_tick_ns=None,
    rtt_fixed_point=False,  # hz-based timers, same rules finer grained (docs/tcp-rules.md#retransmission-timer)
    recovery=Recovery.NEWRENO,
    default_sndbuf=32768,
    default_rcvbuf=65536,
)

TRU64 = BSD44.with_(
    name="tru64",
    mclbytes=8192,
    send_chunk=8192,
    writer_lowat=8192,
    small_sender_inference=True,
    # Buffers kept at the size asked for. 4.4BSD rounds them up to a multiple of the MSS only
    # inside tcp_mss (when the peer's MSS option arrives), so a SO_SNDBUF set afterwards is kept;
    # Mogul's Tru64 hosts ran that way: "the buffer size is not a multiple of MSS" (section 8,
    # EOM), "if the socket buffer size is a multiple of MCLBYTES" (section 5, MSMV), and
    # "2 * MSS = 8624, larger than an 8192-byte buffer" (section 9).
    buffer_round_to_mss=False,
    default_sndbuf=32768,
    default_rcvbuf=32768,
    # OSF/1 sosend copies a cluster of min(resid, MCLBYTES) per PRU_SEND whatever the round's
    # space left (uipc_socket.c, mbufthreshold = 1024). Its tcp_mss also sets sb_lowat = mss
    # (lowat_is_mss); with it Mogul's Ethernet table moves away from the paper (EOM 37 %, MINSHALL
    # 10 %, against 32 % and 3 %), so Tru64 V4.0F is taken to keep soreserve's MCLBYTES mark.
    mbuf_threshold=1024,
    # Mogul's measurements follow the section 3.3 model with large writes (FDDI NAGLE 128 KB
    # writes, 128 KB buffer: 44.5 % against the model's 43.9 %; a cluster's torn short segment
    # would shift every delayed band by 3880 bytes and give 47.6 %), and his MORE flag never
    # changes a score (E+M = EOM, MIN+MORE = MINSHALL, E+M+M = MSMV): Tru64 V4.0F behaves as if
    # it were always set.
    write_more_hold=True,
    minshall_idle_writes_only=True,
)

LINUX = Personality(
    name="linux",
    family=Family.LINUX,
    copy_rule=CopyRule.WHOLE_WRITE,
    mclbytes=4096,
    send_chunk=65536,
    writer_lowat=1,
    moretocome=False,
    mss_cluster_round=False,
    mss_nonlocal_cap=None,
    buffer_round_to_mss=False,
    timestamps=True,  # net.ipv4.tcp_timestamps = 1
    window_update=WindowUpdateRule.LINUX,
    suppress_update_with_delack=False,
    delack=DelAckPolicy.LINUX_ATO,
    delack_ns=200 * NS_PER_MS,
    small_sender_inference=False,
    slow_tick_ns=None,
    rto_min_ns=200 * NS_PER_MS,
    rto_max_ns=120 * NS_PER_S,
    rto_initial_ns=1 * NS_PER_S,
    rttvar_mult=4,
    recovery=Recovery.NEWRENO,
    initial_cwnd_segments=10,
    nagle=NagleVariant.MINSHALL,
    sndbuf_multiplier=2,
    max_retransmits=15,
    establish_timeout_ns=None,
    syn_retries=6,
    synack_retries=5,
    default_sndbuf=65536,
    default_rcvbuf=65536,
    sack=True,
    ts_tick_ns=1 * NS_PER_MS,
    linux_rtt=True,
    linux_ca=True,
    cubic=True,
)

LINUX20 = LINUX.with_(
    name="linux20",
    sndbuf_multiplier=1,
    max_window=32767,
    family=Family.LINUX20,
    nagle=NagleVariant.NAGLE,
    delack=DelAckPolicy.LINUX20_ATO,
    delack_ns=NS_PER_S // 3,  # HZ/3 initial ATO (docs/tcp-rules.md#delayed-ack-timers)
    rto_min_ns=200 * NS_PER_MS,
    initial_cwnd_segments=0,  # simplification: the LAN runs of Salamon's report start at full window
    recovery=Recovery.RENO,
    syn_retries=10,
    synack_retries=15,
    sack=False,  # Linux 2.0 had no SACK (it came with 2.2)
    timestamps=False,  # nor timestamps (2.1)
    linux_rtt=False,  # Linux 2.0: Jacobson's estimator on one timed segment (docs/tcp-rules.md#retransmission-timer)
    linux_ca=False,
    cubic=False,  # Reno (CUBIC became the default in 2.6.19)
    default_sndbuf=32768,
    default_rcvbuf=32768,
)

PERSONALITIES: dict[str, Personality] = {p.name: p for p in (SUNOS41, BSD44, FREEBSD4, TRU64, LINUX20, LINUX)}


def get_personality(name: str) -> Personality:
    try:
        return PERSONALITIES[name]
    except KeyError:
        raise ValueError(f"unknown personality {name!r}; expected one of {', '.join(PERSONALITIES)}") from None
