"""Candidates for the link: its framing, rate and hosts, an ATM switch port, a receiving NIC short of
jumbo slots, a PMTU hop; and ensembles of the runs nearly as close as the chosen one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..fit import Fit
from ..fit.path import bottleneck_rates, one_way_delay, sustained_rates

# Framings a link may have: none (the IP datagrams alone), AAL5 cells, Ethernet (the presets'
# framings; the fitted rate is converted so the IP throughput stays what the trace showed).
FRAMINGS = ("custom", "atm140", "ethernet10", "fddi")


# Standard links tried at their own rate (simulate.links.presets).
NOMINAL_LINKS = ("ethernet10", "fastethernet", "fddi", "atm140", "gige")


# A standard link is tried at its own rate down to this share of the rate measured at the percentile.
NOMINAL_BELOW_MEASURED = 0.75


# The rate over a round trip is tried as a link where no framing's pair-based rate is within this share of it.
SUSTAINED_APART = 0.25


# ...and only where the flight's plateau held at least this many round trips of the path at that rate.
SUSTAINED_FLIGHTS = 2


# The simulator's host cost models (simulate.host_cost.COST_MODELS): none, and a 1990s workstation.
HOST_MODELS = ("free", "sun_ipx")


def framed_candidates(fit: Fit, rows: Any, chosen: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Per framing, the link with the rate and delay measured again in its wire bytes (with a
    switch port chosen, its access link stays: only the host models are tried)."""
    from stallscope.simulate.links.presets import LINK_PRESETS

    if (chosen or {}).get("atm_switch"):
        first = chosen.get("cost") or fit.value("cost") or HOST_MODELS[0]
        return [_hosted({"delay_ns": chosen.get("delay_ns")} if chosen.get("delay_ns") else {}, cost)
                for cost in (first, *(c for c in HOST_MODELS if c != first))]

    from ...stalls import gap_threshold_ns

    path = fit.value("_path") or {}
    pause = gap_threshold_ns(path.get("rtt"))  # a sender this long silent after an ACK paused
    # The ACK clock either keeps the link busy (the gap is the packets' serialisation) or, with a
    # window smaller than the path holds, leaves it idle a round trip per ACK: both are tried.
    idles = (0, path["rtt"]) if path.get("rtt") and path.get("vantage") not in ("receiver", "middle") else (0,)
    variants = [(link, idle) for link in FRAMINGS for idle in idles]
    rates = bottleneck_rates(rows, fit.dir, path.get("vantage"),
                             [(LINK_PRESETS[link].wire_bytes, idle) for link, idle in variants],
                             pause_ns=pause)
    links = []
    for (link, _idle), (rate, _) in zip(variants, rates):
        wire = LINK_PRESETS[link].wire_bytes
        cand: dict[str, Any] = {"link": link}
        if rate:
            cand["rate_bps"] = rate
            if path.get("rtt"):
                cand["delay_ns"] = one_way_delay(rows, path["rtt"], rate, wire, path.get("from") == "handshake",
                                                 fit.value("mtu"))
        links.append(cand)
    # The measured rate is a floor (waits spread packets out: a stop-and-wait transfer has few
    # back-to-back pairs, or none), so the fastest pair's rate is tried, and each standard link that
    # carries the trace's datagrams at its own rate where that is faster.
    percentile_rate = max((c.get("rate_bps") or 0 for c in links), default=0)
    (top, _), = bottleneck_rates(rows, fit.dir, path.get("vantage"), [(LINK_PRESETS["custom"].wire_bytes, 0)], 1.0,
                                 pause_ns=pause)
    if top and all(top > (c.get("rate_bps") or 0) for c in links):
        cand = {"link": "custom", "rate_bps": top}
        if path.get("rtt"):
            cand["delay_ns"] = one_way_delay(rows, path["rtt"], top, LINK_PRESETS["custom"].wire_bytes,
                                             path.get("from") == "handshake", fit.value("mtu"))
        links.append(cand)
    measured = max((c.get("rate_bps") or 0 for c in links), default=0)
    # And the rate the path carried the data at over a round trip (fit.path.sustained_rates), where the
    # pairs are far from it: at a Linux sender's tap each ACK covers a GSO burst and the ACKs bunch,
    # so the pairs' percentile says 4.2 Gbit/s and the window-limited variant 14 Mbit/s of a path
    # that moved 49 Mbit/s (clean_bulk), and no candidate ran at the path's rate.
    # At the sender's tap only: after the bottleneck consecutive data packets show its spacing
    # directly. And only where the flight held several round trips' worth of the path at that rate
    # (the link was busy): under a window that held the flight, the same rate is the window's, not
    # a link's (tried on the middle-tap corpus, a custom link at the window's rate took Moldeklev's
    # R = 8 KB traces from SunOS to Linux 2.0).
    if path.get("rtt") and path.get("flight") and path.get("vantage") not in ("receiver", "middle"):

        sustained = sustained_rates(rows, fit.dir, path.get("vantage"), int(path["rtt"]),
                                    [LINK_PRESETS[link].wire_bytes for link in FRAMINGS])
        for link, (rate, _) in zip(FRAMINGS, sustained):
            if not rate or path["flight"] * 8e9 < SUSTAINED_FLIGHTS * rate * path["rtt"] or any(
                    abs(rate - (c.get("rate_bps") or 0)) <= SUSTAINED_APART * rate for c in links if c["link"] == link):
                continue
            links.append({"link": link, "rate_bps": rate,
                          "delay_ns": one_way_delay(rows, path["rtt"], rate, LINK_PRESETS[link].wire_bytes,
                                                    path.get("from") == "handshake", fit.value("mtu"))})
    mtu = fit.value("mtu") or 0
    for link in NOMINAL_LINKS:
        preset = LINK_PRESETS[link]
        # ...and one a little slower than the measured percentile: ACKs that bunch (a receiver
        # acknowledging 8 KB at a time, a burst leaving at once) make it overshoot a standard link.
        if preset.mtu >= mtu and (preset.rate_bps > measured
                                  or preset.rate_bps > NOMINAL_BELOW_MEASURED * percentile_rate):
            cand = {"link": link, "rate_bps": preset.rate_bps}
            if path.get("rtt"):
                cand["delay_ns"] = one_way_delay(rows, path["rtt"], preset.rate_bps, preset.wire_bytes,
                                                 path.get("from") == "handshake", fit.value("mtu"))
            links.append(cand)
    # Each link with each host model: a host's per-packet and per-byte costs (copies, checksums,
    # interrupts) shape a trace as much as the link (Moldeklev's Sun IPX bounds 140 Mbit/s ATM
    # near 21 Mbit/s), and pace the ACKs the rate was measured from.
    first = fit.value("cost") or HOST_MODELS[0]
    return [_hosted(cand, cost) for cost in (first, *(c for c in HOST_MODELS if c != first)) for cand in links]


