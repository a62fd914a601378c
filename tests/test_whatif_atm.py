"""Path mechanisms in the comparison's fit (issue 13): where the path is IP over ATM and the trace
lost data, the fit models the switch port (buffer in cells, discard policy, cell rate) in place of
replaying the losses, so the `epd` and `ppd` what-ifs have a mechanism to change; likewise a NIC
short of jumbo receive slots (`jumbo_slots`) and a route MTU under the MSS both ends offered
(`correct_mss`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallscope.analyzers.analyze import analyze_one
from stallscope.analyzers.comparison import compare_file
from stallscope.analyzers.comparison.fit import Fitted
from stallscope.analyzers.comparison.whatif import plan
from stallscope.simulate.links.presets import AtmSwitchSpec
from stallscope.simulate.run_bulk import BulkConfig, run_bulk

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_epd_what_if_on_atm_small_buffer_predicts_the_epd_capture():
    """Issue 13's real pair: fixtures/atm_small_buffer (real Linux through the link emulator's ATM
    switch port, 600 cells, no discard policy, SACK off) with early packet discard predicts the
    goodput of fixtures/atm_epd (the same path and port with EPD) within 30 %. The measured
    goodput is read from analysing atm_epd.pcap."""
    ref = compare_file(analyze_one(FIXTURES / "atm_small_buffer.pcap"), what_if="epd", jobs=1)[0]
    port = ref.fit.value("atm_switch")
    assert port is not None and port["policy"] == "none", ref.fit.to_json()["values"].get("atm_switch")
    assert "in place of the trace's replayed losses" in ref.fit.values["atm_switch"].source
    (epd,) = ref.what_ifs
    assert epd.name == "epd" and epd.error is None and epd.changes["atm_switch"]["policy"] == "epd"
    measured = analyze_one(FIXTURES / "atm_epd.pcap").connections[0].data_direction.goodput_bps
    assert abs(epd.goodput_bps / measured - 1) <= 0.30, (epd.goodput_bps, measured)


def test_epd_and_ppd_are_offered_only_on_a_fitted_atm_port():
    """The switch what-ifs follow the loss timeouts only where a port was fitted: burst_loss
    (10 Mbit/s Ethernet-sized path, scheduled bursts) keeps its replayed losses and is offered SACK,
    not a discard policy."""
    ref = compare_file(analyze_one(FIXTURES / "burst_loss.pcap"), what_if="", jobs=1)[0]
    assert ref.fit.value("atm_switch") is None
    names = [n for n, _, _ in plan(ref.fit, {"burst_loss_timeout"}, None)]
    assert "sack" in names and "epd" not in names and "ppd" not in names


@pytest.mark.parametrize("policy", ["none", "ppd"])
def test_the_port_fit_finds_the_policy_and_the_buffer_of_a_simulated_atm_trace(tmp_path, policy):
    """A simulated Linux transfer (SACK off) through an ATM switch port of 1200 cells (OC-3 access
    link, cells out at 135 Mbit/s): the fit names the port's discard policy and its buffer within a
    factor of 4 (the truth is the simulator's configuration, not read by the fit)."""
    cells = 1200
    pcap = tmp_path / f"atm_{policy}.pcap"
    truth = run_bulk(BulkConfig(personality="linux", link="oc3", rate_bps=155_520_000, delay_ns=1_000_000, mtu=9180,
                                sndbuf=262144, rcvbuf=262144, write=65536, read=65536, bytes=4_000_000, sack=False),
                     pcap, impairments={"atm_switch": AtmSwitchSpec(cells * 48, 135_000_000, policy)})
    assert truth.timeouts >= 1  # the port lost data: there is something to fit
    ref = compare_file(analyze_one(pcap), what_if="", jobs=1)[0]
    port = ref.fit.value("atm_switch")
    assert port is not None, ref.fit.to_json()["values"].get("impairments", {}).get("source")
    assert port["policy"] == policy
    assert cells / 4 <= port["buffer_cells"] <= cells * 4
    assert abs(ref.comparison.goodput_ratio - 1) <= 0.25


def test_a_nic_short_of_jumbo_slots_is_fitted_and_more_slots_predicted(tmp_path):
    """Size-selective loss (Shalunov's GigaTCP): a simulated Linux transfer of 9000-byte frames into
    a NIC with 64 jumbo receive slots, each back 10 ms after use, SACK off. Every resent segment is
    a jumbo frame, so the fit tries a slot pool in place of the replayed losses and finds its size
    within 2x and its timer release; `jumbo_slots` predicts the transfer without the slots' losses."""
    pcap = tmp_path / "jumbo.pcap"
    truth = run_bulk(BulkConfig(personality="linux", link="gige", mtu=9000, sndbuf=1 << 20, rcvbuf=1 << 20, write=65536,
                                read=65536, bytes=4_000_000, sack=False), pcap,
                     impairments={"jumbo_slots": 64, "jumbo_hold_until_acked": False, "jumbo_replenish_ns": 10_000_000})
    assert truth.timeouts >= 1
    ref = compare_file(analyze_one(pcap), what_if="jumbo_slots", jobs=1)[0]
    nic = ref.fit.value("jumbo_nic")
    assert nic is not None and 32 <= nic["slots"] <= 128 and nic["hold_until_acked"] is False
    assert "jumbo frames" in ref.fit.values["jumbo_nic"].source
    assert abs(ref.comparison.goodput_ratio - 1) <= 0.25
    (more,) = ref.what_ifs
    assert more.changes["jumbo_nic"]["slots"] > nic["slots"]
    assert more.gain > 5 and not more.time_lost_ns.get("jumbo_slot_exhaustion")


def test_an_advertised_but_unused_mss_is_the_route_mtu_and_correct_mss_lifts_it():
    """GigaTCP's advertised-vs-used MSS: fixtures/mss_mismatch (both SYNs offer 8960, the sender's
    route is locked at MTU 1500). The fit runs the reference with that route MTU, so it sends the
    trace's 1448-byte segments; `correct_mss` takes the route's limit away."""
    from stallscope.analyzers.comparison import run_reference

    ref = compare_file(analyze_one(FIXTURES / "mss_mismatch.pcap"), what_if="correct_mss", jobs=1)[0]
    assert ref.fit.value("route_mtu") == 1500 and ref.fit.value("mtu") == 9000
    run = run_reference(ref.fit)
    assert run.summary["maxseg"] == 1448
    (correct,) = ref.what_ifs
    assert correct.changes == {"route_mtu": None} and correct.error is None
    assert run_reference(ref.fit, correct.changes).summary["maxseg"] == 8948


def test_the_epd_what_if_runs_on_ports_of_two_pdus_with_linuxs_autotuned_send_buffer():
    """atm_small_buffer's fitted S is only a floor (the flight its own losses allowed, 420 KB; the
    EPD capture's flight reached 1.3 MB): the `epd` what-if runs with Linux's autotuning ceiling
    (tcp_wmem[2], 4 MB: 2 MB asked for). Its ensemble keeps no alternative port that cannot hold a
    PDU and another behind it: on the 192-cell one EPD's threshold is 0 and it refused every PDU
    that found a cell queued (0.8 Mbit/s, 166 timeouts), and the median of two fell on it."""
    from stallscope.analyzers.comparison.whatif import LINUX_WMEM_MAX
    from stallscope.simulate.links.atm import aal5_cells

    ref = compare_file(analyze_one(FIXTURES / "atm_small_buffer.pcap"), what_if="epd", jobs=1)[0]
    assert ref.fit.value("sndbuf_range")["claims_value"] is False
    pdu = aal5_cells(ref.fit.value("mtu"))
    for alt in ref.fit.value("_ensemble") or []:
        assert alt["atm_switch"]["buffer_cells"] >= 2 * pdu, alt
    (epd,) = ref.what_ifs
    assert epd.changes["sndbuf"] == LINUX_WMEM_MAX // 2 > ref.fit.value("sndbuf")
    for alt in epd.changes.get("ensemble") or []:
        assert alt["atm_switch"]["policy"] == "epd"


def test_no_autotuned_send_buffer_where_the_stack_does_not_autotune_or_s_was_measured():
    """The send buffer stays as fitted for a stack without autotuning (sunos41) and where the fit
    claims S (the runs told other buffers apart)."""
    from stallscope.analyzers.comparison.whatif import _autotuned_sndbuf

    ref = compare_file(analyze_one(FIXTURES / "atm_small_buffer.pcap"), what_if="", jobs=1)[0]
    assert _autotuned_sndbuf(ref.fit)
    assert _autotuned_sndbuf(ref.fit.with_values({"personality": Fitted("sunos41", "test")})) == {}
    claimed = {**ref.fit.value("sndbuf_range"), "claims_value": True}
    assert _autotuned_sndbuf(ref.fit.with_values({"sndbuf_range": Fitted(claimed, "test")})) == {}
