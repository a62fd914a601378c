"""The link emulator's per-frame decisions (no root needed): timing, queue bounds, drops and their reasons."""

from __future__ import annotations

import dpkt
import pytest

from stallscope.capture.emulator.bursts import BURST_LOSS, BURST_REPAIR_LOSS, tcp_segment_key
from stallscope.capture.emulator.config import (
    BurstLossConfig,
    DirectionConfig,
    GilbertConfig,
    LinkConfig,
    SlotPoolConfig,
    SwitchConfig,
)
from stallscope.capture.emulator.icmp import ROUTER_IP, frag_needed
from stallscope.capture.emulator.model import QUEUE_OVERFLOW, SLOT_EXHAUSTED, DirectionModel
from stallscope.simulate.links.atm import aal5_cells

FRAME = 1514  # a full 1500-byte-MTU Ethernet frame
NS = 1_000_000_000


def ser_ns(wire_bytes: int, rate_bps: int) -> int:
    return -(-wire_bytes * 8 * NS // rate_bps)


def test_rate_limit_spaces_back_to_back_frames_by_their_serialisation_time():
    m = DirectionModel(DirectionConfig(rate_bps=100_000_000, delay_ns=5_000_000))
    a, b = m.offer(0, FRAME), m.offer(0, FRAME)
    assert a.deliver_ns == ser_ns(FRAME, 100_000_000) + 5_000_000
    assert b.deliver_ns - a.deliver_ns == ser_ns(FRAME, 100_000_000)


def test_atm_cell_tax_charges_whole_cells_for_the_ip_packet():
    m = DirectionModel(DirectionConfig(rate_bps=135_000_000, atm_cell_tax=True))
    v = m.offer(0, 9180 + 14)
    # 9180 + 8 (LLC/SNAP) + 8 (AAL5 trailer) = 9196 bytes -> 192 cells of 53 bytes.
    assert aal5_cells(9180) == 192
    assert v.deliver_ns == ser_ns(192 * 53, 135_000_000)


def test_byte_bounded_queue_tail_drops_what_does_not_fit():
    m = DirectionModel(DirectionConfig(rate_bps=100_000_000, queue_bytes=3 * FRAME))
    verdicts = [m.offer(0, FRAME) for _ in range(10)]
    assert sum(v.delivered for v in verdicts) == 3
    assert [v.reason for v in verdicts[3:]] == [QUEUE_OVERFLOW] * 7
    assert m.stats()["drops"] == {QUEUE_OVERFLOW: 7}
    # Once the queue has drained, frames are accepted again.
    assert m.offer(10 * ser_ns(FRAME, 100_000_000), FRAME).delivered


def test_cell_bounded_queue_counts_cells_not_frames():
    cells = aal5_cells(FRAME - 14)
    m = DirectionModel(DirectionConfig(rate_bps=100_000_000, atm_cell_tax=True, queue_cells=2 * cells))
    assert sum(m.offer(0, FRAME).delivered for _ in range(5)) == 2


def test_delivery_is_fifo_even_when_a_small_frame_follows_a_large_one():
    m = DirectionModel(DirectionConfig(rate_bps=10_000_000))
    big, small = m.offer(0, 9014), m.offer(1, 60, impair=False)
    assert small.deliver_ns >= big.deliver_ns


def test_pmtu_blackhole_drops_oversize_silently_and_icmp_mode_reports_the_mtu():
    hole = DirectionModel(DirectionConfig(pmtu=1500))
    assert hole.offer(0, 1500 + 14).delivered
    v = hole.offer(0, 1501 + 14)
    assert not v.delivered and v.icmp_mtu is None and v.reason == "pmtu_blackhole"
    icmp = DirectionModel(DirectionConfig(pmtu=1500, pmtu_mode="icmp")).offer(0, 9014)
    assert not icmp.delivered and icmp.icmp_mtu == 1500 and icmp.reason == "pmtu_frag_needed"


def test_non_ip_frames_bypass_loss_and_pmtu():
    m = DirectionModel(DirectionConfig(loss=1.0, pmtu=68))
    assert m.offer(0, 1000, impair=False).delivered
    assert not m.offer(0, 1000).delivered


def test_random_and_gilbert_loss_are_reproducible_from_the_seed_and_counted():
    cfg = DirectionConfig(loss=0.1, gilbert=GilbertConfig(p_gb=0.05, p_bg=0.3), seed=42)
    runs = []
    for _ in range(2):
        m = DirectionModel(cfg)
        runs.append([m.offer(i * 1000, FRAME).reason for i in range(2000)])
        stats = m.stats()
    assert runs[0] == runs[1]
    assert stats["drops"]["random_loss"] == runs[0].count("random_loss") > 0
    assert stats["drops"]["gilbert_loss"] == runs[0].count("gilbert_loss") > 0
    other = DirectionModel(DirectionConfig(loss=0.1, gilbert=GilbertConfig(p_gb=0.05, p_bg=0.3), seed=43))
    assert [other.offer(i * 1000, FRAME).reason for i in range(2000)] != runs[0]


def test_gilbert_losses_come_in_bursts():
    m = DirectionModel(DirectionConfig(gilbert=GilbertConfig(p_gb=0.01, p_bg=0.1), seed=3))
    lost = [not m.offer(i, FRAME).delivered for i in range(20000)]
    runs, current = [], 0
    for x in lost:
        if x:
            current += 1
        elif current:
            runs.append(current)
            current = 0
    assert sum(runs) / len(runs) > 5  # mean burst 1/p_bg = 10 packets


def _tcp_frame(seq: int, payload: int, sport: int = 40000) -> bytes:
    tcp = dpkt.tcp.TCP(sport=sport, dport=5001, seq=seq, flags=dpkt.tcp.TH_ACK, data=b"x" * payload)
    ip = dpkt.ip.IP(src=bytes([10, 77, 0, 1]), dst=bytes([10, 77, 0, 2]), p=6, data=tcp)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, data=ip, type=0x0800))


