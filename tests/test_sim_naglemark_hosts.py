"""naglemark on the simulated Tru64 hosts: the delays Mogul & Minshall §3 predict, and where they vanish."""

from __future__ import annotations

import pytest

from stallscope.simulate.apps import naglemark as nm
from stallscope.simulate.nagle import NagleVariant as V
from stallscope.simulate.native_core import naglemark_trial
from stallscope.simulate.units import NS_PER_MS


def run(variant, lengths, *, link="ethernet10", trial="S", app_buf=131072, sockbuf=131072, seed=0, think_ns=0):
    """{length: elapsed ns} of a trial, and the number of connections it opened."""
    res, raw = naglemark_trial(personality="tru64", link=link, variant=variant, sockbuf=sockbuf,
                               receiver_inference=False, seed=seed, trial=nm.TrialType(trial), app_buf=app_buf,
                               lengths=lengths, think_ns=think_ns)
    return {s.length: s.elapsed_ns for s in res.samples}, raw["connections"]


def test_messages_below_mclbytes_are_never_delayed_on_an_idle_connection():
    """Mogul §3: tcp_output tests idleness once per call and sosend calls it per MCLBYTES (8192),
    so a message shorter than MCLBYTES leaves in one call, short tail included."""
    lengths = [1460 * k + 100 for k in range(1, 5)]  # OF+SFS-shaped but < 8192
    elapsed, _ = run(V.NAGLE, lengths)
    for n in lengths:
        assert elapsed[n] < 10 * NS_PER_MS


@pytest.mark.parametrize(
    "variant, delayed",
    [(V.NAGLE, True), (V.MINSHALL, False), (V.MSMV, True), (V.E_M, True), (V.MIN_MORE, False), (V.BORMAN, True),
     (V.OFF, False), (V.DLDET, False)],
)
def test_a_torn_tail_waits_for_the_delayed_ack_tick_unless_dldet_or_nodelay_prevent_it(variant, delayed):
    """Mogul §3.1's Apache example: 4100 bytes written from a 4096-byte buffer go as (1460, 1460,
    1176) and the 4-byte rest waits for an ACK the receiver delays to its 200 ms tick (buffer
    tearing). MSMV holds it because the last packet was short (§5.2), E+M because each 4 KB write
    fits the buffer so MORE is never set (§5.4), BORMAN because the second write starts with data
    outstanding (§5.5); DLDET releases it when the server blocks (§5.6). tru64's MINSHALL (and
    MIN+MORE) sends it: the 1176-byte segment followed two full ones, so it was not sent alone on an
    idle connection (MINSHALL as Mogul's kernel measured it; Mogul table 4 has MINSHALL at
    0.3-1.1 % with 4 KB writes)."""
    elapsed, _ = run(variant, [4100], app_buf=4096)
    cutoff = nm.cutoff_ns(4100, 10_000_000)
    assert (elapsed[4100] > cutoff) is delayed
    if not delayed:
        assert elapsed[4100] < 15 * NS_PER_MS


@pytest.mark.parametrize("variant", [V.NAGLE, V.MINSHALL, V.MSMV, V.EOM])
def test_one_write_is_not_torn_at_its_clusters(variant):
    """9000 bytes in one write: sosend hands tcp_output an 8192-byte cluster first, but tru64 keeps
    the cluster's 892-byte tail back while the write has bytes to copy (write_more_hold), so the
    message goes as six full segments and a 240-byte tail, which the receiver's ACK of the sixth
    releases at once (Mogul §3.3: delayed only for an odd number of full segments)."""
    elapsed, _ = run(variant, [9000])
    assert elapsed[9000] < 15 * NS_PER_MS


def test_one_connection_per_request_opens_a_host_pair_each_and_keeps_the_tick_grid():
    elapsed, connections = run(V.NAGLE, [4100, 4200, 4300], trial="s", app_buf=4096)
    assert connections == 3
    # every connection's delayed ACK fires on the same 200 ms grid as the first host's
    assert all(nm.cutoff_ns(n, 10_000_000) < e <= 200 * NS_PER_MS + 15 * NS_PER_MS for n, e in elapsed.items())


def test_same_seed_same_samples_other_seed_other_phase():
    a, _ = run(V.NAGLE, [9000, 20000, 45000], seed=3)
    b, _ = run(V.NAGLE, [9000, 20000, 45000], seed=3)
    c, _ = run(V.NAGLE, [9000, 20000, 45000], seed=4)
    assert a == b and a != c


def test_unknown_link_is_rejected():
    with pytest.raises(KeyError, match="unknown link preset"):
        nm.run_trial(personality="tru64", link="token-ring", variant="NAGLE", sockbuf=1, app_buf=1, trial="S",
                     lengths=[100])


@pytest.mark.paper
@pytest.mark.parametrize("trial", ["s", "S"])
def test_receiver_inference_delays_msmv_on_the_papers_12289_byte_example(trial):
    """Mogul §9: FDDI, app_buf 4096, a 12289-byte message under MSMV. Without the inference the
    receiver ACKs the third packet at once; with it, it ACKs the full segment, delays the ACK of the
    short one, and the final 1-byte segment waits for the tick."""
    def elapsed(inference):
        res = nm.run_trial(personality="tru64", link="fddi", variant=V.MSMV, sockbuf=65536, app_buf=4096,
                           trial=trial, lengths=[12289], receiver_inference=inference, seed=0)
        return res.samples[0].elapsed_ns

    cutoff = nm.cutoff_ns(12289, 100_000_000)
    assert elapsed(False) < 5 * NS_PER_MS
    assert elapsed(True) > cutoff


@pytest.mark.parametrize("trial", ["S", "s"])
def test_the_clients_think_time_shortens_phase_locked_delays_by_itself(trial):
    """Mogul §3.2: consecutive delayed responses phase-lock to the client's 200 ms tick, so each
    waits from its request to the next tick. A think time between responses (outside the measured
    interval) moves the request later in the tick period: each phase-locked delay is that much
    shorter, while an undelayed response is not measured any longer."""
    delayed = [10400, 10500, 10600, 10700, 10800]  # 7 full segments and a short one: OF+SFS
    plain, _ = run(V.NAGLE, delayed, trial=trial)
    think, _ = run(V.NAGLE, delayed, trial=trial, think_ns=25 * NS_PER_MS)
    for n in delayed[1:]:
        assert 190 * NS_PER_MS < plain[n] <= 201 * NS_PER_MS, (n, plain[n])
        assert abs((plain[n] - think[n]) - 25 * NS_PER_MS) < 1 * NS_PER_MS, (n, plain[n], think[n])
    undelayed = [9000, 9100]  # six full segments and a short one: the receiver ACKs the sixth at once
    a, _ = run(V.NAGLE, undelayed, trial=trial)
    b, _ = run(V.NAGLE, undelayed, trial=trial, think_ns=25 * NS_PER_MS)
    assert a == b


def test_a_negative_think_time_is_refused():
    with pytest.raises(ValueError, match="think time"):
        run(V.NAGLE, [100], think_ns=-1)
