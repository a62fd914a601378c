"""Transition tables for every Nagle variant (Mogul & Minshall §5, Moldeklev §4.2.1)."""

from __future__ import annotations

import pytest

from stallscope.simulate import nagle
from stallscope.simulate.nagle import NagleVariant as V
from stallscope.simulate.nagle import SendContext

MSS = 1460


def ctx(*, length=500, off=0, sb_cc=None, idle=False, una=0, nxt=None, smax=None, more=False, eom=False):
    nxt = una + off if nxt is None else nxt
    smax = nxt if smax is None else smax
    return SendContext(
        now=0, length=length, maxseg=MSS, off=off, sb_cc=off + length if sb_cc is None else sb_cc,
        idle=idle, snd_una=una, snd_nxt=nxt, snd_max=smax, more_to_come=more, end_of_message=eom,
    )


def decide(variant, c, state=None):
    state = state or nagle.new_state(variant)
    return nagle.may_send_short(variant, state, c)


def test_every_variant_has_its_exact_name():
    names = {v.value for v in V}
    assert names == {
        "NAGLE", "OFF", "MINSHALL", "MSMV", "EOM", "E+M", "MIN+MORE", "DLDET",
        "E+M+M", "E+M+D", "BORMAN", "UNACKED-MSS", "CORK",
    }
    assert V.parse("e+m+d") is V.E_M_D and V.parse("E_M_D") is V.E_M_D
    with pytest.raises(ValueError, match="unknown Nagle variant"):
        V.parse("NAGEL")


@pytest.mark.parametrize("variant", [v for v in V if v is not V.CORK])
def test_idle_connection_sends_the_emptying_short_segment(variant):
    assert decide(variant, ctx(idle=True))


@pytest.mark.parametrize("variant", list(V))
def test_no_variant_sends_a_short_segment_that_does_not_empty_the_buffer(variant):
    # window-limited: 500 bytes fit but 2000 are queued (figure 3 `emptying`)
    assert not decide(variant, ctx(idle=True, sb_cc=2000))


def test_cork_holds_even_when_idle():
    assert not decide(V.CORK, ctx(idle=True))


@pytest.mark.parametrize(
    "variant, expected",
    [
        (V.NAGLE, False), (V.OFF, True), (V.MINSHALL, True), (V.MIN_MORE, True), (V.MSMV, True),
        (V.E_M_M, True), (V.EOM, False), (V.E_M, False), (V.BORMAN, False), (V.DLDET, False),
        (V.E_M_D, False), (V.UNACKED_MSS, True), (V.CORK, False),
    ],
)
def test_of_sfs_short_tail_behind_unacked_full_segments(variant, expected):
    """Three full segments sent and unacked, a 500-byte tail left: the OF+SFS case (Mogul §3)."""
    st = nagle.new_state(variant)
    for i in range(3):
        nagle.on_segment_sent(st, 0, i * MSS, MSS, MSS)
    c = ctx(length=500, off=3 * MSS, sb_cc=3 * MSS + 500, una=0, nxt=3 * MSS)
    assert nagle.may_send_short(variant, st, c) is expected


def test_minshall_holds_while_a_short_segment_is_unacked_and_releases_on_its_ack():
    st = nagle.new_state(V.MINSHALL)
    nagle.on_segment_sent(st, 0, 0, 300, MSS)  # short segment [0, 300)
    nagle.on_segment_sent(st, 0, 300, MSS, MSS)
    c = ctx(length=100, off=300 + MSS, una=0, nxt=300 + MSS)
    assert not nagle.may_send_short(V.MINSHALL, st, c)
    nagle.on_ack(st, 1, 300)  # the short one is acked, a full one still outstanding
    c = ctx(length=100, off=MSS, una=300, nxt=300 + MSS)
    assert nagle.may_send_short(V.MINSHALL, st, c)


def test_msmv_holds_after_a_short_packet_but_not_after_a_full_one():
    st = nagle.new_state(V.MSMV)
    c1 = ctx(length=700, off=MSS, una=0, nxt=MSS, sb_cc=MSS + 700 + 1)  # not emptying: probe only
    nagle.may_send_short(V.MSMV, st, c1)
    nagle.on_segment_sent(st, 0, MSS, 700, MSS)  # short, buffer not a cluster multiple
    assert st.small_prev
    assert not nagle.may_send_short(V.MSMV, st, ctx(length=10, off=MSS + 700, una=0, nxt=MSS + 700))
    nagle.on_segment_sent(st, 0, MSS + 700, MSS, MSS)
    assert nagle.may_send_short(V.MSMV, st, ctx(length=10, off=2 * MSS + 700, una=0, nxt=2 * MSS + 700))


