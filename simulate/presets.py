"""Named settings for `stallscope simulate bulk --preset NAME`: each paper's setting one option
away, so a pathology is reproduced without reading the Python. A preset is a set of BulkConfig
fields and make_path impairments (simulate/links/presets.py); options given on the command line
override it. The reproductions (simulate/reproductions/) remain the reference for each number;
a preset is the same setting for one run, with a transfer short enough to run in about a second.

`stallscope simulate bulk --preset list` prints this table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .links.presets import AtmSwitchSpec

MB = 1024 * 1024
KB = 1024
ATM_CELL_PAYLOAD = 48

# Kung & Morris: a 155 Mbit/s OC-3 input into a 53 Mbit/s switch port, whose cells leave at
# 53 * 149.76 / 155.52 Mbit/s after SONET framing (simulate/reproductions/kung_morris.py).
KUNG_MORRIS_OUT_CELL_RATE = 53_000_000 * 149_760 // 155_520
KUNG_MORRIS_WINDOW = 64 * KB
# A switch buffer well under the 64 KB window: without a discard policy goodput collapses.
KUNG_MORRIS_BUFFER_CELLS = 40 * KB // ATM_CELL_PAYLOAD  # 853 cells

# Shalunov's GigaTCP: FreeBSD 4.3 over Tigon II Gigabit Ethernet (simulate/reproductions/gigatcp.py).
GIGATCP_JUMBO_MTU = 8940
GIGATCP_TI_SLOTS = 384  # TI_JSLOTS of the ti driver
GIGATCP_TRIGGER_SEGMENT = 2000  # one injected data loss; the paper does not say what lost it
GIGATCP_SLOW_RETURN_US = 30_000  # slots returned 30 ms after use instead of when acknowledged


@dataclass(frozen=True)
class Preset:
    name: str
    source: str
    shows: str
    config: dict[str, Any]
    impairments: dict[str, Any] = field(default_factory=dict)

    def settings(self) -> str:
        """The preset's settings in the command line's own terms (option names and units)."""
        parts = [f"--{k.replace('_', '-')} {v}" for k, v in self.config.items() if k != "bytes"]
        im = self.impairments
        if "jumbo_slots" in im:
            parts.append(f"--jumbo-slots {im['jumbo_slots']}")
            if not im.get("jumbo_hold_until_acked", True):
                parts.append("--jumbo-release timer")
            if im.get("jumbo_replenish_ns"):
                parts.append(f"--jumbo-replenish-us {im['jumbo_replenish_ns'] // 1000}")
        if "drop_nth" in im:
            parts += [f"--drop-nth {n}" for n in im["drop_nth"]]
        if im.get("loss_data_only"):
            parts.append("--loss-data-only")
        spec = im.get("atm_switch")
        if spec is not None:
            parts += [f"--atm-buffer-cells {spec.capacity_cells}", f"--atm-out-rate {spec.out_rate_bps}",
                      f"--atm-policy {spec.policy}"]
        parts.append(f"--bytes {self.config['bytes']}")
        return " ".join(parts)


def _kung_morris(policy: str) -> Preset:
    shows = {
        "none": "cells lost from many PDUs; goodput collapses with ~1.5 s timeout pauses",
        "ppd": "partial packet discard: barely better than none",
        "epd": "early packet discard: whole PDUs dropped at the door; most of the goodput back",
    }[policy]
    return Preset(
        f"kung-morris-{policy}", "Kung & Morris, GLOBECOM '95: TCP over an ATM switch port", shows,
        {"personality": "tru64", "link": "oc3", "mtu": 9180, "sndbuf": KUNG_MORRIS_WINDOW,
         "rcvbuf": KUNG_MORRIS_WINDOW, "write": KUNG_MORRIS_WINDOW, "read": KUNG_MORRIS_WINDOW, "bytes": 8 * MB},
        {"atm_switch": AtmSwitchSpec(KUNG_MORRIS_BUFFER_CELLS * ATM_CELL_PAYLOAD, KUNG_MORRIS_OUT_CELL_RATE, policy)},
    )


def _gigatcp(name: str, shows: str, slots: int, **impairments: Any) -> Preset:
    return Preset(
        name, "Shalunov, GigaTCP (Internet2, 2001): Tigon II jumbo receive slots", shows,
        {"personality": "freebsd4", "link": "gige", "mtu": GIGATCP_JUMBO_MTU, "sndbuf": 4 * MB, "rcvbuf": 4 * MB,
         "write": 64 * KB, "read": 64 * KB, "bytes": 24 * MB},
        {"jumbo_slots": slots, **impairments},
    )


PRESETS: dict[str, Preset] = {p.name: p for p in (
    _gigatcp("gigatcp-ti", "one loss, then the 384-slot pool runs dry: the retransmission finds no slot, "
             "RTO back-off 1, 2, 4 ... s while small frames (ACKs) pass", GIGATCP_TI_SLOTS,
             drop_nth=(GIGATCP_TRIGGER_SEGMENT,), loss_data_only=True),
    _gigatcp("gigatcp-ti-slow-return", "slots come back 30 ms after use: jumbo frames dropped in bursts, "
             "timeouts, goodput a few percent of the link", GIGATCP_TI_SLOTS,
             jumbo_hold_until_acked=False, jumbo_replenish_ns=GIGATCP_SLOW_RETURN_US * 1000),
    _gigatcp("gigatcp-8192", "negative control: the same loss with 8192 slots is repaired at once (~985 Mbit/s)",
             8192, drop_nth=(GIGATCP_TRIGGER_SEGMENT,), loss_data_only=True),
    _kung_morris("none"),
    _kung_morris("ppd"),
    _kung_morris("epd"),
)}


def get(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)} (or 'list')") from None