def _offer_tcp(m: DirectionModel, seq: int, payload: int = 1448):
    frame = _tcp_frame(seq, payload)
    return m.offer(0, len(frame), segment=tcp_segment_key(frame))


def test_scheduled_bursts_drop_exactly_the_listed_data_frames_and_spare_small_ones():
    cfg = BurstLossConfig(length=3, every=10, warmup=5, count=2)
    assert cfg.indices() == (6, 7, 8, 16, 17, 18)
    m = DirectionModel(DirectionConfig(bursts=cfg))
    lost = []
    for i in range(1, 31):
        assert m.offer(0, 66).delivered  # an ACK between every data frame neither counts nor drops
        if not _offer_tcp(m, i * 1448).delivered:
            lost.append(i)
    assert lost == [6, 7, 8, 16, 17, 18]
    assert m.stats()["drops"] == {BURST_LOSS: 6}


def test_scheduled_burst_can_also_take_the_first_repair_of_its_first_segment_only():
    m = DirectionModel(DirectionConfig(bursts=BurstLossConfig(length=2, every=10, warmup=1, lose_first_repair=True)))
    assert [_offer_tcp(m, seq).delivered for seq in (0, 100, 200, 300)] == [True, False, False, True]
    assert _offer_tcp(m, 200).delivered  # the second hole's repair passes; only the first's is lost
    v = _offer_tcp(m, 100)
    assert not v.delivered and v.reason == BURST_REPAIR_LOSS
    assert _offer_tcp(m, 100).delivered  # the second repair gets through
    assert m.stats()["drops"] == {BURST_LOSS: 2, BURST_REPAIR_LOSS: 1}


def test_tcp_segment_key_names_addresses_ports_and_sequence():
    a, b = _tcp_frame(7, 100), _tcp_frame(7, 1448)
    assert tcp_segment_key(a) == tcp_segment_key(b) != tcp_segment_key(_tcp_frame(8, 100))
    assert tcp_segment_key(_tcp_frame(7, 100, sport=40001)) != tcp_segment_key(a)
    assert tcp_segment_key(bytes(dpkt.ethernet.Ethernet(type=0x0806, data=b"\x00" * 28))) is None


