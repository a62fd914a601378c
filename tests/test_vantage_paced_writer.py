"""vantage.paced_writers on hand-built sender-state rows: a writer on its own clock against a
sender that reacts to each ACK a round trip later (a receiver's tap), the ACKs' timing varied alike
in both. Only the first is paced; the second's lag is its round trip."""

from __future__ import annotations

import polars as pl

from stallscope.analyzers import vantage

MS = 1_000_000


def _rows(stream: int, data_times: list[int], ack_times: list[int]) -> list[dict]:
    """Data packets at `data_times`, each after the ACK at the same index (its reaction_ns)."""
    return [{"stream": stream, "dir": 0, "ts_ns": t, "new_data": True, "payload_len": 2000,
             "reaction_ns": t - a} for t, a in zip(data_times, ack_times)]


def _state() -> pl.DataFrame:
    delays = [int(0.2 * MS) if i < 8 else 40 * MS for i in range(30)]  # prompt ACKs, then the timer
    # Stream 0: a write every 300 ms; the ACK of each write comes after its delay.
    writes = [300 * MS * i for i in range(31)]
    paced = _rows(0, writes[1:], [w + d for w, d in zip(writes, delays)])
    # Stream 1: the tap beside the receiver; each segment arrives a round trip (100-115 ms, queues
    # varying) after the ACK of the last.
    data, acks, t = [], [], 0
    for i, d in enumerate(delays):
        acks.append(t + d)
        t = t + d + 100 * MS + (i % 4) * 5 * MS
        data.append(t)
    reacting = _rows(1, data, acks)
    return pl.DataFrame(paced + reacting, schema={"stream": pl.UInt32, "dir": pl.UInt8, "ts_ns": pl.Int64,
                                                  "new_data": pl.Boolean, "payload_len": pl.UInt32,
                                                  "reaction_ns": pl.Int64})


def test_only_the_writer_on_its_own_clock_is_paced() -> None:
    assert vantage.paced_writers(_state(), [0, 1]) == {(0, 0)}


def test_steady_acks_leave_the_two_alike() -> None:
    """With every ACK prompt nothing moves: a paced writer and a reacting sender look the same, and
    neither is called paced (the tap's place is left to other evidence)."""
    steady = _state().with_columns(pl.when(pl.col("stream") == 0).then(pl.lit(int(299.8 * MS)))
                                   .otherwise(pl.lit(100 * MS)).alias("reaction_ns"))
    assert vantage.paced_writers(steady, [0, 1]) == set()


def test_only_the_streams_asked_for() -> None:
    assert vantage.paced_writers(_state(), [1]) == set()