def _hosted(cand: dict[str, Any], cost: str) -> dict[str, Any]:
    """A link candidate on a host model: the round trip the delay came from also paid each host's
    per-packet output and input (and half the interrupt latency on average) once each way, which
    the model now adds itself."""
    from stallscope.simulate.host_cost import COST_MODELS

    host = COST_MODELS[cost]
    per_way = host.output_ns_per_packet + host.input_ns_per_packet + host.input_jitter_ns // 2
    out = {**cand, "cost": cost}
    if per_way and cand.get("delay_ns"):
        out["delay_ns"] = max(1, cand["delay_ns"] - per_way)
    return out


# The ATM switch port tried in place of the replayed losses: its buffer in whole PDUs of the trace's
# largest datagram (a port is sized in cells; what matters to TCP is how many PDUs it holds), each
# discard policy, the output rate (the cell rate the trace's ACK clock measured, at the median and
# the 90th percentile, and OC-3's payload rate) and the access link feeding it (OC-3's line rate, or
# OC-12: a faster access link fills the port faster).
ATM_BUFFER_PDUS = (1, 2, 3, 4, 6, 8, 12, 16)


ATM_POLICIES = ("none", "ppd", "epd")


OC3_LINE_BPS = 155_520_000


OC12_LINE_BPS = 622_080_000


ATM_ACCESS_BPS = (OC3_LINE_BPS, OC12_LINE_BPS)


