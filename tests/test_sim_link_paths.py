"""Simulated paths from presets, seen through whole runs: framing and delay on the wire (IEEE
802.3, AAL5 cells), a congested ATM switch port (Kung & Morris), the jumbo-slot NIC that holds a
slot until the frame's data is acknowledged (Shalunov's GigaTCP), the PMTU hop's ICMP (RFC 1191),
seeded random loss, and every drop logged with where and why."""

import pytest

from stallscope.simulate.links.atm import cell_time_ns
from stallscope.simulate.links.presets import LINK_PRESETS, AtmSwitchSpec
from stallscope.simulate.host_cost import HostCost
from stallscope.simulate.run_bulk import RECEIVER_ADDR, SENDER_ADDR, BulkConfig, run_bulk
from stallscope.simulate.segment import FIN


def _acks_after_first_data(link: str):
    """Linux sends three full segments right behind its 52-byte handshake ACK and the receiver
    (in quick-ACK mode) acknowledges each as it arrives: (the ACKs' arrival times at the sender
    after the data left, the data's IP length)."""
    r = run_bulk(BulkConfig(personality="linux", link=link, bytes=3 * (LINK_PRESETS[link].mtu - 52),
                            write=65536, read=65536))
    data = [(t, s) for t, s in r.records if s.src == SENDER_ADDR and s.payload_len]
    t0 = data[0][0]
    assert all(t == t0 for t, _ in data) and len(data) == 3
    acks = [t - t0 for t, s in r.records if s.src == RECEIVER_ADDR and t > t0 and not s.flags & FIN]
    return acks, data[0][1].ip_len


def test_ethernet_framing_and_delay():
    # A 1500-byte datagram + 38 bytes of framing at 10 Mbit/s: 1_230_400 ns; a 52-byte ACK is a
    # 90-byte frame (72_000 ns); a 44-byte SYN is padded to the 46-byte minimum (84 bytes, 67_200).
    acks, ip_len = _acks_after_first_data("ethernet10")
    assert ip_len == 1500
    # the handshake ACK ahead of the data, the data, the link, the receiver's ACK, the link
    first = 72_000 + 1_230_400 + 10_000 + 72_000 + 10_000
    assert acks == [first, first + 1_230_400, first + 2 * 1_230_400]
    r = run_bulk(BulkConfig(personality="bsd44", link="ethernet10", bytes=1000))
    (t_syn, syn), (t_synack, synack) = r.records[:2]
    assert (syn.ip_len, synack.ip_len) == (44, 44)
    assert t_synack - t_syn == 2 * (67_200 + 10_000)


def test_atm140_pays_the_cell_tax():
    # A 9244-byte datagram: 193 cells = 10229 bytes at 140 Mbit/s (584_515 ns); a 52-byte ACK is
    # 2 cells (106 bytes, 6_058 ns); 20 us each way.
    acks, ip_len = _acks_after_first_data("atm140")
    assert ip_len == 9244
    first = 6_058 + 584_515 + 20_000 + 6_058 + 20_000
    assert acks == [first, first + 584_515, first + 2 * 584_515]
    assert LINK_PRESETS["atm140"].framing_overhead(9244) == 10229 - 9244


def test_unknown_preset_and_impairment_are_named():
    with pytest.raises(ValueError, match="token-ring"):
        run_bulk(BulkConfig(link="token-ring"))
    with pytest.raises(ValueError, match="jitter"):
        run_bulk(BulkConfig(link="gige"), impairments={"jitter": 5})
    with pytest.raises(ValueError, match="rate"):
        run_bulk(BulkConfig(link="custom", delay_ns=5))


def _through_switch(buffer_bytes: int):
    """tru64 (8232-byte datagrams, 172 cells) with a 64 KB window from OC-3 into a 51 Mbit/s port."""
    spec = AtmSwitchSpec(buffer_bytes=buffer_bytes, out_rate_bps=51_000_000, policy="none")
    r = run_bulk(BulkConfig(personality="tru64", link="oc3", sndbuf=65536, rcvbuf=65536, write=65536, read=65536,
                            bytes=1 << 20), impairments={"atm_switch": spec})
    return r, spec, r.path.forward.atm


def test_atm_switch_port_drops_cells_of_a_window_larger_than_its_buffer():
    r, spec, atm = _through_switch(32 * 1024)
    pdus = list(atm.pdus)
    delivered = [p for p in pdus if p.fate.delivered]
    assert len(pdus) == atm.pdus_in and len(delivered) + atm.pdus_lost == atm.pdus_in
    # what leaves the port leaves in the order it came
    by_departure = sorted(delivered, key=lambda p: p.fate.last_cell_departure_ns)
    assert [p.uid for p in by_departure] == sorted(p.uid for p in delivered)
    assert atm.cells_dropped > 0 and atm.pdus_lost == len(r.drops) > 0
    assert {d.reason for d in r.drops} == {"atm_cell_loss"}
    assert r.ground_truth.drops == {"atm_cell_loss": len(r.drops)}
    assert atm.max_occupancy == spec.capacity_cells


def test_atm_switch_with_room_for_the_window_loses_nothing():
    r, spec, atm = _through_switch(64 * 1024)
    assert atm.cells_dropped == 0 and atm.pdus_lost == 0 and not r.drops and r.timeouts == 0
    assert atm.max_occupancy <= spec.capacity_cells
    # The output port (51 Mbit/s) is the bottleneck: a PDU that finds the port busy leaves its
    # cells' worth of cell times after the one before it.
    cell = cell_time_ns(51_000_000)
    pdus = list(atm.pdus)
    queued = [(a, b) for a, b in zip(pdus, pdus[1:]) if b.at_ns < a.fate.last_cell_departure_ns]
    assert len(queued) > 50
    assert all(b.fate.last_cell_departure_ns - a.fate.last_cell_departure_ns == b.cells * cell for a, b in queued)
    assert {b.cells for _, b in queued} >= {172}


