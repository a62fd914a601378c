"""AAL5 cell counts and the cell switch buffer under no discard, PPD and EPD (hand-worked cases:
output 1 cell per 1000 ns, input twice as fast, so cell i of a PDU arrives at 500 * (i + 1) ns)."""

import pytest

from stallscope.simulate.links.atm import (
    CellSwitchBuffer,
    aal5_cells,
    aal5_wire_bytes,
    cell_time_ns,
)

OUT = 424_000_000  # 53 * 8 bits per 1000 ns
IN = 2 * OUT


def test_aal5_cell_counts_match_the_notes():
    assert aal5_cells(9180) == 192 and aal5_wire_bytes(9180) == 10176
    assert aal5_cells(32) == 1  # 32 + 16 fills exactly one cell payload
    assert aal5_cells(33) == 2
    assert aal5_cells(32, llc_snap=False) == 1 and aal5_cells(41, llc_snap=False) == 2
    with pytest.raises(ValueError):
        aal5_cells(0)


def test_cell_time():
    assert cell_time_ns(OUT) == 1000
    assert cell_time_ns(149_760_000) == 2832  # 424 bits at the OC-3 cell rate, rounded up


def test_pdu_that_fits_is_delivered_after_its_last_cell_leaves():
    buf = CellSwitchBuffer(100, OUT, "none")
    fate = buf.offer_pdu(0, 10, IN)
    assert fate.delivered and fate.cells_dropped == 0 and fate.cells_queued == 10
    # first cell arrives at 500 and leaves at 1500; the port stays busy for 9 more cells
    assert fate.last_cell_departure_ns == 10_500 and fate.reason is None
    assert buf.occupancy(10_000) == 1 and buf.occupancy(10_500) == 0


def test_no_discard_drops_scattered_cells_and_keeps_the_rest():
    buf = CellSwitchBuffer(3, OUT, "none")
    fate = buf.offer_pdu(0, 10, IN)
    # occupancy at arrivals: 0,1,1,2,2,3(drop),2,3(drop),2,3(drop)
    assert (fate.delivered, fate.cells_dropped, fate.cells_queued) == (False, 3, 7)
    assert fate.last_cell_departure_ns == 7_500 and fate.reason == "atm_cell_loss"


def test_ppd_drops_the_tail_but_keeps_the_end_of_pdu_cell():
    buf = CellSwitchBuffer(3, OUT, "ppd")
    fate = buf.offer_pdu(0, 10, IN)
    # cell 5 is the first lost; 6, 7, 8 follow it; cell 9 (end of PDU) finds room
    assert (fate.delivered, fate.cells_dropped, fate.cells_queued) == (False, 4, 6)
    assert fate.last_cell_departure_ns == 6_500 and fate.reason == "atm_ppd"
    assert buf.cells_dropped == 4 and buf.pdus_lost == 1


def test_epd_refuses_a_whole_pdu_arriving_at_a_busy_queue():
    buf = CellSwitchBuffer(12, OUT, "epd", epd_threshold_cells=2)
    first = buf.offer_pdu(0, 10, IN)
    assert first.delivered
    second = buf.offer_pdu(5_000, 4, IN)
    assert (second.delivered, second.cells_dropped, second.cells_queued) == (False, 4, 0)
    assert second.reason == "atm_epd" and second.last_cell_departure_ns == -1
    # refused cells took no buffer: the queue drains exactly as before
    assert buf.occupancy(10_499) == 1 and buf.occupancy(10_500) == 0


def test_epd_default_threshold_is_room_for_the_whole_pdu():
    buf = CellSwitchBuffer(20, OUT, "epd")
    assert buf.offer_pdu(0, 10, IN).delivered  # leaves about 5 cells queued at t=5000
    assert not buf.offer_pdu(5_000, 16, IN).delivered  # 5 > 20 - 16
    late = CellSwitchBuffer(20, OUT, "epd")
    late.offer_pdu(0, 10, IN)
    assert late.offer_pdu(10_500, 16, IN).delivered  # queue empty again


def test_window_one_packet_too_large_damages_two_pdus_unless_epd():
    """Kung & Morris's artificial graph: input three times the output, 12-cell packets sent one
    output-packet-time apart, an extra packet at 2.333; a 14-cell buffer. Without discard (and
    with PPD) the extra packet's surviving cells make the next one overflow too; EPD refuses the
    extra packet whole and the next one passes."""
    times = (0, 12_000, 24_000, 28_000, 36_000, 48_000, 60_000)

    def damaged(policy):
        buf = CellSwitchBuffer(14, OUT, policy)
        return [i for i, t in enumerate(times) if not buf.offer_pdu(t, 12, 3 * OUT).delivered]

    assert damaged("none") == [3, 4]
    assert damaged("ppd") == [3, 4]
    assert damaged("epd") == [3]


def test_bad_arguments():
    with pytest.raises(ValueError, match="policy"):
        CellSwitchBuffer(10, OUT, "red")
    with pytest.raises(ValueError):
        CellSwitchBuffer(0, OUT)
    with pytest.raises(ValueError):
        CellSwitchBuffer(10, OUT).offer_pdu(0, 0, IN)


def test_fast_path_matches_the_cell_by_cell_chain():
    """The closed-form departure of a PDU that fits equals the per-cell recurrence."""
    import random

    rng = random.Random(11)
    for _ in range(300):
        out = rng.choice([51_000_000, 149_760_000, 424_000_000, 140_000_000])
        inp = rng.choice([out // 3, out, 2 * out, 149_760_000, 622_080_000])
        buf = CellSwitchBuffer(100_000, out, "none")
        t, d = 0, 0
        for _ in range(5):
            t += rng.randrange(0, 3_000_000)
            n = rng.randrange(1, 200)
            for i in range(n):  # the reference recurrence
                a = t + -(-((i + 1) * 424 * 10**9) // inp)
                d = max(a, d) + buf.out_cell_ns
            assert buf.offer_pdu(t, n, inp).last_cell_departure_ns == d