def test_msmv_forgives_a_short_packet_when_the_buffer_holds_whole_clusters():
    """Mogul §5.2: "if the socket buffer size is a multiple of MCLBYTES, the TF_SMALL_PREV flag is not
    set even when a short packet is sent" -- sb_cc when the emptying segment was decided. The same
    packet with an unaligned buffer (an ACK dropped part of a cluster) sets SMALL_PREV."""
    st = nagle.new_state(V.MSMV)
    off = 5 * MSS  # 7300 sent, 892 left of an 8192-byte cluster
    c = ctx(length=892, off=off, sb_cc=8192, una=0, nxt=off, idle=True)
    assert nagle.may_send_short(V.MSMV, st, c)
    nagle.on_segment_sent(st, 0, off, 892, MSS)
    assert not st.small_prev
    # 1460 of the cluster acknowledged and dropped: sb_cc 6732 is no longer whole clusters.
    c = ctx(length=892, off=off - MSS, sb_cc=8192 - MSS, una=MSS, nxt=off, idle=True)
    assert nagle.may_send_short(V.MSMV, st, c)
    nagle.on_segment_sent(st, 0, off, 892, MSS)
    assert st.small_prev
    # A segment other than the one just decided (a retransmission) is not forgiven either.
    st = nagle.new_state(V.MSMV)
    nagle.may_send_short(V.MSMV, st, ctx(length=892, off=off, sb_cc=8192, una=0, nxt=off, idle=True))
    nagle.on_segment_sent(st, 0, 0, 500, MSS)
    assert st.small_prev


def test_unacked_mss_needs_strictly_more_than_one_mss_outstanding():
    """Moldeklev §4.2.1: 'more than MSS outstanding unacknowledged bytes'."""
    one = ctx(length=500, off=MSS, una=0, nxt=MSS)
    assert not decide(V.UNACKED_MSS, one)
    more = ctx(length=500, off=MSS + 1, una=0, nxt=MSS + 1)
    assert decide(V.UNACKED_MSS, more)


def _write(state, *, idle, chunks, space_after):
    """Drive the sosend hooks for one write copied in `chunks` (bytes left after each PRU_SEND)."""
    nagle.on_write_entry(state, idle=idle)
    for resid in chunks:
        nagle.before_pru_send(state, resid=resid, space=space_after)


BUSY = dict(length=500, off=3 * MSS, una=0, nxt=3 * MSS)


def test_eom_marks_only_writes_that_called_tcp_output_more_than_once():
    """Mogul §5.3: EOM acts like NAGLE unless the write exceeded one MCLBYTES copy."""
    st = nagle.new_state(V.EOM)
    _write(st, idle=False, chunks=[0], space_after=10_000)  # one copy: no mark
    assert not nagle.may_send_short(V.EOM, st, ctx(**BUSY))
    _write(st, idle=False, chunks=[4000, 0], space_after=10_000)  # two copies: marked
    assert nagle.may_send_short(V.EOM, st, ctx(**BUSY))


def test_eom_alone_marks_a_full_socket_buffer_but_e_m_does_not():
    """Figure 11 tearing: EOM marks a buffer-full copy; E+M sets MORE instead and holds."""
    for variant, expected in ((V.EOM, True), (V.E_M, False)):
        st = nagle.new_state(variant)
        _write(st, idle=False, chunks=[20_000, 12_000], space_after=0)
        assert nagle.may_send_short(variant, st, ctx(**BUSY)) is expected


def test_more_holds_a_short_segment_even_on_an_idle_connection():
    st = nagle.new_state(V.MIN_MORE)
    _write(st, idle=True, chunks=[5000], space_after=0)
    assert not nagle.may_send_short(V.MIN_MORE, st, ctx(idle=True))
    nagle.before_pru_send(st, resid=0, space=100)  # rest of the write copied
    assert nagle.may_send_short(V.MIN_MORE, st, ctx(idle=True))


def test_more_falls_back_on_the_context_without_hooks():
    assert not decide(V.E_M, ctx(idle=True, more=True))
    assert decide(V.E_M, ctx(**BUSY, eom=True))
    assert not decide(V.EOM, ctx(**BUSY, eom=False))


def test_borman_releases_the_tail_of_a_write_that_began_idle_only():
    st = nagle.new_state(V.BORMAN)
    _write(st, idle=True, chunks=[8000, 0], space_after=10_000)
    assert nagle.may_send_short(V.BORMAN, st, ctx(**BUSY))
    _write(st, idle=False, chunks=[0], space_after=10_000)  # next write began busy: plain Nagle
    assert not nagle.may_send_short(V.BORMAN, st, ctx(**BUSY))


def test_dldet_releases_one_short_segment_when_the_application_blocks():
    """Figure 6: the block sets the one-bit counter; one short segment consumes it."""
    st = nagle.new_state(V.DLDET)
    assert not nagle.may_send_short(V.DLDET, st, ctx(**BUSY))
    assert nagle.on_app_block(st)
    assert nagle.may_send_short(V.DLDET, st, ctx(**BUSY))
    nagle.on_segment_sent(st, 0, 3 * MSS, 500, MSS)
    # a second short write while still blocked (multi-threaded Telnet) is held again
    assert not nagle.may_send_short(V.DLDET, st, ctx(length=1, off=3 * MSS + 500, una=0, nxt=3 * MSS + 500))


def test_dldet_does_nothing_until_blocked_and_other_variants_ignore_blocking():
    st = nagle.new_state(V.NAGLE)
    assert not nagle.on_app_block(st)
    assert not nagle.may_send_short(V.NAGLE, st, ctx(**BUSY))
    st = nagle.new_state(V.E_M_D)
    nagle.on_app_block(st)
    nagle.on_app_wake(st)
    assert not nagle.may_send_short(V.E_M_D, st, ctx(**BUSY))