def test_jumbo_nic_holds_slots_until_acked_and_small_frames_pass():
    """Two jumbo slots and a receiver that takes 100 us per packet: frames pile up unacknowledged
    and a jumbo frame that finds both slots held is dropped, while standard-size frames (the
    handshake, the FIN) pass on the other ring. Returning a slot as soon as the frame is taken
    (not when its data is acknowledged) loses nothing."""
    def run(hold: bool):
        return run_bulk(BulkConfig(personality="linux", link="gige", mtu=9000, sndbuf=1 << 20, rcvbuf=1 << 20,
                                   write=65536, read=65536, bytes=1 << 20, cost=HostCost(input_ns_per_packet=100_000)),
                        impairments={"jumbo_slots": 2, "jumbo_hold_until_acked": hold})

    held = run(True)
    nic = held.path.forward.nic
    assert nic.dropped == len(held.drops) > 0 and nic.min_free == 0
    assert {d.reason for d in held.drops} == {"jumbo_slot_exhaustion"}
    assert all(d.ip_len > 1500 for d in held.drops)
    assert nic.small_passed >= 2  # SYN and the handshake's ACK
    assert nic.accepted + nic.dropped + nic.small_passed == held.path.forward.link.sent_packets
    # When a frame was dropped, at least two accepted jumbo frames were still unacknowledged
    # (counted at the sender, whose ACKs lag the NIC's).
    dropped = {d.uid for d in held.drops}
    sent = [(t, s) for t, s in held.records if s.src == SENDER_ADDR]
    iss = sent[0][1].seq

    def rel(seq: int) -> int:
        return (seq - iss) % (1 << 32)

    acks = [(t, rel(s.ack)) for t, s in held.records if s.src == RECEIVER_ADDR and s.flags & 0x10]
    for d in held.drops:
        acked = max((a for t, a in acks if t <= d.at_ns), default=0)
        waiting = [s for t, s in sent if t < d.at_ns and s.uid not in dropped and s.ip_len > 1500
                   and rel(s.seq) + s.payload_len > acked]
        assert len(waiting) >= 2, d
    freed = run(False)
    assert freed.completed and not freed.drops and freed.path.forward.nic.dropped == 0


def test_pmtu_icmp_reaches_the_sender_and_blackhole_stays_silent():
    for mode, expect_icmp in (("icmp", True), ("blackhole", False)):
        r = run_bulk(BulkConfig(personality="freebsd4", link="gige", mtu=9000, sndbuf=1 << 20, rcvbuf=1 << 20,
                                write=65536, read=65536, bytes=1 << 20),
                     impairments={"pmtu_mtu": 1500, "pmtu_mode": mode})
        hop = r.path.forward.pmtu
        first = r.drops[0]
        assert first.reason == ("pmtu_frag_needed" if mode == "icmp" else "pmtu_blackhole")
        assert first.ip_len > 1500 and first.where.endswith("pmtu")
        assert hop.dropped == len(r.drops) and hop.forwarded > 0
        if expect_icmp:
            assert hop.icmp_sent == 1 and r.ground_truth.summary["icmp_mss_changes"] == 1
            # dropped at the hop after the first link, reported one more link delay later: the
            # sender resends at once in segments that fit
            t, s = next((t, s) for t, s in r.records if s.src == SENDER_ADDR and s.payload_len and t > first.at_ns)
            assert t == first.at_ns + LINK_PRESETS["gige"].delay_ns and s.ip_len <= 1500
        else:
            assert hop.icmp_sent == 0 and r.ground_truth.summary["icmp_mss_changes"] == 0


def test_random_loss_is_seeded_and_logged():
    def run(seed):
        r = run_bulk(BulkConfig(personality="freebsd4", link="fastethernet", bytes=300_000, seed=seed),
                     impairments={"loss": 0.2})
        (stage,) = r.path.forward.losses
        assert {d.reason for d in r.drops} == {"random_loss"} and len(r.drops) == stage.lost
        assert r.path.forward.link.sent_packets == stage.offered - stage.lost
        return [(d.at_ns, d.seq) for d in r.drops], stage

    lost, stage = run(4)
    assert lost == run(4)[0] and 0.1 * stage.offered < len(lost) < 0.3 * stage.offered
    assert lost != run(5)[0]


def test_black_hole_in_a_full_run_swallows_every_large_segment():
    """The handshake's small segments pass the 1500-byte hop, every jumbo data segment (and each
    retransmission of it) vanishes, and the drops are counted."""
    from stallscope.simulate.reproductions.impaired_bulk import run_impaired

    cfg = BulkConfig(personality="freebsd4", link="gige", mtu=9000, sndbuf=1 << 20, rcvbuf=1 << 20,
                     write=65536, read=65536, bytes=1 << 20)
    result, path = run_impaired(cfg, pmtu_mtu=1500, pmtu_mode="blackhole")
    assert not result.completed and result.bytes == 0
    assert result.timeouts > 0
    assert result.ground_truth.drops == {"pmtu_blackhole": result.retransmits + 1}
    assert path.forward.pmtu.dropped == result.retransmits + 1
