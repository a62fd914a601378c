"""Opening a connection over a path that loses SYNs or SYN-ACKs: each stack resends with its
back-off and gives up as its source says (4.4BSD's 75 s connection-establishment timer, Linux's
tcp_syn_retries / tcp_synack_retries; native/src/sim/tcp/personality.rs)."""

import pytest

from stallscope.simulate.run_bulk import RECEIVER_ADDR, BulkConfig, run_bulk
from stallscope.simulate.segment import ACK, RST, SYN
from stallscope.simulate.units import NS_PER_MS, NS_PER_S


def _run(personality: str, **impairments):
    return run_bulk(BulkConfig(personality=personality, link="ethernet10", bytes=50_000), impairments=impairments)


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


def _server_view(personality: str):
    """Run with everything from the receiver lost; return (client SYN times, server SYN-ACK
    times, the server's last segment as (time, is_rst)). The server's segments never reach the
    sender's tap: they are read from the path's drop log, taken where the server emits them. Its
    SYN-ACK occupies its initial sequence number and carries options; a RST is the bare 40-byte
    segment at the next sequence number (nothing else leaves a server in SYN_RECEIVED)."""
    r = run_bulk(BulkConfig(personality=personality, link="ethernet10", bytes=50_000),
                 impairments={"reverse_loss": 1.0})
    assert not r.completed
    server = [d for d in r.drops if d.flow[0] == RECEIVER_ADDR]
    assert server and all(d.payload_len == 0 and d.reason == "random_loss" for d in server)
    iss = server[0].seq
    assert all(d.seq in (iss, iss + 1) for d in server)
    synacks = [d.at_ns for d in server if d.seq == iss]
    assert all(d.ip_len > 40 for d in server if d.seq == iss)  # the SYN-ACK's MSS option
    last = server[-1]
    client_syns = [t for t, seg in r.records if seg.flags & SYN]
    return client_syns, synacks, (last.at_ns, last.seq == iss + 1 and last.ip_len == 40)


def test_bsd_resends_a_lost_syn_ack_on_its_own_timer_and_resets_when_it_gives_up():
    """4.4BSD drops a repeated SYN in SYN_RECEIVED (no ACK bit) and resends its SYN-ACK only when
    its own backed-off timer fires; the 75 s establishment timer then drops it with a RST."""
    client_syns, synacks, (last_t, last_is_rst) = _server_view("bsd44")
    gaps = [b - a for a, b in zip(synacks, synacks[1:])]
    assert len(client_syns) == 4 and len(synacks) == 4
    assert [round(g / NS_PER_S) for g in gaps[1:]] == [12, 24]  # the tcp_backoff doubling
    # No SYN-ACK answers a repeated SYN: none leaves within a millisecond of one's arrival.
    assert not any(0 <= s - c <= NS_PER_MS for s in synacks[1:] for c in client_syns)
    assert last_is_rst and 74.5 * NS_PER_S <= last_t <= 75.5 * NS_PER_S


def test_linux_answers_a_repeated_syn_with_its_syn_ack_at_once():
    client_syns, synacks, (_, last_is_rst) = _server_view("linux")
    assert len(synacks) > len(client_syns)  # its own timer and every repeated SYN
    # Each repeated SYN is answered as it arrives (one SYN frame and the link delay later), as long
    # as the request socket lives (the last SYN comes after it gave up: tcp_synack_retries).
    assert all(any(0 <= s - c <= NS_PER_MS for s in synacks) for c in client_syns[:-1])
    assert not last_is_rst  # a Linux request socket is dropped silently


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
                 impairments={"drop_nth": (3,)})  # SYN, ACK, then the first data segment
    data = [(t, seg.seq) for t, seg, *_ in r.records if seg.payload_len and seg.flags & SYN == 0]
    first_seq = data[0][1]
    sends = [t for t, seq in data if seq == first_seq]
    assert len(sends) == 2 and r.timeouts == 1 and r.completed
    assert 0.5 * NS_PER_S <= sends[1] - sends[0] <= 2 * NS_PER_S
