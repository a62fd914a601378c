"""Every Nagle variant as one pure decision module.

Sources: Mogul & Minshall, "Rethinking the TCP Nagle Algorithm" (CCR 2001), sections 3 and 5 and
figures 3-6 ("Mogul §N" below); Moldeklev & Gunningberg section 4.2.1 for UNACKED-MSS;
docs/tcp-rules.md#bsd-output-decision-order and docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay.

The TCP sender (tcp_output) asks `may_send_short` only for a candidate segment shorter than maxseg;
the answer is step 2 of the BSD decision order, emptying test included. The other
steps (full segment, persist, half the peer's window, retransmission, FIN) stay in tcp_output.

Some variants need the socket layer's view (Mogul figures 4-6): the host calls the sosend/
soreceive hooks below (`on_write_entry`, `before_pru_send`, `on_app_block`, `on_app_wake`).
Without them the variants fall back on the two facts SendContext carries (`more_to_come` is the
TF_MORE flag; `end_of_message` stands in for TF_EOM).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

# Tru64 UNIX V4.0F cluster size, Mogul §7 ("On this system, MCLBYTES = 8192").
MCLBYTES_TRU64 = 8192


class NagleVariant(str, Enum):
    """Names exactly as in Mogul table 3, plus Moldeklev's change and Linux TCP_CORK."""

    NAGLE = "NAGLE"  # traditional (RFC 896 as in BSD tcp_output), Mogul figure 3
    OFF = "OFF"  # TCP_NODELAY
    MINSHALL = "MINSHALL"  # Mogul §5.1
    MSMV = "MSMV"  # Mogul §5.2
    EOM = "EOM"  # Mogul §5.3
    E_M = "E+M"  # Mogul §5.4, figure 4
    MIN_MORE = "MIN+MORE"  # Mogul table 3
    DLDET = "DLDET"  # Mogul §5.6, figure 6
    E_M_M = "E+M+M"  # Mogul table 3
    E_M_D = "E+M+D"  # Mogul table 3
    BORMAN = "BORMAN"  # Mogul §5.5, figure 5 (with MORE, as §8 says the authors built it)
    UNACKED_MSS = "UNACKED-MSS"  # Moldeklev §4.2.1
    CORK = "CORK"  # Linux TCP_CORK, Mogul §2.3, docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay

    @classmethod
    def parse(cls, name: str) -> NagleVariant:
        """Accept the exact name, case-insensitively, or the enum member name (E_M_D)."""
        key = name.strip().upper()
        for v in cls:
            if v.value == key or v.name == key:
                return v
        raise ValueError(f"unknown Nagle variant {name!r}; expected one of {', '.join(v.value for v in cls)}")


# Variant families (which flags of Mogul's kernel each one switches on).
_EOM_FAMILY = frozenset({NagleVariant.EOM, NagleVariant.E_M, NagleVariant.E_M_M, NagleVariant.E_M_D})
_MORE_FAMILY = frozenset(
    {NagleVariant.E_M, NagleVariant.MIN_MORE, NagleVariant.E_M_M, NagleVariant.E_M_D, NagleVariant.BORMAN}
)
_DLDET_FAMILY = frozenset({NagleVariant.DLDET, NagleVariant.E_M_D})
_MSMV_FAMILY = frozenset({NagleVariant.MSMV, NagleVariant.E_M_M})
_MINSHALL_FAMILY = frozenset({NagleVariant.MINSHALL, NagleVariant.MIN_MORE})


@dataclass(frozen=True, slots=True)
class SendContext:
    """Filled by tcp_output for a candidate segment shorter than maxseg."""

    now: int
    length: int
    maxseg: int
    off: int
    sb_cc: int
    idle: bool  # snd_max == snd_una, computed once per tcp_output call (Mogul figure 3)
    snd_una: int
    snd_nxt: int
    snd_max: int
    more_to_come: bool  # TF_MORE: the write call still has bytes to copy
    end_of_message: bool  # the buffered bytes end an application write (EOM mark)
    from_write: bool = False  # tcp_output called by sosend's PRU_SEND (not by input or a timer)

    @property
    def emptying(self) -> bool:
        """Sending this segment empties the socket buffer (Mogul figure 3, `emptying`)."""
        return self.length + self.off >= self.sb_cc


