"""The stack the segments name, held through the calibration (issue 13's personality fit,
docs/comparison.md "How good the fit is"): two scoring-corpus traces whose stack the first estimate
read right from the segments and the calibration then lost."""

from __future__ import annotations

import pytest

from stallscope.analyzers.comparison.validate import validate_trace
from stallscope.analyzers.corpus import plan, run_trace

TRACES = ("nagle-bsd44-fddi-MSMV", "moldeklev-S16384-R16384-nagleoff")


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("stacknamed")
    specs = {s.name: s for s in plan()}
    for name in TRACES:
        run_trace(specs[name], out)
    return {name: validate_trace(str(out / f"{name}.pcap")) for name in TRACES}


def test_a_cluster_rounded_mss_keeps_bsd44_where_its_own_nagle_rule_would_deadlock(rows):
    """4.4BSD with Mogul's MSMV: 4096-byte segments under the 4312 offered (tcp_mss's cluster
    rounding) and no stall. Run with its own classic rule 4.4BSD deadlocks its 2-segment window for
    a 200 ms tick (14 of the trace's 101 Mbit/s), SunOS does not (its 4096-byte copies): the stack
    is tried with Nagle off before another wins by its own rule."""
    r = rows["nagle-bsd44-fddi-MSMV"]
    assert r["personality"] == "bsd44", r["personality_source"]
    assert r["goodput_ok"], r["goodput_ratio"]


def test_sunos_copies_order_the_stacks_the_first_flight_leaves(rows):
    """SunOS 4.1 with Nagle off: 8192-byte segments (two 4096-byte copies) under a 9204 MSS read
    as 4.4BSD's cluster rounding, which the first flight (16 KB before the first ACK: no slow
    start) rules out; the 4096-byte short segments put SunOS ahead of Linux 2.0, which the runs
    cannot tell from it."""
    r = rows["moldeklev-S16384-R16384-nagleoff"]
    assert r["personality"] == "sunos41", r["personality_source"]
    assert r["goodput_ok"], r["goodput_ratio"]

