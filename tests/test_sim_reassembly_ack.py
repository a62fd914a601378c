"""The receiver's ACK for a segment that meets a non-empty reassembly queue goes at once, even
when it fills the last hole (4.4BSD TCP_REASS: tcp_reass and TF_ACKNOW unless the queue is empty;
Linux: ICSK_ACK_NOW once the out-of-order queue drains). Before, a repair that released less than
the window-update threshold waited for the delayed-ACK timer (up to a 200 ms tick on BSD)."""

from __future__ import annotations

import pytest

from stallscope.simulate.run_bulk import RECEIVER_ADDR, SENDER_ADDR, BulkConfig, run_bulk

MSS = 1460


@pytest.mark.parametrize("personality", ["sunos41", "bsd44", "tru64", "freebsd4", "linux20", "linux"])
def test_the_ack_for_a_repair_that_fills_the_last_hole_is_not_delayed(personality):
    # Twenty full segments and a 100-byte tail; the twentieth is lost, so the repair releases
    # 1560 bytes, less than the 2 * MSS that would trigger a window update on the read.
    cfg = BulkConfig(personality=personality, link="ethernet10", mss=MSS, sndbuf=65536, rcvbuf=65536,
                     bytes=20 * MSS + 100, write=65536, read=65536, sack=False)
    result = run_bulk(cfg, impairments={"drop_nth": (20,), "loss_data_only": True})
    assert result.completed
    sent = [(t, s) for t, s in result.records if s.src == SENDER_ADDR and s.payload_len]
    t_rexmit, hole = next((t, s) for t, s in sent if "retransmit" in s.tags)
    t_ack, ack = next((t, s) for t, s in result.records
                      if s.src == RECEIVER_ADDR and t > t_rexmit and s.ack > hole.seq)
    assert "delack_timer" not in ack.tags, f"ACK by the delayed-ACK timer {(t_ack - t_rexmit) / 1e6:.1f} ms later"
    assert t_ack - t_rexmit < 5_000_000  # the repair and its ACK: 2.6 ms of wire time, no timer