@dataclass(slots=True)
class NagleState:
    """Per-connection state; each field is one of the flags or sequence variables in Mogul §5."""

    variant: NagleVariant
    mclbytes: int = MCLBYTES_TRU64
    # MINSHALL: end sequence of the last short segment sent (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay)
    snd_sml: int | None = None
    small_prev: bool = False  # MSMV: TF_SMALL_PREV
    eom: bool = False  # TF_EOM (figure 4)
    more: bool = False  # TF_MORE as the sosend hooks left it (figure 4)
    nodelay: bool = False  # Borman's per-write TF_NODELAY (figure 5)
    dldet_cr: bool = False  # DLDET: the one-bit counter TF_DLDETCR (figure 6)
    app_blocked: bool = False  # DLDET: SB_WAIT set on the receive or send buffer
    # sosend bookkeeping (figure 4/5 locals)
    hooks_used: bool = False
    outcount: int = 0
    idle_on_entry: bool = False
    more_on_entry: bool = False
    # Buffer occupancy the last decision saw; MSMV's tearing exemption reads it when the segment goes.
    last_sb_cc: int | None = None
    last_end: int | None = None
    # MINSHALL as Mogul's Tru64 kernel measured (personality `minshall_idle_writes_only`): snd_sml
    # remembers only a short segment that a write sent alone on an idle connection.
    sml_idle_writes_only: bool = False
    last_idle_write: bool = False
    # TF_MORE kept natively (personality `write_more_hold`): no short segment while the write being
    # copied has bytes left, whatever the variant (OFF and DLDET's release excepted).
    native_more: bool = False


def new_state(
    variant: NagleVariant, mclbytes: int = MCLBYTES_TRU64, sml_idle_writes_only: bool = False, native_more: bool = False
) -> NagleState:
    return NagleState(variant=NagleVariant(variant), mclbytes=mclbytes, sml_idle_writes_only=sml_idle_writes_only,
                      native_more=native_more)


def _short_unacked(state: NagleState, snd_una: int) -> bool:
    """Minshall: a previously sent short segment is not yet acknowledged (snd_una < snd_sml,
    docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay)."""
    return state.snd_sml is not None and state.snd_sml > snd_una


def _eom_flag(state: NagleState, ctx: SendContext) -> bool:
    return state.eom if state.hooks_used else ctx.end_of_message


def _more_flag(state: NagleState, ctx: SendContext) -> bool:
    return state.more if state.hooks_used else ctx.more_to_come


def may_send_short(variant: NagleVariant, state: NagleState, ctx: SendContext) -> bool:
    """The Nagle test (step 2 of the BSD order): may this short segment go now?"""
    state.last_sb_cc = ctx.sb_cc
    state.last_end = ctx.snd_nxt + ctx.length
    # Alone: nothing unacknowledged ahead of it, not even full segments this same call just sent.
    state.last_idle_write = ctx.idle and ctx.from_write and ctx.snd_nxt == ctx.snd_una
    if not ctx.emptying:
        # Every variant keeps BSD's "only the segment that empties the buffer" (figure 3, figure 4).
        return False
    v = variant
    if v is NagleVariant.OFF:
        return True
    if v is NagleVariant.CORK:
        # Linux never sends a short segment while corked, not even on an idle connection (Mogul §2.3).
        return False
    if state.native_more and ctx.more_to_come and not (v in _DLDET_FAMILY and _dldet_release(state)):
        return False  # only a write's last segment may be short (DLDET's release overrides MORE, figure 6)
    if v is NagleVariant.NAGLE:
        return ctx.idle
    if v is NagleVariant.UNACKED_MSS:
        # Moldeklev §4.2.1: also send when more than one MSS is outstanding unacknowledged.
        return ctx.idle or (ctx.snd_max - ctx.snd_una) > ctx.maxseg

    more = v in _MORE_FAMILY and _more_flag(state, ctx)
    if more and v is NagleVariant.BORMAN and ctx.idle:
        # Borman's rule is the Nagle decision made once per write, the ordinary Nagle test
        # otherwise (Mogul §5.5): it never delays a short segment with nothing unacknowledged.
        # MORE's reason to wait ("as soon as an acknowledgment arrives ... send() will provide
        # additional data", §5.4) needs an ACK to come: on an idle connection none will, and the
        # segment would sit until the persist timer (issue 17).
        more = False
    if more and not (v in _DLDET_FAMILY and _dldet_release(state)):
        # MORE (Mogul §5.4): sosend will add data once an ACK frees space; never send short now.
        return False
    if ctx.idle:
        return True
    if v in _MINSHALL_FAMILY:
        return not _short_unacked(state, ctx.snd_una)  # Mogul §5.1
    if v in _MSMV_FAMILY and not state.small_prev:
        return True  # Mogul §5.2: bypass Nagle when the previous packet was full-sized
    if v in _EOM_FAMILY and _eom_flag(state, ctx):
        return True  # Mogul §5.3 / figure 4: `idle || NODELAY || EOM`
    if v is NagleVariant.BORMAN and state.nodelay:
        return True  # Mogul §5.5 / figure 5
    if v in _DLDET_FAMILY and _dldet_release(state):
        return True  # Mogul §5.6 / figure 6
    return False


