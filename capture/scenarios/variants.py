"""Variants of the scenario library: each scenario again with settings its fixture never used (round
trip, rate, buffer and write sizes, burst length, TCP timestamps or window scaling off, cubic for
reno), labelled with the base's causes. They check the analyzer on captures its rules were not
shaped on (docs/scoring.md, "Live variants"); each keeps its base's mechanism, so its label holds.

    sudo stallscope capture scenario nagle_4k_jumbo__rtt10 --out /tmp/variants
    sudo make rescore VARIANTS=1     # the library and every variant, captured and scored

Left out on purpose, with what they showed: Nagle behind a 50 ms round trip (the delayed ACK is
shorter than the round trip, so Linux's Minshall hold costs one round trip per response and makes
no stall), a 4 KB slow reader (its windows under one segment make sender_sws stalls besides the
zero windows), a 32 KB send buffer without window scaling (a 64 KB window at 1.3 times the flight
cannot show it had room), a clean unlimited path (Linux's 4 MB send-buffer cap binds or not as
the emulator keeps up), lost ACKs to the capture's end (nothing tells the data's loss from the
ACKs'), a 2 KB slow reader behind 40 ms (its window never closes: 28-40 ms gaps, under a round
trip, so no stall to label), 16 jumbo slots (enough: the NIC dropped nothing in 41,682 frames).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from stallscope.capture.emulator.config import DirectionConfig, LinkConfig, SlotPoolConfig
from stallscope.capture.knobs import HostKnobs, RouteKnobs, SocketKnobs
from stallscope.capture.scenarios.library import SCENARIOS
from stallscope.capture.scenarios.spec import Scenario

MS = 1_000_000


def _rtt(ms: float) -> Callable[[Scenario], dict]:
    """Both directions' one-way delay set to half of `ms`."""
    def change(s: Scenario) -> dict:
        half = int(ms * MS / 2)
        return {"link": LinkConfig(replace(s.link.forward, delay_ns=half), replace(s.link.reverse, delay_ns=half))}
    return change


def _spec(**kw) -> Callable[[Scenario], dict]:
    return lambda s: {"workload_spec": {**s.workload_spec, **kw}}


def _both(*changes: Callable[[Scenario], dict]) -> Callable[[Scenario], dict]:
    def change(s: Scenario) -> dict:
        out: dict = {}
        for c in changes:
            out.update(c(replace(s, **out)))
        return out
    return change


def _sysctls(**kw) -> Callable[[Scenario], dict]:
    """The same sysctls on both hosts."""
    return lambda s: {"sender": replace(s.sender, sysctls={**s.sender.sysctls, **kw}),
                      "receiver": replace(s.receiver, sysctls={**s.receiver.sysctls, **kw})}


def _sender_socket(**kw) -> Callable[[Scenario], dict]:
    return lambda s: {"sender": replace(s.sender, socket=replace(s.sender.socket, **kw))}


def _forward(**kw) -> Callable[[Scenario], dict]:
    return lambda s: {"link": LinkConfig(replace(s.link.forward, **kw), s.link.reverse)}


def _bursts(**kw) -> Callable[[Scenario], dict]:
    return lambda s: _forward(bursts=replace(s.link.forward.bursts, **kw))(s)


NO_TIMESTAMPS = _sysctls(tcp_timestamps=0)