@pytest.mark.parametrize("bad", [dict(length=0, every=10), dict(length=5, every=5, count=2),
                                 dict(length=1, every=10, warmup=-1)])
def test_bad_burst_schedule_is_rejected(bad):
    with pytest.raises(ValueError):
        BurstLossConfig(**bad)


def test_jumbo_slot_pool_drops_jumbo_frames_beyond_its_slots_but_passes_small_ones():
    m = DirectionModel(DirectionConfig(slot_pool=SlotPoolConfig(slots=8, min_frame_len=2048, replenish_ns=1_000_000)))
    jumbo = [m.offer(0, 9014) for _ in range(10)]
    assert sum(v.delivered for v in jumbo) == 8
    assert [v.reason for v in jumbo[8:]] == [SLOT_EXHAUSTED] * 2
    assert m.offer(0, 1514).delivered  # standard ring
    assert m.offer(1_000_000, 9014).delivered  # slots came back after replenish_ns


@pytest.mark.parametrize("policy,reason", [("none", "atm_cell_loss"), ("ppd", "atm_ppd"), ("epd", "atm_epd")])
def test_cell_switch_overflow_is_counted_under_the_policy_reason(policy, reason):
    m = DirectionModel(DirectionConfig(rate_bps=135_000_000,
                                       switch=SwitchConfig(400, policy, access_rate_bps=622_080_000)))
    verdicts = [m.offer(0, 9180 + 14) for _ in range(20)]
    dropped = [v for v in verdicts if not v.delivered]
    assert dropped and {v.reason for v in dropped} == {reason}
    assert m.stats()["drops"][reason] == len(dropped)
    assert m.cells_dropped == sum(v.cells_dropped for v in dropped) > 0
    first = verdicts[0]
    # The first PDU crosses the access link then leaves the output port at 135 Mbit/s.
    assert first.deliver_ns >= ser_ns(192 * 53, 135_000_000)


def test_epd_loses_fewer_pdus_than_no_discard_for_the_same_overload():
    lost = {}
    for policy in ("none", "epd"):
        m = DirectionModel(DirectionConfig(rate_bps=135_000_000,
                                           switch=SwitchConfig(600, policy, access_rate_bps=622_080_000)))
        lost[policy] = sum(not m.offer(i * 50_000, 9194).delivered for i in range(200))
    assert 0 < lost["epd"] < lost["none"]


def test_cells_wasted_counts_lost_pdus_cells_that_still_crossed_the_port():
    """The same overload of back-to-back 9180-byte PDUs under each policy: with no discard a lost
    PDU's surviving cells still take the output port; PPD forwards only its head and end cell;
    EPD (default threshold) refuses whole PDUs at their first cell, so it forwards none."""
    wasted, lost = {}, {}
    for policy in ("none", "ppd", "epd"):
        m = DirectionModel(DirectionConfig(rate_bps=135_000_000,
                                           switch=SwitchConfig(600, policy, access_rate_bps=155_520_000)))
        lost[policy] = sum(not m.offer(0, 9194).delivered for _ in range(60))
        wasted[policy] = m.stats()["cells_wasted"]
        # Every cell of a lost PDU was either dropped or forwarded in vain.
        assert m.cells_wasted + m.cells_dropped == 192 * lost[policy]
    assert wasted["epd"] == 0 < lost["epd"]
    assert wasted["none"] / lost["none"] > 1.5 * wasted["ppd"] / lost["ppd"] > 0