def _dldet_release(state: NagleState) -> bool:
    """Figure 6: TF_DLDETCR set and the application is blocked on this socket (SB_WAIT)."""
    return state.dldet_cr and state.app_blocked


def on_segment_sent(state: NagleState, now: int, seq: int, length: int, maxseg: int) -> None:
    """Record a data segment handed to IP (new data or not)."""
    if length <= 0:
        return
    if length >= maxseg:
        state.small_prev = False
        return
    decided = state.last_end == seq + length
    if not state.sml_idle_writes_only or (decided and state.last_idle_write):
        state.snd_sml = max(state.snd_sml or 0, seq + length)
    # MSMV does not count a short packet that buffer tearing caused (Mogul §5.2: "if the socket
    # buffer size is a multiple of MCLBYTES, the TF_SMALL_PREV flag is not set even when a short
    # packet is sent"). "Size" is read as the bytes in the buffer, sb_cc, when the segment that
    # empties it was decided: a configured size that is a multiple of MCLBYTES (all of Mogul's
    # columns) would exempt every short packet. The test works while sb_cc is whole clusters as
    # written; once ACKs drop unaligned amounts it stops ("only works for messages smaller than
    # twice the socket buffer size", Mogul §8).
    aligned = decided and state.last_sb_cc is not None and state.last_sb_cc % state.mclbytes == 0
    state.small_prev = not aligned
    if state.variant in _DLDET_FAMILY and _dldet_release(state):
        state.dldet_cr = False  # figure 6: the counter is decremented by the release


def on_ack(state: NagleState, now: int, ack: int) -> None:
    """An ACK advanced snd_una to `ack`. Minshall compares snd_sml with snd_una at decision time,
    so nothing needs clearing; forget snd_sml once covered to keep the state small."""
    if state.snd_sml is not None and ack >= state.snd_sml:
        state.snd_sml = None


# --- socket-layer hooks (Mogul figures 4-6), called by the host's sosend/soreceive -----------------


def on_write_entry(state: NagleState, idle: bool) -> None:
    """sosend() entry for one application write; `idle` is snd_max == snd_una (figure 5)."""
    state.hooks_used = True
    state.outcount = 0
    state.idle_on_entry = idle
    state.more_on_entry = state.more
    if state.variant is NagleVariant.BORMAN:
        state.nodelay = False  # "cleared on every entry to sosend()" (§5.5)


def before_pru_send(state: NagleState, resid: int, space: int) -> None:
    """sosend() is about to call tcp_output; `resid` bytes of the write remain uncopied and
    `space` bytes are free in the send buffer (figure 4, figure 5)."""
    state.hooks_used = True
    v = state.variant
    if v in _EOM_FAMILY:
        state.eom = (resid == 0 or space <= 0) and (state.outcount > 0 or state.more)
    if v in _MORE_FAMILY:
        state.more = resid > 0
        if resid > 0:
            state.eom = False
    state.outcount += 1
    if v is NagleVariant.BORMAN and resid == 0 and (state.idle_on_entry or state.more_on_entry):
        state.nodelay = True


def on_app_block(state: NagleState) -> bool:
    """The application is about to sleep in soreceive()/sosend() on this socket (figure 6).
    Returns True when the host should run tcp_output now (a held short segment may go)."""
    if state.variant not in _DLDET_FAMILY:
        return False
    state.dldet_cr = True
    state.app_blocked = True
    return True


def on_app_wake(state: NagleState) -> None:
    """The blocked application woke (SB_WAIT cleared)."""
    state.app_blocked = False
