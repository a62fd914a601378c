"""The peer-ACK passes read once for all connections (peer_acks.every_second_shares and
ack_delays) give each connection what its own rows alone give: nothing leaks from one
connection or direction into another (a diff or a fill across them would)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from stallscope.analyzers import peer_acks
from stallscope.analyzers.analyze import analyze_one
from stallscope.analyzers.vantage import timings as vantage_timings

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("name", ["ndpi_6in4_tunnel.pcap", "linux_four_flows_shared_tbf.receiver.pcap",
                                  "ndpi_netflix_three_connections.pcap"])
def test_each_connection_alone_gives_the_same(name: str) -> None:
    """nDPI's 6in4 capture has super-frames in some of its five connections (the share's second
    branch); the shared token bucket's five flows and Netflix's three connections interleave."""
    state = analyze_one(DATA / name).core_state
    streams = state["stream"].unique().sort().to_list()
    assert len(streams) >= 3
    times = vantage_timings(state, {}, frozenset())
    shares, delays = peer_acks.every_second_shares(state), peer_acks.split_delays(peer_acks.ack_delays(state, times))
    assert shares and delays
    for s in streams:
        alone = state.filter(pl.col("stream") == s)
        assert peer_acks.every_second_shares(alone) == {k: v for k, v in shares.items() if k[0] == s}
        mine = peer_acks.split_delays(peer_acks.ack_delays(alone, times))
        assert mine.keys() == {k for k in delays if k[0] == s}
        assert all(mine[k].to_list() == delays[k].to_list() for k in mine)


def test_advances_of_one_connection_are_its_own() -> None:
    """Two interleaved connections whose senders both sent super-frames: the first's receiver ACKs
    two full segments at a time (every second wire segment of a super-frame), the second's one
    byte at a time. Read across both, the second's ACK numbers would advance by the first's."""
    rows = []
    for i in range(3):
        rows.append({"stream": 0, "dir": 1, "payload_len": 0, "superframe": False, "ack_segments": 1,
                     "ack_rel": 1 + (i + 1) * 2896})
        rows.append({"stream": 1, "dir": 1, "payload_len": 0, "superframe": False, "ack_segments": 1,
                     "ack_rel": 10_001 + i})
    for s in (0, 1):
        rows.append({"stream": s, "dir": 0, "payload_len": 2896, "superframe": True, "ack_segments": None,
                     "ack_rel": 1})
        rows.append({"stream": s, "dir": 0, "payload_len": 1448, "superframe": False, "ack_segments": None,
                     "ack_rel": 1})
    state = pl.DataFrame(rows, schema={"stream": pl.UInt32, "dir": pl.UInt8, "payload_len": pl.UInt32,
                                       "superframe": pl.Boolean, "ack_segments": pl.UInt32, "ack_rel": pl.Int64})
    assert peer_acks.every_second_shares(state) == {(0, 1): 1.0, (1, 1): 0.0}


@pytest.mark.parametrize("name", ["ndpi_netflix_three_connections.pcap", "linux_four_flows_shared_tbf.receiver.pcap"])
def test_delay_summaries_read_together_are_each_directions_own(name: str) -> None:
    """The delayed-ACK summaries (count, held ACKs, their median, nearest-rank 10th and 90th
    percentiles, maximum) read in one group-by over all connections equal those of each direction's
    own delays, computed here with Series operations."""
    state = analyze_one(DATA / name).core_state
    times = vantage_timings(state, {}, frozenset())
    table = peer_acks.ack_delays(state, times)
    summaries = peer_acks.delay_summaries(table)
    delays = peer_acks.split_delays(table)
    assert summaries.keys() == delays.keys() and any(v[1] for v in summaries.values())
    for k, series in delays.items():
        held = series.filter(series >= peer_acks.DELAYED_MIN_NS)
        own = (series.len(), held.len(), *((int(held.median()), int(held.quantile(0.1)), int(held.quantile(0.9)),
                                             int(held.max())) if held.len() else (None,) * 4))
        # The quick ACKs at the start: single-segment ACKs sent at once before the first timer hold.
        rows = table.filter((pl.col("stream") == k[0]) & (pl.col("dir") == k[1])).iter_rows(named=True)
        quick = 0
        for r in rows:
            if r["ack_delay_ns"] >= peer_acks.ONE_SHOT_MIN_NS:
                break
            quick += r["ack_segments"] == 1 and r["ack_delay_ns"] < peer_acks.DELAYED_MIN_NS
        else:
            quick = 0  # no ACK held: none were quick ones
        assert summaries[k] == (*own, quick), k
