"""Simulator paths from presets: framing on the wire, the ATM switch port, the jumbo-slot NIC
watching ACKs, the PMTU hop's ICMP, and every drop logged with where and why."""

import pytest

from stallscope.simulate.engine import Simulator
from stallscope.simulate.ground_truth import GroundTruth
from stallscope.simulate.links.atm_path import AtmSwitchPath
from stallscope.simulate.links.drops import DropLog
from stallscope.simulate.links.presets import LINK_PRESETS, AtmSwitchSpec, make_path
from stallscope.simulate.links.stages import JumboNicStage
from stallscope.simulate.links.tap import Tap
from stallscope.simulate.segment import ACK, Segment


def data(uid: int, payload: int, seq: int | None = None) -> Segment:
    return Segment("10.0.0.1", "10.0.0.2", 1000, 5001, seq=uid * payload if seq is None else seq,
                   ack=1, flags=ACK, window=65535, payload_len=payload, uid=uid)


def ack(value: int, uid: int = 10_000) -> Segment:
    return Segment("10.0.0.2", "10.0.0.1", 5001, 1000, seq=1, ack=value, flags=ACK, window=65535, uid=uid)


def wired(sim, name, **kw):
    fwd, rev = make_path(sim, name, **kw)
    rx, tx = Tap("rx"), Tap("tx")
    fwd.connect(rx)
    rev.connect(tx)
    return fwd, rev, rx, tx


def test_ethernet_framing_and_delay():
    sim = Simulator()
    fwd, _, rx, _ = wired(sim, "ethernet10")
    fwd.receive(0, data(1, 1460))  # 1500-byte datagram + 38 bytes of framing at 10 Mbit/s
    fwd.receive(0, data(2, 0))  # 40-byte ACK padded to a 64-byte frame
    sim.run()
    assert [t for t, _ in rx.records] == [1_230_400 + 10_000, 1_230_400 + 67_200 + 10_000]


def test_atm140_pays_the_cell_tax():
    sim = Simulator()
    fwd, _, rx, _ = wired(sim, "atm140")
    fwd.receive(0, data(1, 9204))  # 9244-byte datagram: 193 cells = 10229 bytes at 140 Mbit/s
    sim.run()
    assert rx.records[0][0] == 584_515 + 20_000
    assert LINK_PRESETS["atm140"].framing_overhead(9244) == 10229 - 9244


def test_unknown_preset_and_impairment_are_named():
    with pytest.raises(KeyError, match="token-ring"):
        make_path(Simulator(), "token-ring")
    with pytest.raises(TypeError, match="jitter"):
        make_path(Simulator(), "gige", jitter=5)
    with pytest.raises(ValueError, match="rate"):
        make_path(Simulator(), "custom", delay_ns=5)


def test_atm_switch_port_drops_cells_of_a_window_larger_than_its_buffer():
    sim = Simulator()
    gt = GroundTruth({})
    log = DropLog(gt)
    spec = AtmSwitchSpec(buffer_bytes=32 * 1024, out_rate_bps=51_000_000, policy="none")
    fwd, _, rx, _ = wired(sim, "oc3", atm_switch=spec, drop_log=log)
    for i in range(7):  # a 64 KB window of 9180-byte datagrams sent back to back
        fwd.receive(0, data(i, 9140))
    sim.run()
    delivered = [s.uid for _, s in rx.records]
    assert delivered == sorted(delivered) and len(delivered) + len(log.drops) == 7
    assert log.drops and {d.reason for d in log.drops} == {"atm_cell_loss"}
    assert gt.drops == {"atm_cell_loss": len(log.drops)}
    switch = fwd.find(AtmSwitchPath).switch
    assert switch.max_occupancy == spec.capacity_cells


