"""SerialLink and Tap: serialisation time, propagation, byte-bounded tail drop, FIFO, drop callback."""

import dataclasses

import pytest

from stallscope.simulate.engine import Simulator
from stallscope.simulate.links.serial import SerialLink, serialisation_ns
from stallscope.simulate.links.tap import Tap
from stallscope.simulate.segment import ACK, Segment


def seg(uid: int, payload: int = 960) -> Segment:
    # 40 header bytes + payload: 1000-byte datagrams by default.
    return Segment("a", "b", 1, 2, seq=uid * payload, ack=0, flags=ACK, window=65535,
                   payload_len=payload, uid=uid)


def test_serialisation_is_exact_ceiling():
    assert serialisation_ns(1000, 8_000_000) == 1_000_000  # 8000 bits at 8 Mbit/s = 1 ms
    assert serialisation_ns(1, 3) == 2_666_666_667  # 8/3 s rounded up


def test_arrival_is_serialisation_plus_delay_and_back_to_back_packets_queue():
    sim = Simulator()
    tap = Tap("rx")
    link = SerialLink(sim, rate_bps=8_000_000, delay_ns=5_000_000, mtu=1500, queue_bytes=None, sink=tap)
    sim.schedule(0, lambda now: [link.receive(now, seg(i)) for i in range(3)])
    sim.run()
    # each 1000-byte datagram takes 1 ms on the wire; the second waits for the first.
    assert [t for t, _ in tap.records] == [6_000_000, 7_000_000, 8_000_000]
    assert [s.uid for _, s in tap.records] == [0, 1, 2]


def test_framing_overhead_adds_to_wire_time():
    sim = Simulator()
    tap = Tap("rx")
    link = SerialLink(sim, 8_000_000, 0, 1500, None, sink=tap, wire_bytes=lambda n: n + 38)
    link.receive(0, seg(0))
    sim.run()
    assert tap.records[0][0] == 1_038_000


def test_tail_drop_when_queue_bytes_exceeded_and_callback_named():
    sim = Simulator()
    tap = Tap("rx")
    dropped = []
    link = SerialLink(sim, 8_000_000, 0, 1500, queue_bytes=2500, sink=tap,
                      on_drop=lambda now, s, why: dropped.append((now, s.uid, why)))
    for i in range(4):
        link.receive(0, seg(i))
    # 1000 + 1000 fit in 2500 bytes, the third and fourth do not
    assert dropped == [(0, 2, "queue_overflow"), (0, 3, "queue_overflow")]
    # once the first has left (1 ms) there is room again
    link.receive(1_000_000, seg(4))
    sim.run()
    assert [s.uid for _, s in tap.records] == [0, 1, 4]
    assert link.drops == [(0, 2, "queue_overflow"), (0, 3, "queue_overflow")]
    assert link.sent_packets == 3


def test_oversize_datagram_is_dropped_with_reason():
    sim = Simulator()
    reasons = []
    link = SerialLink(sim, 10**9, 0, mtu=576, queue_bytes=None, sink=Tap("rx"),
                      on_drop=lambda now, s, why: reasons.append(why))
    link.receive(0, seg(1, payload=1000))
    assert reasons == ["exceeds_mtu"]


def test_tap_records_the_frozen_segment_and_forwards():
    inner = Tap("inner")
    outer = Tap("outer", sink=inner)
    s = seg(7)
    outer.receive(3, s)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.tags = ("mutated",)  # history cannot be rewritten, so the record may share the object
    assert outer.records == [(3, s)] and inner.records == [(3, s)] and s.tags == ()


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="rate_bps"):
        SerialLink(Simulator(), 0, 0, 1500, None)


def test_delivery_without_sink_names_the_link():
    sim = Simulator()
    link = SerialLink(sim, 10**9, 0, 1500, None, name="fwd")
    link.receive(0, seg(1))
    with pytest.raises(RuntimeError, match="fwd"):
        sim.run()