# The cell rate from the ACK clock is noisy at a sender's tap (ACKs bunch and spread): several of
# its percentiles are tried, and the standard cell rates (TAXI 140 Mbit/s, OC-3's payload).
ATM_RATE_PERCENTILES = (0.5, 0.75, 0.9)


ATM_CELL_RATES = (140_000_000, 149_760_000)


# Output rates closer than this share stand for one another.
SAME_RATE = 0.03


def _atm_ports(fit: Fit, rows: Any) -> list[dict[str, Any]]:
    """Where the path may be ATM and the trace lost data: a switch port (buffer, discard policy,
    output rate) in place of the replayed losses, on an AAL5-framed access link. The first candidate
    is the replay itself (no port)."""
    if not fit.value("_atm_path"):
        return [{}]
    from stallscope.simulate.links.atm import aal5_cells, aal5_wire_bytes

    path = fit.value("_path") or {}
    mtu = fit.value("mtu") or 9180
    measured = [r for q in ATM_RATE_PERCENTILES
                for r, _ in bottleneck_rates(rows, fit.dir, path.get("vantage"), [(aal5_wire_bytes, 0)], q) if r]
    # And the cell rate the ACKs moved the data at over a round trip (fit.path.sustained_rates): at a
    # Linux sender's tap the pairs bunch (atm_epd's median pair 142.5 Mbit/s, 90th percentile 238,
    # where the emulator's cells left at 135), and a port fitted faster than the path's fills
    # slower from its access link, so the run's flight waits in the queue before the port instead
    # (44 ms round trips where the trace's were 4-6 ms) and each timeout lasts that much longer.
    if path.get("rtt") and path.get("vantage") not in ("receiver", "middle"):

        (sustained, _), = sustained_rates(rows, fit.dir, path.get("vantage"), int(path["rtt"]), [aal5_wire_bytes])
        if sustained:
            measured.append(sustained)
    outs: list[int] = []
    for r in (*measured, *ATM_CELL_RATES):
        if all(abs(r - o) > SAME_RATE * o for o in outs):
            outs.append(int(r))
    pdu = aal5_cells(mtu)
    # The replay first (as chosen so far), then the replay after a port chosen in a first pass.
    out: list[dict[str, Any]] = [{}, {"atm_switch": None}]
    for out_rate in outs:
        for access in ATM_ACCESS_BPS:
            if access <= out_rate:
                continue
            link: dict[str, Any] = {"link": "oc3", "rate_bps": access}
            if path.get("rtt"):
                link["delay_ns"] = one_way_delay(rows, path["rtt"], out_rate, aal5_wire_bytes,
                                                 path.get("from") == "handshake", mtu)
            for k in ATM_BUFFER_PDUS:
                for policy in ATM_POLICIES:
                    out.append({**link, "atm_switch": {"buffer_cells": k * pdu, "policy": policy,
                                                       "out_rate_bps": out_rate, "access_rate_bps": access}})
    return out


# The ports a what-if on the switch runs on: up to ENSEMBLE_SIZE within ENSEMBLE_MARGIN of the
# closest one's distance (the median of their predictions is the prediction).
ENSEMBLE_MARGIN = 0.25


ENSEMBLE_SIZE = 5


# A receiving NIC's jumbo receive slots tried in place of the replayed losses: the pool's size, and
# how a slot comes back (when the frame's data is acknowledged, as the Tigon II driver's, or a
# fixed time after use: a host that replenishes its ring late).
JUMBO_SLOTS = (4, 8, 16, 32, 64, 128, 256, 384, 512)


JUMBO_RELEASE_NS = (None, 100_000, 1_000_000, 10_000_000)


# A hop with a smaller MTU than the hosts' drops every larger datagram (a black hole: its ICMP
# frag-needed never reaches the sender) or tells the sender to send smaller (RFC 1191): the MTUs of
# Ethernet, PPPoE and IPv6's minimum link.
HOP_MTUS = (1500, 1492, 1280)


HOP_MODES = ("blackhole", "icmp")


# The stacks whose simulator personality implements RFC 4821 black-hole detection (mtu_probing).
MTU_PROBING_STACKS = ("linux",)