def test_atm_switch_with_room_for_the_window_loses_nothing():
    sim = Simulator()
    spec = AtmSwitchSpec(buffer_bytes=64 * 1024, out_rate_bps=51_000_000, policy="none")
    fwd, _, rx, _ = wired(sim, "oc3", atm_switch=spec)
    for i in range(7):
        fwd.receive(0, data(i, 9140))
    sim.run()
    assert len(rx.records) == 7
    # the output port (51 Mbit/s) is the bottleneck: 7 PDUs of 192 cells take 7*192 cell times
    last = rx.records[-1][0]
    assert 7 * 192 * 8313 <= last <= 7 * 192 * 8313 + 200_000


def test_jumbo_nic_holds_slots_until_acked_and_small_frames_pass():
    sim = Simulator()
    log = DropLog()
    fwd, rev, rx, tx = wired(sim, "gige", mtu=9000, jumbo_slots=2, drop_log=log)
    fwd.receive(0, data(0, 8000, seq=0))
    fwd.receive(0, data(1, 8000, seq=8000))
    fwd.receive(0, data(2, 8000, seq=16000))  # no slot: both held by unacknowledged data
    fwd.receive(0, data(3, 1000, seq=24000))  # standard-size frame: other ring
    sim.run()
    assert [s.uid for _, s in rx.records] == [0, 1, 3]
    assert [(d.uid, d.reason) for d in log.drops] == [(2, "jumbo_slot_exhaustion")]
    rev.receive(sim.now, ack(8000))  # frees the first slot only
    sim.run()
    assert len(tx.records) == 1
    fwd.receive(sim.now, data(4, 8000, seq=16000))
    fwd.receive(sim.now, data(5, 8000, seq=32000))
    sim.run()
    assert [s.uid for _, s in rx.records][-1] == 4 and log.drops[-1].uid == 5
    assert fwd.find(JumboNicStage).pool.dropped == 2


def test_pmtu_icmp_reaches_the_sender_and_blackhole_stays_silent():
    for mode, expect_icmp in (("icmp", True), ("blackhole", False)):
        sim = Simulator()
        log = DropLog()
        told = []
        fwd, _, rx, _ = wired(sim, "gige", mtu=9000, pmtu_mtu=1500, pmtu_mode=mode,
                              icmp_sink=lambda now, mtu: told.append((now, mtu)), drop_log=log)
        fwd.receive(0, data(1, 4000))
        fwd.receive(0, data(2, 1400))
        sim.run()
        assert [s.uid for _, s in rx.records] == [2]
        assert log.drops[0].reason == ("pmtu_frag_needed" if mode == "icmp" else "pmtu_blackhole")
        if expect_icmp:
            # dropped at the hop after the first link, reported one more link delay later
            assert told == [(log.drops[0].at_ns + 10_000, 1500)]
        else:
            assert told == []


def test_random_loss_is_seeded_and_logged():
    def run(seed):
        sim = Simulator(seed)
        log = DropLog()
        fwd, _, rx, _ = wired(sim, "fastethernet", loss=0.2, drop_log=log)
        for i in range(200):
            fwd.receive(i * 200_000, data(i, 1000))
        sim.run()
        return [d.uid for d in log.drops], len(rx.records)

    lost, got = run(4)
    assert lost == run(4)[0] and 20 < len(lost) < 60 and got == 200 - len(lost)
    assert lost != run(5)[0]


def test_black_hole_in_a_full_run_swallows_every_large_segment():
    """Through the real hosts: the handshake's small segments pass the 1500-byte hop, every
    jumbo data segment (and each retransmission of it) vanishes, and the drops are counted."""
    from stallscope.simulate.reproductions.impaired_bulk import run_impaired
    from stallscope.simulate.run_bulk import BulkConfig

    cfg = BulkConfig(personality="freebsd4", link="gige", mtu=9000, sndbuf=1 << 20, rcvbuf=1 << 20,
                     write=65536, read=65536, bytes=1 << 20)
    result, path = run_impaired(cfg, pmtu_mtu=1500, pmtu_mode="blackhole")
    assert not result.completed and result.bytes == 0
    assert result.timeouts > 0
    assert result.ground_truth.drops == {"pmtu_blackhole": result.retransmits + 1}