# (base scenario, suffix, change): the variant is named BASE__SUFFIX.
_TABLE: list[tuple[str, str, Callable[[Scenario], dict]]] = [
    ("nagle_4k_jumbo", "rtt10", _both(_rtt(10), _spec(seed=11))),
    ("nagle_4k_jumbo", "writes2k", _spec(app_buffer=2048, seed=3)),
    ("nagle_4k_jumbo", "no_timestamps", NO_TIMESTAMPS),
    ("nagle_4k_jumbo_nodelay", "rtt10", _both(_rtt(10), _spec(seed=11))),
    ("nagle_4k_jumbo_nodelay", "rtt50", _both(_rtt(50), _spec(seed=21))),
    ("nagle_4k_jumbo_nodelay", "writes2k", _spec(app_buffer=2048, seed=5)),
    ("nagle_4k_jumbo_nodelay", "no_timestamps", NO_TIMESTAMPS),
    ("nagle_128k_buffer", "rtt10", _both(_rtt(10), _spec(seed=11))),
    ("nagle_128k_buffer", "rtt50", _rtt(50)),
    ("nagle_4k_jumbo_per_request", "rtt10", _rtt(10)),
    ("slow_reader", "reads1k_5ms", _spec(read_size=1024, read_think_us=5_000)),
    ("slow_reader", "reads8k_50ms_rcvbuf16k", lambda s: {
        "workload_spec": {"read_size": 8192, "read_think_us": 50_000},
        "receiver": replace(s.receiver, socket=SocketKnobs(rcvbuf=16 * 1024))}),
    ("slow_reader", "no_timestamps", NO_TIMESTAMPS),
    ("slow_reader", "no_window_scaling", _sysctls(tcp_window_scaling=0)),
    ("small_sndbuf_long_rtt", "sndbuf64k_rtt60", _both(_sender_socket(sndbuf=64 * 1024), _rtt(60))),
    ("small_sndbuf_long_rtt", "sndbuf16k_rtt40", _both(_sender_socket(sndbuf=16 * 1024), _rtt(40))),
    ("small_sndbuf_long_rtt", "sndbuf128k", _sender_socket(sndbuf=128 * 1024)),
    ("small_sndbuf_long_rtt", "no_timestamps", NO_TIMESTAMPS),
    ("burst_loss", "rtt10", _rtt(10)),
    ("burst_loss", "bursts6", _bursts(length=6)),
    ("burst_loss", "cubic", _sender_socket(congestion=None)),
    ("burst_loss", "no_timestamps", NO_TIMESTAMPS),
    ("burst_loss_sack", "rtt10", _rtt(10)),
    ("burst_loss_sack", "bursts6", _bursts(length=6)),
    ("burst_loss_sack", "cubic", _sender_socket(congestion=None)),
    ("burst_loss_sack", "no_timestamps", NO_TIMESTAMPS),
    ("ack_loss", "rtt6", _rtt(6)),
    ("ack_loss", "no_timestamps", NO_TIMESTAMPS),
    ("atm_small_buffer", "rtt6", _rtt(6)),
    ("atm_small_buffer", "rtt20", _rtt(20)),
    ("atm_small_buffer", "no_timestamps", NO_TIMESTAMPS),
    ("atm_clean", "rtt6", _rtt(6)),
    ("atm_clean", "rtt20", _rtt(20)),
    ("atm_clean", "no_timestamps", NO_TIMESTAMPS),
    ("atm_epd", "rtt6", _rtt(6)),
    ("atm_ppd", "rtt6", _rtt(6)),
    ("jumbo_slots", "slots6", _forward(slot_pool=SlotPoolConfig(6, 2048, 1 * MS), delay_ns=2 * MS)),
    ("jumbo_slots", "rtt6", _rtt(6)),
    ("jumbo_slots", "no_timestamps", NO_TIMESTAMPS),
    ("pmtu_blackhole", "rtt10", _rtt(10)),
    ("pmtu_blackhole", "no_timestamps", NO_TIMESTAMPS),
    ("pmtu_blackhole_probing", "rtt10", _rtt(10)),
    ("pmtu_icmp", "rtt10", _rtt(10)),
    ("mss_mismatch", "route_mtu4000", lambda s: {"sender": replace(s.sender, route=RouteKnobs(mtu=4000, mtu_lock=True,
                                                                                              advmss=8960))}),
    ("mss_mismatch", "advmss4000", lambda s: {"sender": replace(s.sender, route=RouteKnobs(mtu=1500, mtu_lock=True,
                                                                                           advmss=4000))}),
    ("mss_mismatch", "no_timestamps", NO_TIMESTAMPS),
    ("idle_app", "rtt20", _rtt(20)),
    ("idle_app", "pause100_rtt8", _both(_spec(pause_ms=100), _rtt(8))),
    ("idle_app", "bursts16k_pause500_rtt40", _both(_spec(pause_ms=500, burst_bytes=16 * 1024), _rtt(40))),
    ("idle_app", "no_timestamps", NO_TIMESTAMPS),
    ("clean_bulk", "20mbit_rtt20", lambda s: {"link": LinkConfig(DirectionConfig(rate_bps=20_000_000, delay_ns=10 * MS),
                                                                 DirectionConfig(delay_ns=10 * MS))}),
    ("clean_bulk", "100mbit_rtt10", lambda s: {"link": LinkConfig(DirectionConfig(rate_bps=100_000_000, delay_ns=5 * MS),
                                                                  DirectionConfig(delay_ns=5 * MS))}),
    ("clean_bulk", "300mbit", _forward(rate_bps=300_000_000)),
    ("clean_bulk", "no_timestamps", NO_TIMESTAMPS),
    ("clean_bulk", "no_window_scaling", _sysctls(tcp_window_scaling=0)),
    ("nagle_4k_jumbo", "rtt4", _both(_rtt(4), _spec(seed=7))),
    ("nagle_4k_jumbo", "writes3k", _spec(app_buffer=3000, seed=9)),
    ("nagle_4k_jumbo_nodelay", "rtt4", _both(_rtt(4), _spec(seed=7))),
    ("slow_reader", "reads4k_20ms", _spec(read_size=4096, read_think_us=20_000)),
    ("small_sndbuf_long_rtt", "sndbuf48k_rtt80", _both(_sender_socket(sndbuf=48 * 1024), _rtt(80))),
    ("burst_loss", "rtt30", _rtt(30)),
    ("burst_loss", "bursts9", _bursts(length=9)),
    ("burst_loss_sack", "rtt30", _rtt(30)),
    ("ack_loss", "rtt12", _rtt(12)),
    ("idle_app", "pause200_rtt15", _both(_spec(pause_ms=200), _rtt(15))),
    ("clean_bulk", "10mbit_rtt30", lambda s: {"link": LinkConfig(DirectionConfig(rate_bps=10_000_000, delay_ns=15 * MS),
                                                                 DirectionConfig(delay_ns=15 * MS))}),
    ("atm_clean", "rtt12", _rtt(12)),
    ("pmtu_icmp", "rtt30", _rtt(30)),
    ("pmtu_blackhole", "rtt30", _rtt(30)),
    ("jumbo_slots", "slots10", _forward(slot_pool=SlotPoolConfig(10, 2048, 1 * MS), delay_ns=2 * MS)),
    ("mss_mismatch", "rtt20", _rtt(20)),
    ("nagle_4k_jumbo", "rtt1", _both(_rtt(1), _spec(seed=13))),
    ("nagle_4k_jumbo", "rtt20", _both(_rtt(20), _spec(seed=17))),
    ("nagle_128k_buffer", "rtt4", _rtt(4)),
    ("slow_reader", "reads512_2ms", _spec(read_size=512, read_think_us=2_000)),
    ("small_sndbuf_long_rtt", "sndbuf24k_rtt150", _both(_sender_socket(sndbuf=24 * 1024), _rtt(150))),
    ("burst_loss", "rtt60", _rtt(60)),
    ("ack_loss", "rtt30", _rtt(30)),
    ("atm_small_buffer", "rtt40", _rtt(40)),
    ("atm_epd", "rtt20", _rtt(20)),
    ("pmtu_blackhole_probing", "rtt30", _rtt(30)),
    ("clean_bulk", "5mbit_rtt80", lambda s: {"link": LinkConfig(DirectionConfig(rate_bps=5_000_000, delay_ns=40 * MS),
                                                                DirectionConfig(delay_ns=40 * MS))}),
    ("idle_app", "rtt60", _rtt(60)),
    ("nagle_4k_jumbo", "writes1k", _spec(app_buffer=1024, seed=19)),
    ("nagle_4k_jumbo", "no_sack", _sysctls(tcp_sack=0)),
    ("nagle_4k_jumbo_nodelay", "no_sack", _sysctls(tcp_sack=0)),
    ("nagle_128k_buffer", "no_timestamps", NO_TIMESTAMPS),
    ("nagle_4k_jumbo_per_request", "rtt4", _rtt(4)),
    ("nagle_4k_jumbo_per_request", "no_timestamps", NO_TIMESTAMPS),
    ("slow_reader", "reads16k_100ms", _spec(read_size=16384, read_think_us=100_000)),
    ("burst_loss", "bursts3", _bursts(length=3)),
    ("burst_loss_sack", "rtt60", _rtt(60)),
    ("ack_loss", "rtt60", _rtt(60)),
    ("atm_ppd", "rtt20", _rtt(20)),
    ("atm_epd", "no_timestamps", NO_TIMESTAMPS),
    ("atm_small_buffer", "rtt12", _rtt(12)),
    ("pmtu_icmp", "no_timestamps", NO_TIMESTAMPS),
    ("pmtu_blackhole_probing", "no_timestamps", NO_TIMESTAMPS),
    ("mss_mismatch", "rtt60", _rtt(60)),
    ("idle_app", "pause50_rtt2", _both(_spec(pause_ms=50), _rtt(2))),
    ("clean_bulk", "2mbit_rtt100", lambda s: {"link": LinkConfig(DirectionConfig(rate_bps=2_000_000, delay_ns=50 * MS),
                                                                 DirectionConfig(delay_ns=50 * MS))}),
    ("clean_bulk", "no_sack", _sysctls(tcp_sack=0)),
]


def _variants() -> dict[str, Scenario]:
    out = {}
    for base, suffix, change in _TABLE:
        s = SCENARIOS[base]
        name = f"{base}__{suffix}"
        out[name] = replace(s, name=name, description=f"{s.description} [variant: {suffix}]", **change(s))
    return out


VARIANTS: dict[str, Scenario] = _variants()

