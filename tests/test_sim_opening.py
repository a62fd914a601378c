"""Opening a connection over a path that loses SYNs or SYN-ACKs: each stack resends with its
back-off and gives up as its source says (simulate/tcp/personality.py: 4.4BSD's 75 s
connection-establishment timer, Linux's tcp_syn_retries / tcp_synack_retries)."""

import pytest

from stallscope.simulate.engine import NS_PER_S
from stallscope.simulate.run_bulk import BulkConfig, run_bulk
from stallscope.simulate.segment import ACK, RST, SYN


def _run(personality: str, **impairments):
    return run_bulk(BulkConfig(personality=personality, link="ethernet10", bytes=50_000),
                    impairments=impairments, engine="python")


def _syn_times(r, *, ack: bool) -> list[float]:
    want = SYN | ACK if ack else SYN
    return [t / NS_PER_S for t, seg, *_ in r.records if seg.flags & (SYN | ACK) == want]


def test_linux_doubles_the_syn_timer_from_1s_and_gives_up_after_6_retries():
    r = _run("linux", loss=1.0)
    times = _syn_times(r, ack=False)
    assert times == pytest.approx([0, 1, 3, 7, 15, 31, 63])
    assert not r.completed and r.aborted
    assert r.aborted_at_ns == 127 * NS_PER_S  # the 7th timer (64 s) runs out: tcp_syn_retries = 6
    assert r.duration_ns == r.aborted_at_ns  # not the simulator's 4 h ceiling
    assert r.timeouts == 7


def test_bsd_resends_on_the_slow_tick_and_drops_at_the_75s_establishment_timer():
    r = _run("bsd44", loss=1.0)
    times = _syn_times(r, ack=False)
    # 6 s initial RTO doubled (tcp_backoff), counted in 500 ms slow ticks from an arbitrary phase.
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert len(times) == 4 and gaps[1] == pytest.approx(12) and gaps[2] == pytest.approx(24)
    assert 5.5 <= gaps[0] <= 6
    assert 74.5 <= r.aborted_at_ns / NS_PER_S <= 75.5
    assert not any(seg.flags & RST for _, seg, *_ in r.records)  # an unanswered connect sends no RST


def _server_view(monkeypatch, personality: str):
    """Run with everything from the receiver lost; return (client SYN times, server SYN-ACK
    times, the server's last segment (time, flags))."""
    from stallscope.simulate.tcp.host import Host

    sent: list[tuple[int, str, int]] = []
    emit = Host._emit

    def spy(self, now, seg):
        sent.append((now, seg.src, seg.flags))
        return emit(self, now, seg)

    monkeypatch.setattr(Host, "_emit", spy)
    r = run_bulk(BulkConfig(personality=personality, link="ethernet10", bytes=50_000),
                 impairments={"reverse_loss": 1.0}, engine="python")
    assert not r.completed
    client = r.records[0][1].src
    server = [(t, f) for t, src, f in sent if src != client]
    client_syns = [t for t, src, f in sent if src == client and f & SYN]
    synacks = [t for t, f in server if f & (SYN | ACK) == SYN | ACK]
    return client_syns, synacks, server[-1]


def test_bsd_resends_a_lost_syn_ack_on_its_own_timer_and_resets_when_it_gives_up(monkeypatch):
    """4.4BSD drops a repeated SYN in SYN_RECEIVED (no ACK bit) and resends its SYN-ACK only when
    its own backed-off timer fires; the 75 s establishment timer then drops it with a RST."""
    client_syns, synacks, (last_t, last_flags) = _server_view(monkeypatch, "bsd44")
    gaps = [b - a for a, b in zip(synacks, synacks[1:])]
    assert len(client_syns) == 4 and len(synacks) == 4
    assert [round(g / NS_PER_S) for g in gaps[1:]] == [12, 24]  # the tcp_backoff doubling
    assert not set(synacks[1:]) & set(client_syns)
    assert last_flags & RST and 74.5 * NS_PER_S <= last_t <= 75.5 * NS_PER_S


def test_linux_answers_a_repeated_syn_with_its_syn_ack_at_once(monkeypatch):
    client_syns, synacks, (last_t, last_flags) = _server_view(monkeypatch, "linux")
    assert len(synacks) > len(client_syns)  # its own timer and every repeated SYN
    assert not last_flags & RST  # a Linux request socket is dropped silently


def test_one_lost_syn_costs_one_initial_rto_and_the_transfer_completes():
    for personality, rto in (("linux", 1.0), ("linux20", 1.0)):
        r = _run(personality, drop_nth=(1,))
        assert r.completed and not r.aborted
        assert _syn_times(r, ack=False) == pytest.approx([0, rto])


@pytest.mark.parametrize("personality", ["sunos41", "bsd44", "tru64"])
def test_the_handshake_is_timed_so_the_first_data_timeout_is_rtt_based(personality):
    """4.4BSD tcp_output times the SYN like any first transmission and tcp_input feeds the SYN-ACK's
    RTT to tcp_xmit_timer: a lost first data segment on a LAN times out after about a second (the
    slow-tick minimum), not after the 6 s initial RTO of a connection with no sample."""
    r = run_bulk(BulkConfig(personality=personality, link="ethernet10", bytes=100_000),
                 impairments={"drop_nth": (3,)}, engine="python")  # SYN, ACK, then the first data segment
    data = [(t, seg.seq) for t, seg, *_ in r.records if seg.payload_len and seg.flags & SYN == 0]
    first_seq = data[0][1]
    sends = [t for t, seq in data if seq == first_seq]
    assert len(sends) == 2 and r.timeouts == 1 and r.completed
    assert 0.5 * NS_PER_S <= sends[1] - sends[0] <= 2 * NS_PER_S
