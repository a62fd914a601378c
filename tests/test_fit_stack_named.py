"""The stack the segments name, held through the calibration, and the stacks they leave searched
each from its own start (issue 13's personality fit, docs/comparison.md "How good the fit is"), on
scoring-corpus traces whose true stack the calibration lost."""

from __future__ import annotations

import pytest

from stallscope.analyzers.comparison.validate import validate_trace
from stallscope.analyzers.corpus import plan, run_trace
from stallscope.analyzers.corpus_holdout import plan as holdout_plan

TRACES = ("nagle-bsd44-fddi-MSMV", "moldeklev-S16384-R16384-nagleoff", "idle-sunos41-think30ms")


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



def test_a_stack_picked_by_order_does_not_choose_the_link(rows):
    """SunOS 4.1 writing 16 KB every 30 ms over 10 Mbit/s Ethernet: the first flight leaves SunOS
    and Linux 2.0, and nothing in the segments names one. Searched from Linux 2.0 alone, its runs
    stalled on every link but a gigabit one behind a Sun IPX's copies, whose ACK counts then kept
    Linux 2.0 (and its 333 ms timer); searched from SunOS too, the Ethernet run's 176 ACKs match
    the trace's 177 and SunOS wins, with the BSD 200 ms tick."""
    r = rows["idle-sunos41-think30ms"]
    assert r["personality"] == "sunos41", r["personality_source"]
    assert r["delack_ok"] and r["goodput_ok"], (r["delack_ns"], r["goodput_ratio"])


def test_the_closest_search_wins_even_on_the_first_estimates_stack(tmp_path):
    """Linux 2.0 writing 6000-byte messages, each answered with 1460 bytes, over 10 Mbit/s
    Ethernet (a holdout-corpus trace): searched from Linux 2.0, the groups settled far off (0.28: a
    4.1 Mbit/s link, 4 KB writes, 160-byte reads; goodput 0.76); searched from SunOS they came
    back to Linux 2.0 on Fast Ethernet with the 6000-byte messages, 0.001 from the trace. The
    search that ends closest wins, whichever stack it ends on."""
    spec = {s.name: s for s in holdout_plan()}["reqresp-linux20-ethernet10-w6000-r1460"]
    run_trace(spec, tmp_path)
    r = validate_trace(str(tmp_path / f"{spec.name}.pcap"))
    assert r["personality"] == "linux20" and r["fit_write"] == 6000, (r["personality"], r["fit_write"])
    assert r["goodput_ok"], r["goodput_ratio"]