def test_sustained_overload_loses_every_pdu_without_discard_and_one_in_seven_with_epd():
    """Back-to-back 9180-byte PDUs at 155.52 Mbit/s into a 600-cell buffer draining at 135: each
    accepted PDU adds ~25 cells, a refused one lets ~167 drain, so EPD (threshold 408) refuses at
    most one PDU in seven; with no discard, once the buffer is full every PDU loses cells."""
    fate = {}
    for policy in ("none", "epd"):
        m = DirectionModel(DirectionConfig(rate_bps=135_000_000,
                                           switch=SwitchConfig(600, policy, access_rate_bps=155_520_000)))
        fate[policy] = [m.offer(0, 9194).delivered for _ in range(700)]
    assert not any(fate["none"][100:])
    assert 0.10 < fate["epd"][100:].count(False) / 600 <= 1 / 7


def test_config_round_trips_through_json():
    cfg = LinkConfig(
        DirectionConfig(rate_bps=1, switch=SwitchConfig(10, "epd", 5), gilbert=GilbertConfig(0.1, 0.2),
                        bursts=BurstLossConfig(12, 600, warmup=100, count=3, lose_first_repair=True),
                        slot_pool=SlotPoolConfig(4, 2000, 10), pmtu=1500, pmtu_mode="icmp", seed=9),
        DirectionConfig(delay_ns=7),
    )
    assert LinkConfig.from_json(cfg.to_json()) == cfg


@pytest.mark.parametrize("bad", [dict(loss=1.5), dict(rate_bps=-1), dict(pmtu_mode="fragment"),
                                 dict(switch=SwitchConfig(10))])
def test_bad_config_is_rejected_with_a_reason(bad):
    with pytest.raises(ValueError):
        DirectionConfig(**bad)


def test_frag_needed_quotes_the_offending_packet_and_carries_the_mtu():
    tcp = dpkt.tcp.TCP(sport=40000, dport=5001, seq=123456, flags=dpkt.tcp.TH_ACK, data=b"x" * 8948)
    ip = dpkt.ip.IP(src=bytes([10, 77, 0, 1]), dst=bytes([10, 77, 0, 2]), p=6, data=tcp)
    ip.len = len(ip)
    frame = bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, data=ip, type=0x0800))
    reply = dpkt.ethernet.Ethernet(frag_needed(frame, 1500, router_mac=b"\x04" * 6))
    assert reply.dst == b"\x02" * 6
    rip = reply.data
    assert rip.src == ROUTER_IP and rip.dst == ip.src
    icmp = rip.data
    assert (icmp.type, icmp.code, icmp.data.mtu) == (3, 4, 1500)
    quoted = bytes(icmp.data)[4:]  # after the unused/next-hop-MTU word: IP header + 8 bytes
    assert len(quoted) == 28 and quoted[12:16] == ip.src
    assert int.from_bytes(quoted[24:28], "big") == 123456
    # Checksums as a receiving kernel would verify them.
    raw = bytes(rip)
    assert dpkt.in_cksum(raw[:20]) == 0 and dpkt.in_cksum(raw[20:]) == 0


def test_frag_needed_ignores_non_ip_frames():
    arp = bytes(dpkt.ethernet.Ethernet(type=0x0806, data=b"\x00" * 28))
    assert frag_needed(arp, 1500, b"\x00" * 6) is None


def _loss_after_idle(rate_bps: int, idle_ns: int) -> float:
    """Fraction of lone frames lost right after a loss followed by `idle_ns` of silence."""
    m = DirectionModel(DirectionConfig(rate_bps=rate_bps, gilbert=GilbertConfig(p_gb=0.01, p_bg=0.1), seed=5))
    t, trials, lost = 0, 0, 0
    while trials < 300:
        t += 200_000
        if not m.offer(t, FRAME).delivered:  # in a bad spell now
            t += idle_ns
            trials += 1
            lost += not m.offer(t, FRAME).delivered
    return lost / trials


def test_gilbert_bad_spells_last_in_time_on_a_rate_limited_link():
    # Per-frame chain (no rate): the frame after a loss is lost ~90 % of the time however long the gap.
    assert _loss_after_idle(0, 200_000_000) > 0.8
    # Rate-limited: 200 ms of silence is thousands of frame times, the spell is over.
    assert _loss_after_idle(20_000_000, 200_000_000) < 0.2
