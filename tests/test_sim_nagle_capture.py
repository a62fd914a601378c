"""The Nagle / delayed-ACK stall of modern Linux, simulated response by response against our own
captures of it and of its controls (fixtures/nagle_4k_jumbo*, nagle_128k_buffer: request/response
over a 9000-byte MTU, 1 ms each way, responses of random length).

The real kernel held the rest of every response between 4915 and 12771 bytes for about 45 ms and
sent every response from 13508 bytes up at once: its first 4096-byte write leaves alone, the next
write's short data waits behind it (Linux's Minshall test), and the client's delayed ACK comes at
once only when more than one full 8948-byte frame is unacknowledged, so from 4096 + 8948 bytes on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stallscope.simulate.apps import naglemark as nm

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "nagle_4k_jumbo.json"
STALL_NS = 30_000_000


def _capture(name: str = "nagle_4k_jumbo"):
    truth = json.loads((FIXTURE.parent / f"{name}.json").read_text())
    link = truth["parameters"]["link"]["forward"]
    return truth, link["delay_ns"], truth["parameters"]["sender_mtu"]


def _simulate(real, *, variant: str, app_buf: int, trial: str, delay_ns: int, mtu: int):
    # The rig's emulator forwards without a rate limit; 10 Gbit/s stands in for the veth pair.
    result = nm.run_trial(personality="linux", link="gige", variant=variant, sockbuf=65536, app_buf=app_buf,
                          trial=trial, lengths=[length for length, _ in real], seed=0, rate_bps=10_000_000_000,
                          delay_ns=delay_ns, mtu=mtu)
    return [(s.length, s.elapsed_ns) for s in result.samples]


def test_linux_stalls_on_the_same_responses_as_the_captured_kernel():
    truth, delay_ns, mtu = _capture()
    real = truth["workload"]["client"]["response_times"]  # [length, elapsed ns] in the order sent
    assert truth["workload"]["client"]["responses"] == len(real) == 126
    assert (delay_ns, mtu, truth["parameters"]["workload_spec"]["app_buffer"]) == (1_000_000, 9000, 4096)
    sim = _simulate(real, variant="MINSHALL", app_buf=4096, trial="S", delay_ns=delay_ns, mtu=mtu)
    assert [length for length, _ in sim] == [length for length, _ in real]
    real_stalled = {length for length, t in real if t > STALL_NS}
    sim_stalled = {length for length, t in sim if t > STALL_NS}
    assert sim_stalled == real_stalled
    assert min(real_stalled) == 4915 and max(real_stalled) == 12771 < 4096 + 8948
    # Each stall lasts the delayed-ACK timeout: 40 ms (tcp_delack_min) plus the round trips.
    for (length, t_sim), (_, t_real) in zip(sim, real):
        if length in real_stalled:
            assert 40_000_000 <= t_sim <= t_real <= 60_000_000


@pytest.mark.parametrize(
    "name, variant, nodelay, app_buf, per_request",
    [
        ("nagle_4k_jumbo_nodelay", "OFF", True, 4096, False),  # TCP_NODELAY
        ("nagle_128k_buffer", "MINSHALL", False, 131072, False),  # each response in one write
        # A fresh connection per request: the client is still in quick-ACK mode.
        ("nagle_4k_jumbo_per_request", "MINSHALL", False, 4096, True),
    ],
)
def test_the_controls_do_not_stall_in_the_capture_or_the_simulator(name, variant, nodelay, app_buf, per_request):
    truth, delay_ns, mtu = _capture(name)
    params = truth["parameters"]
    assert params["sender"]["socket"]["nodelay"] is nodelay
    assert params["workload_spec"]["app_buffer"] == app_buf
    assert params["workload_spec"]["per_request_connection"] is per_request
    real = truth["workload"]["client"]["response_times"]
    sim = _simulate(real, variant=variant, app_buf=app_buf, trial="s" if per_request else "S",
                    delay_ns=delay_ns, mtu=mtu)
    assert len(sim) == len(real) > 50
    assert [length for length, t in real if t > STALL_NS] == [length for length, t in sim if t > STALL_NS] == []