def _jumbo_nics(fit: Fit) -> list[dict[str, Any]]:
    """Where the trace's losses were all jumbo frames: a receiving NIC with too few jumbo slots, or
    a hop with a standard MTU, in place of the replayed losses. The first candidates are the replay
    itself (no NIC, no hop)."""
    out: list[dict[str, Any]] = [{}, {"jumbo_nic": None, "pmtu_hop": None, "mtu_probing": None}]
    # A black hole with the sender's RFC 4821 detection on (Linux's tcp_mtu_probing=1: after its
    # timeouts it falls back to smaller segments), where its stack has it.
    probing = (None, 1) if fit.value("personality") in MTU_PROBING_STACKS else (None,)
    for mtu in HOP_MTUS:
        for mode in HOP_MODES:
            for probe in (probing if mode == "blackhole" else (None,)):
                out.append({"pmtu_hop": {"mtu": mtu, "mode": mode}, "jumbo_nic": None, "mtu_probing": probe})
    for slots in JUMBO_SLOTS:
        for release in JUMBO_RELEASE_NS:
            nic: dict[str, Any] = {"slots": slots, "hold_until_acked": release is None}
            if release is not None:
                nic["replenish_ns"] = release
            out.append({"jumbo_nic": nic, "pmtu_hop": None, "mtu_probing": None})
    return out


def path_mechanism_candidates(fit: Fit, rows: Any) -> list[dict[str, Any]]:
    """The mechanism behind the trace's losses, where the trace supports one: an ATM switch port
    (_atm_ports) or a NIC short of jumbo slots (_jumbo_nics); else only the replay."""
    if fit.value("_atm_path"):
        return _atm_ports(fit, rows)
    if fit.value("_jumbo_path"):
        return _jumbo_nics(fit)
    return [{}]


def ensemble_of(chosen: dict[str, Any], scored: list[tuple[float, int, dict[str, Any]]], name: str, varied: str,
              plausible: Callable[[dict[str, Any]], bool] = lambda m: True) -> list[dict[str, Any]]:
    """The path mechanisms (`name`: "atm_switch", "jumbo_nic") about as close to the trace as the
    chosen one: up to ENSEMBLE_SIZE within ENSEMBLE_MARGIN of the closest, the chosen first, each
    with its link. On a path this chaotic (a timeout comes or goes with a few cells or slots) a
    what-if's prediction is their median, not one run's. Two that differ only in `varied` (what a
    what-if sets) are one. An alternative `plausible` rejects is left out (the chosen one stays)."""
    if not scored:
        return []
    scored = [x for x in scored if x[2].get(name) == chosen.get(name) or plausible(x[2][name])]
    keep = ("link", "rate_bps", "delay_ns", name)
    out: dict[tuple, dict[str, Any]] = {}
    best = scored[0][0]
    mine = [x for x in scored if x[2].get(name) == chosen.get(name)]
    for sc, _, c in [*mine[:1], *scored]:
        key = tuple(sorted((k, v) for k, v in c[name].items() if k != varied))
        if (sc <= best + ENSEMBLE_MARGIN or c is chosen or c.get(name) == chosen.get(name)) and key not in out \
                and len(out) < ENSEMBLE_SIZE:
            out[key] = {k: c[k] for k in keep if k in c}
    return list(out.values())


def holds_two_pdus(fit: Fit) -> Callable[[dict[str, Any]], bool]:
    """Whether a port's buffer holds a whole PDU of the trace's largest datagram and the cells of
    another behind it. The trace's flights of many full segments got through its port; a port of
    one PDU passes them only where its cells leave about as fast as the access link brings them
    (atm_small_buffer's 192-cell alternative, out at 153 Mbit/s from 155.52), so it fits the
    trace's losses by its rate, not its buffer, and a policy what-if on it acts on a buffer with no
    room for a second PDU: EPD's threshold (the buffer less one PDU) is 0 there, and it refuses
    every PDU that finds a cell queued (atm_small_buffer's `epd`: 0.8 Mbit/s, 166 timeouts)."""
    from stallscope.simulate.links.atm import aal5_cells

    pdu = aal5_cells(fit.value("mtu") or 9180)
    return lambda port: int(port.get("buffer_cells") or 0) >= 2 * pdu
