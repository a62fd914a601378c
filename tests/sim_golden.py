"""Golden traces of the simulator: per case a digest of the pcap and the ground truth it produces.

The cases are the families the two-engine differential test ran (a seeded configuration matrix,
special and lossy configurations, the matrix again with random loss, Moldeklev's table cells, the
ATM / jumbo NIC / PMTU path stages, Kung & Morris and GigaTCP at full size, naglemark trials).
For each bulk case the stored entry holds the sha256 of the pcap (simulate/pcap_writer.py) and of
the ground truth's canonical JSON, and a few readable figures (packets, goodput, duration,
retransmits, timeouts, stalls, drops, engine events) so that a diff of the golden file shows what
a change did. A naglemark case holds its score, finish time, engine events and a sha256 over its
samples.

    python3 tests/sim_golden.py check [PATTERN...]   # print the cases that differ (exit 1 if any)
    python3 tests/sim_golden.py update [PATTERN...]  # rewrite tests/golden/sim_traces.json
    python3 tests/sim_golden.py list [PATTERN...]    # the case names (slow ones marked)

PATTERN is an fnmatch pattern on case names ("lossy-*"); update with patterns rewrites only the
matching entries. After a change to the simulator that is meant to change its output, run
update and review `git diff tests/golden/sim_traces.json`: the figures show which cases moved
and how. tests/test_sim_golden.py checks every entry (the `slow` share with `-m slow`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import inspect
import itertools
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden" / "sim_traces.json"
UPDATE_COMMAND = "python3 tests/sim_golden.py update"

PERSONALITIES = ("sunos41", "bsd44", "freebsd4", "tru64", "linux20", "linux")
LINKS = ("atm140", "ethernet10", "fddi", "fastethernet", "gige")
NAGLES = (None, "NAGLE", "OFF", "MINSHALL", "MSMV", "EOM", "E+M", "MIN+MORE", "DLDET", "E+M+M", "E+M+D",
          "BORMAN", "UNACKED-MSS", "CORK")
BUFFERS = ((4096, 4096), (16384, 32768), (32768, 16384), (65536, 65536), (None, None), (8192, 131072))
SIZES = ((8192, 8192), (4096, 16384), (1000, 700), (65536, 65536))
COSTS = ("free", "sun_ipx")
OUT_CELL_RATE = 53_000_000 * 149_760 // 155_520  # kung_morris's 53 Mbit/s switch port, in cells


@dataclass(frozen=True)
class Bulk:
    """A bulk transfer: run_bulk(cfg, impairments=...)."""

    cfg: Any
    impairments: dict | None = None
    slow: bool = False


@dataclass(frozen=True)
class Naglemark:
    """One naglemark trial (Mogul & Minshall): native_core.naglemark_trial(**kw)."""

    kw: dict = field(hash=False)
    slow: bool = False


# --- the cases ---------------------------------------------------------------------------------

def _matrix_configs(n: int, seed: int) -> list:
    """A seeded sample of personality x link x buffers x Nagle x cost x write/read sizes, then each
    personality on each link once (n + 30 configurations; the differential test's MATRIX)."""
    from stallscope.simulate.run_bulk import BulkConfig

    rng = random.Random(seed)
    full = list(itertools.product(PERSONALITIES, LINKS, BUFFERS, NAGLES, COSTS, SIZES))
    picked = rng.sample(full, n)
    for i, p in enumerate(PERSONALITIES):
        for j, link in enumerate(LINKS):
            picked.append((p, link, BUFFERS[(i + j) % len(BUFFERS)], NAGLES[(i * 3 + j) % len(NAGLES)],
                           COSTS[(i + j) % 2], SIZES[(i + 2 * j) % len(SIZES)]))
    return [
        BulkConfig(personality=p, link=link, sndbuf=s, rcvbuf=r, nagle=nagle, cost=cost, write=w, read=rd,
                   bytes=rng.choice((48 * 1024, 200 * 1024, 300_001)), seed=rng.randrange(1000))
        for p, link, (s, r), nagle, cost, (w, rd) in picked
    ]


def _matrix_cases(matrix: list) -> dict[str, Bulk]:
    """Every third sampled cell (50 of 150) and all 30 personality x link cells, which alone hold
    every personality, link, Nagle variant, buffer pair, size pair and cost model. Half run by
    default."""
    out = {}
    keep = [i for i in range(150) if i % 3 == 0] + list(range(150, len(matrix)))
    for k, i in enumerate(keep):
        c = matrix[i]
        name = f"matrix-{i:03d}-{c.personality}-{c.link}-{c.nagle or 'default'}-{c.cost}"
        out[name] = Bulk(c, slow=k % 2 != 0)
    return out


def _loss_matrix_cases(matrix: list) -> dict[str, Bulk]:
    """Every sixth matrix cell again with forward and reverse random loss (seeded per cell)."""
    out = {}
    for k, i in enumerate(range(0, 180, 6)):
        rng = random.Random(i)
        impairments = {"loss": rng.choice((0.005, 0.02, 0.05)), "reverse_loss": rng.choice((0, 0.01)),
                       "loss_data_only": rng.random() < 0.5}
        out[f"loss-matrix-{i:03d}"] = Bulk(matrix[i], impairments, slow=k % 2 != 0)
    return out


def _special_cases() -> dict[str, Bulk]:
    from stallscope.simulate.run_bulk import BulkConfig

    special = {
        # request/response: every write is a message answered by `reply` bytes
        "reply-sunos": BulkConfig(write=2048, read=8192, bytes=64 * 1024, reply=512, sndbuf=16384, rcvbuf=16384),
        "reply-linux-nodelay": BulkConfig(personality="linux", link="fastethernet", write=1000, read=4096,
                                          bytes=40_000, reply=100, nagle="OFF"),
        "think-bsd44": BulkConfig(personality="bsd44", link="ethernet10", write=3000, bytes=60_000,
                                  think_ns=7_000_000),
        "think-linux20-ipx": BulkConfig(personality="linux20", write=5000, bytes=50_000, think_ns=30_000_000,
                                        cost="sun_ipx"),
        # explicit rate, delay and queue: the link queue overflows (burst loss, timeouts)
        "queue-overflow": BulkConfig(personality="bsd44", link="gige", rate_bps=20_000_000, delay_ns=2_000_000,
                                     queue_bytes=6000, sndbuf=65536, rcvbuf=65536, bytes=400_000),
        "queue-overflow-linux": BulkConfig(personality="linux", link="custom", rate_bps=50_000_000,
                                           delay_ns=5_000_000, queue_bytes=9000, sndbuf=131072, rcvbuf=131072,
                                           bytes=600_000, write=65536, read=65536),
        "mtu-override": BulkConfig(personality="freebsd4", link="fddi", mtu=1500, bytes=100_000),
        # route MTU / advertised MSS / host MTU: the MSS the path cannot carry (exceeds_mtu drops)
        "route-mtu": BulkConfig(personality="tru64", link="gige", route_mtu=1280, bytes=100_000),
        "advertised-mss": BulkConfig(personality="linux", link="gige", advertised_mss=8960, host_mtu=9000,
                                     bytes=60_000),
        "mss-override": BulkConfig(personality="sunos41", mss=4096, bytes=100_000),
        "receiver-personality": BulkConfig(personality="linux", receiver_personality="sunos41", link="atm140",
                                           receiver_nagle="OFF", receiver_inference=True, bytes=150_000),
        # the receiver's interface FIFO overflows under SUN_IPX (Moldeklev's cell loss)
        "ipx-fifo": BulkConfig(sndbuf=52 * 1024, rcvbuf=52 * 1024, bytes=2 << 20, cost="sun_ipx"),
        "appendix-a": BulkConfig(sndbuf=16384, rcvbuf=32768, bytes=256 * 1024, cost="sun_ipx"),
    }
    default = {"reply-sunos", "queue-overflow-linux", "receiver-personality", "appendix-a"}
    assert default <= set(special), default - set(special)
    return {f"special-{n}": Bulk(c, slow=n not in default) for n, c in special.items()}


def _lossy_cases() -> dict[str, Bulk]:
    from stallscope.simulate.run_bulk import BulkConfig

    lossy = {
        "loss-reno": (BulkConfig(personality="bsd44", link="ethernet10", sndbuf=65536, rcvbuf=65536,
                                 bytes=600_000, seed=2), {"loss": 0.01}),
        "loss-newreno-ipx": (BulkConfig(personality="linux", link="fastethernet", bytes=500_000, cost="sun_ipx",
                                        seed=4), {"loss": 0.02, "reverse_loss": 0.01}),
        "gilbert-data-only": (BulkConfig(personality="freebsd4", link="gige", sndbuf=131072, rcvbuf=131072,
                                         bytes=800_000), {"gilbert": (0.01, 0.3, 0.0, 0.5), "loss_data_only": True}),
        "drop-nth-tahoe": (BulkConfig(personality="sunos41", link="atm140", bytes=400_000),
                           {"drop_nth": (20, 21, 22, 60), "loss_data_only": True}),
        "reverse-rate": (BulkConfig(personality="tru64", link="fddi", bytes=300_000),
                         {"reverse_rate_bps": 64_000, "loss": 0.005}),
        "heavy-loss-abort": (BulkConfig(personality="linux20", link="ethernet10", bytes=100_000), {"loss": 0.6}),
    }
    # The opening: lost SYNs and SYN-ACKs resent with back-off, and each stack's give-up.
    for p in PERSONALITIES:
        cfg = BulkConfig(personality=p, link="ethernet10", bytes=50_000)
        lossy[f"syn-lost-twice-{p}"] = (cfg, {"drop_nth": (1, 2)})
        lossy[f"synack-lost-{p}"] = (cfg, {"reverse_loss": 0.7})
        lossy[f"syn-never-answered-{p}"] = (cfg, {"loss": 1.0})
        lossy[f"synack-never-answered-{p}"] = (cfg, {"reverse_loss": 1.0})
    # SACK (RFC 2018 blocks, RFC 6675 recovery, lost repairs found by later SACKs) on both hosts.
    for p in PERSONALITIES:
        lossy[f"sack-burst-{p}"] = (BulkConfig(personality=p, link="ethernet10", bytes=300_000, write=65536,
                                               read=65536, sack=True),
                                    {"drop_nth": tuple(range(60, 72)), "loss_data_only": True})
    lossy.update({
        "sack-random-loss": (BulkConfig(personality="linux", link="fastethernet", bytes=800_000, write=65536,
                                        read=65536, sack=True, seed=3), {"loss": 0.03, "reverse_loss": 0.01}),
        "sack-lost-repair": (BulkConfig(personality="linux", link="ethernet10", rate_bps=10_000_000,
                                        delay_ns=1_000_000, rcvbuf=32768, bytes=400_000, write=65536, read=65536,
                                        sack=True),
                             {"drop_nth": (101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 126),
                              "loss_data_only": True}),
        "sack-gilbert-gige": (BulkConfig(personality="linux", link="gige", sndbuf=1 << 20, rcvbuf=1 << 20,
                                         bytes=3_000_000, write=65536, read=65536, sack=True),
                              {"gilbert": (0.005, 0.2, 0.0, 0.6), "loss_data_only": True}),
        "sack-one-side": (BulkConfig(personality="linux", receiver_personality="bsd44", link="ethernet10",
                                     bytes=200_000, sack=None), {"loss": 0.02}),
        # Linux Reno (TCP_CONGESTION) counting packets, with and without SACK; CUBIC is linux's default.
        "linux-reno-loss": (BulkConfig(personality="linux", link="fastethernet", bytes=800_000, write=65536,
                                       read=65536, congestion="reno", seed=5), {"loss": 0.02}),
        "linux-reno-nosack-burst": (BulkConfig(personality="linux", link="ethernet10", rcvbuf=32768,
                                               bytes=400_000, write=65536, read=65536, congestion="reno",
                                               sack=False),
                                    {"drop_nth": tuple(range(101, 113)), "loss_data_only": True}),
        "linux-cubic-long-rtt": (BulkConfig(personality="linux", link="custom", rate_bps=100_000_000,
                                            delay_ns=20_000_000, sndbuf=1 << 20, rcvbuf=1 << 20, bytes=6_000_000,
                                            write=65536, read=65536, seed=2), {"loss": 0.002}),
    })
    default = {"loss-reno", "drop-nth-tahoe", "heavy-loss-abort", "syn-lost-twice-linux", "synack-lost-bsd44",
               "syn-never-answered-sunos41", "synack-never-answered-linux20", "sack-burst-freebsd4",
               "sack-lost-repair", "linux-reno-nosack-burst"}
    assert default <= set(lossy), default - set(lossy)
    return {f"lossy-{n}": Bulk(c, im, slow=n not in default) for n, (c, im) in lossy.items()}


def _path_stage_cases() -> dict[str, Bulk]:
    """make_path's ATM switch port (no discard / PPD / EPD), jumbo-slot NIC and PMTU hop."""
    from stallscope.simulate.links.presets import AtmSwitchSpec
    from stallscope.simulate.run_bulk import BulkConfig

    out: dict[str, tuple] = {}
    # no discard / PPD / EPD at four switch buffer sizes, MTU 9180 and 4470, personalities in turn
    for i, (policy, kb) in enumerate(itertools.product(("none", "ppd", "epd"), (24, 40, 56, 64))):
        mtu = (9180, 4470)[i % 2]
        cfg = BulkConfig(personality=PERSONALITIES[i % len(PERSONALITIES)], link="oc3", mtu=mtu, sndbuf=65536,
                         rcvbuf=65536, write=65536, read=65536, bytes=1 << 20, seed=i)
        out[f"atm-{policy}-{kb}k-{mtu}"] = (cfg, {"atm_switch": AtmSwitchSpec(kb * 1024, OUT_CELL_RATE, policy)})
    # jumbo slot pools of 8, 32 and 128, held or not, 2 ms replenish latency, one injected loss
    for i, (slots, hold, rep) in enumerate(itertools.product((8, 32, 128), (True, False), (0, 2_000_000))):
        cfg = BulkConfig(personality=PERSONALITIES[i % len(PERSONALITIES)], link="gige", mtu=9000,
                         sndbuf=512 * 1024, rcvbuf=512 * 1024, write=65536, read=65536, bytes=3 << 20, seed=i)
        im = {"jumbo_slots": slots, "jumbo_hold_until_acked": hold, "jumbo_replenish_ns": rep, "drop_nth": (40,),
              "loss_data_only": True}
        out[f"jumbo-{slots}-{'hold' if hold else 'free'}-{rep}"] = (cfg, im)
    # a 1500-byte hop on a 9000-byte path, ICMP and black hole, MTU probing, every personality
    for i, p in enumerate(PERSONALITIES):
        cfg = BulkConfig(personality=p, link="gige", mtu=9000, bytes=200_000, seed=i)
        out[f"pmtu-icmp-{p}"] = (cfg, {"pmtu_mtu": 1500})
        out[f"pmtu-blackhole-{p}"] = (cfg, {"pmtu_mtu": 1500, "pmtu_mode": "blackhole"})
        probing = BulkConfig(personality=p, link="gige", mtu=9000, bytes=200_000, seed=i, mtu_probing=1)
        out[f"pmtu-probing-{p}"] = (probing, {"pmtu_mtu": 1500, "pmtu_mode": "blackhole"})
        out[f"pmtu-probing-576-{p}"] = (probing, {"pmtu_mtu": 576, "pmtu_mode": "blackhole"})
    for sack_on in (True, False):  # the RFC 4821 search after the fallback
        search = BulkConfig(personality="linux", link="gige", mtu=9000, sndbuf=1 << 20, rcvbuf=1 << 20,
                            write=65536, read=65536, bytes=3 << 20, mtu_probing=1, sack=sack_on)
        out[f"pmtu-probe-search-{'sack' if sack_on else 'nosack'}"] = (
            search, {"pmtu_mtu": 1500, "pmtu_mode": "blackhole"})
    out.update({
        "atm-epd-threshold-delay": (BulkConfig(personality="linux", link="oc3", sndbuf=131072, rcvbuf=131072,
                                               bytes=1 << 20),
                                    {"atm_switch": AtmSwitchSpec(48 * 1024, OUT_CELL_RATE, "epd",
                                                                 epd_threshold_cells=300, out_delay_ns=150_000)}),
        "atm-loss-reverse": (BulkConfig(personality="bsd44", link="atm140", sndbuf=65536, rcvbuf=65536,
                                        bytes=1 << 20),
                             {"atm_switch": AtmSwitchSpec(32 * 1024, OUT_CELL_RATE, "ppd"), "loss": 0.01,
                              "reverse_loss": 0.01, "reverse_rate_bps": 10_000_000}),
        # the hosts offer an MSS from a 9180 interface on a 4470 path: the ATM path drops at its MTU
        "atm-exceeds-mtu": (BulkConfig(personality="linux", link="oc3", mtu=4470, host_mtu=9180, bytes=100_000),
                            {"atm_switch": AtmSwitchSpec(1 << 20, OUT_CELL_RATE, "none")}),
        "jumbo-min-frame-reverse-loss": (BulkConfig(personality="tru64", link="gige", mtu=4000, sndbuf=262144,
                                                    rcvbuf=262144, bytes=2 << 20),
                                         {"jumbo_slots": 4, "jumbo_min_frame_len": 2000,
                                          "jumbo_replenish_ns": 500_000, "reverse_loss": 0.02}),
        "jumbo-standard-frames-pass": (BulkConfig(personality="linux", link="gige", bytes=500_000),
                                       {"jumbo_slots": 1, "jumbo_replenish_ns": 10**9}),
        "pmtu-icmp-jumbo": (BulkConfig(personality="freebsd4", link="gige", mtu=9000, sndbuf=262144,
                                       rcvbuf=262144, bytes=1 << 20),
                            {"pmtu_mtu": 4000, "jumbo_slots": 8, "drop_nth": (25,), "loss_data_only": True}),
        "pmtu-icmp-atm": (BulkConfig(personality="tru64", link="oc3", sndbuf=65536, rcvbuf=65536, bytes=1 << 20),
                          {"pmtu_mtu": 4470, "atm_switch": AtmSwitchSpec(24 * 1024, OUT_CELL_RATE, "none")}),
        "pmtu-blackhole-loss": (BulkConfig(personality="linux", link="fddi", bytes=100_000),
                                {"pmtu_mtu": 1500, "pmtu_mode": "blackhole", "loss": 0.05}),
    })
    default = {"atm-none-24k-9180", "atm-ppd-40k-4470", "atm-epd-24k-9180", "jumbo-8-hold-0", "jumbo-32-free-2000000",
               "pmtu-icmp-linux", "pmtu-blackhole-bsd44", "pmtu-probing-linux", "pmtu-probing-576-linux20",
               "atm-exceeds-mtu", "jumbo-standard-frames-pass", "pmtu-blackhole-loss"}
    assert default <= set(out), default - set(out)
    return {f"path-{n}": Bulk(c, im, slow=n not in default) for n, (c, im) in out.items()}


# Moldeklev's socket buffer sizes: table 1/2 is every send x receive pair (here rather than read from
# shared/reference, which lies outside the repository).
MOLDEKLEV_BUFFERS = (4096, 8192, 16384, 24576, 32768, 40960, 49152, 52428)
# run by default: a 0.16 Mbit/s cell (the delayed-ACK lock-step), appendix A's, the largest
MOLDEKLEV_DEFAULT = ((4096, 16384), (16384, 32768), (52428, 52428))


def _moldeklev_cases() -> dict[str, Bulk]:
    """Moldeklev's 64 table cells with Nagle on and off at full size, 16 MB each."""
    from stallscope.simulate.reproductions.moldeklev import Cell, cell_config

    out = {}
    for nagle in (True, False):
        for snd, rcv in itertools.product(MOLDEKLEV_BUFFERS, MOLDEKLEV_BUFFERS):
            name = f"moldeklev-{snd}-{rcv}-nagle-{'on' if nagle else 'off'}"
            out[name] = Bulk(cell_config(Cell(snd, rcv, nagle)), slow=(snd, rcv) not in MOLDEKLEV_DEFAULT)
    return out


def _full_size_cases() -> dict[str, Bulk]:
    """A Kung & Morris cell (32 MB, 9180 MTU, 48 KB switch buffer) and GigaTCP's 384-slot pool
    (64 MB, 4 MB window) at full size."""
    from stallscope.simulate.links.presets import AtmSwitchSpec
    from stallscope.simulate.run_bulk import BulkConfig

    out = {}
    km = BulkConfig(personality="tru64", link="oc3", mtu=9180, sndbuf=65536, rcvbuf=65536, write=65536,
                    read=65536, bytes=32 << 20)
    for policy in ("none", "ppd", "epd"):
        out[f"kung-morris-{policy}"] = Bulk(km, {"atm_switch": AtmSwitchSpec(48 * 1024, OUT_CELL_RATE, policy)},
                                            slow=policy != "epd")
    giga = BulkConfig(personality="freebsd4", link="gige", mtu=8940, sndbuf=4 << 20, rcvbuf=4 << 20,
                      write=65536, read=65536, bytes=64 << 20)
    out["gigatcp-trigger-hold"] = Bulk(giga, {"jumbo_slots": 384, "drop_nth": (2000,), "loss_data_only": True})
    out["gigatcp-slow-return"] = Bulk(giga, {"jumbo_slots": 384, "jumbo_hold_until_acked": False,
                                             "jumbo_replenish_ns": 30_000_000}, slow=True)
    return out


def _naglemark_cases() -> dict[str, Naglemark]:
    """Sampled short trials (60 responses) over personality x link x variant x buffers x trial
    type, think-time trials, and full-size (1000-response) trials as Mogul's tables run them."""
    from stallscope.simulate.apps import naglemark as nm
    from stallscope.simulate.reproductions.mogul import APP_BUFS, SOCKBUFS, TABLE_VARIANTS

    rng = random.Random(5)
    variants = [v.value for v in TABLE_VARIANTS] + ["UNACKED-MSS", "CORK"]
    full = list(itertools.product(("tru64",), ("ethernet10", "fddi"), variants, APP_BUFS, SOCKBUFS, "sSrR"))
    picked = rng.sample(full, 40)
    for i, p in enumerate(PERSONALITIES):  # BSD-family servers start without slow start; Linux ones do not
        picked.append((p, LINKS[1 + i % 2], variants[i], APP_BUFS[i % 3], SOCKBUFS[(i + 1) % 3], "sSrR"[i % 4]))
    out = {}
    for k, (personality, link, variant, app_buf, sockbuf, trial) in enumerate(picked):
        kw = dict(personality=personality, link=link, variant=variant, sockbuf=sockbuf, receiver_inference=False,
                  seed=11, trial=trial, app_buf=app_buf,
                  lengths=nm.response_lengths(nm.TrialType(trial), 60, seed=11))
        name = f"naglemark-{k:02d}-{personality}-{link}-{variant}-{app_buf}-{sockbuf}-{trial}"
        out[name] = Naglemark(kw, slow=k % 4 != 0)
    for link, variant in (("ethernet10", "NAGLE"), ("fddi", "EOM")):
        for trial in "SsRr":
            kw = dict(personality="tru64", link=link, variant=variant, sockbuf=16384, receiver_inference=False,
                      seed=3, trial=trial, app_buf=4096, think_ns=7_300_000,
                      lengths=nm.response_lengths(nm.TrialType(trial), 40, seed=3))
            out[f"naglemark-think-{link}-{variant}-{trial}"] = Naglemark(kw, slow=link != "fddi")
    for link in ("ethernet10", "fddi"):
        for variant in ("NAGLE", "OFF", "EOM", "E+M+D"):
            for trial in "SRsr":
                kw = dict(personality="tru64", link=link, variant=variant, sockbuf=16384, receiver_inference=False,
                          seed=2, trial=trial, app_buf=4096, lengths=nm.response_lengths(nm.TrialType(trial), seed=2))
                out[f"naglemark-full-{link}-{variant}-{trial}"] = Naglemark(
                    kw, slow=(link, variant) != ("ethernet10", "NAGLE"))
    return out


def build_cases() -> dict[str, Bulk | Naglemark]:
    matrix = _matrix_configs(150, seed=3)
    cases: dict[str, Bulk | Naglemark] = {}
    for part in (_matrix_cases(matrix), _loss_matrix_cases(matrix), _special_cases(), _lossy_cases(),
                 _path_stage_cases(), _moldeklev_cases(), _full_size_cases(), _naglemark_cases()):
        assert not set(part) & set(cases), set(part) & set(cases)
        cases.update(part)
    return dict(sorted(cases.items()))


_CASES: dict[str, Bulk | Naglemark] | None = None


def cases() -> dict[str, Bulk | Naglemark]:
    global _CASES
    if _CASES is None:
        _CASES = build_cases()
    return _CASES


def family(name: str) -> str:
    for prefix in ("loss-matrix", "kung-morris", "naglemark-think", "naglemark-full"):
        if name.startswith(prefix + "-"):
            return prefix
    return name.split("-", 1)[0]


# --- the digests -------------------------------------------------------------------------------

def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _run_bulk(cfg: Any, impairments: dict | None) -> Any:
    from stallscope.simulate.run_bulk import run_bulk

    # While the Python engine exists, ask for the native one by name; afterwards it is the only one.
    if "engine" in inspect.signature(run_bulk).parameters:
        return run_bulk(cfg, impairments=impairments, engine="native")
    return run_bulk(cfg, impairments=impairments)


def _naglemark_trial(kw: dict) -> tuple[Any, dict]:
    from stallscope.simulate import native_core

    if "engine" in inspect.signature(native_core.naglemark_trial).parameters:
        return native_core.naglemark_trial(**kw, engine="native")
    return native_core.naglemark_trial(**kw)


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def bulk_digest(case: Bulk) -> dict[str, Any]:
    from stallscope.simulate.pcap_writer import write_pcap

    result = _run_bulk(case.cfg, case.impairments)
    fd, tmp = tempfile.mkstemp(suffix=".pcap", prefix="sim_golden_")
    os.close(fd)
    try:
        write_pcap(tmp, result.records)
        pcap_sha = _sha256_file(tmp)
    finally:
        os.unlink(tmp)
    truth = result.ground_truth
    return {
        "packets": result.packets,
        "goodput_mbit_s": round(result.goodput_mbit_s, 4),
        "duration_ns": result.duration_ns,
        "retransmits": result.retransmits,
        "timeouts": result.timeouts,
        "stalls": len(truth.stalls),
        "drops": sum(truth.drops.values()),
        "events": result.events,
        "pcap_sha256": pcap_sha,
        "truth_sha256": hashlib.sha256(canonical_json(truth.to_json())).hexdigest(),
    }


def naglemark_digest(case: Naglemark) -> dict[str, Any]:
    result, raw = _naglemark_trial(case.kw)
    samples = [[s.length, s.elapsed_ns] for s in result.samples]
    return {
        "responses": len(samples),
        "score_pct": round(result.score_pct, 4),
        "finished_ns": result.finished_ns,
        "now_ns": raw["now"],
        "connections": raw["connections"],
        "events": raw["events"],
        "samples_sha256": hashlib.sha256(canonical_json(samples)).hexdigest(),
    }


def digest(name: str) -> dict[str, Any]:
    case = cases()[name]
    return bulk_digest(case) if isinstance(case, Bulk) else naglemark_digest(case)


# --- the golden file ---------------------------------------------------------------------------

def load() -> dict[str, dict[str, Any]]:
    return json.loads(GOLDEN.read_text())


def save(entries: dict[str, dict[str, Any]]) -> None:
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")


def differences(stored: dict[str, Any] | None, got: dict[str, Any]) -> list[str]:
    """What changed, one line per figure ("packets: 412 -> 415"); digests named by themselves."""
    if stored is None:
        return ["no stored entry"]
    out = []
    for key in sorted(set(stored) | set(got)):
        a, b = stored.get(key, "(absent)"), got.get(key, "(absent)")
        if a == b:
            continue
        if key.endswith("_sha256"):
            out.append(f"{key}: {str(a)[:12]}... -> {str(b)[:12]}...")
        else:
            out.append(f"{key}: {a} -> {b}")
    return out


def explain(name: str, stored: dict[str, Any] | None, got: dict[str, Any], *, hint: bool = True) -> str:
    """The changed case and its moved figures, and (with `hint`) how to accept a meant change."""
    lines = "\n".join(f"  {d}" for d in differences(stored, got))
    text = f"{name}: the simulator's output changed\n{lines}"
    if hint:
        golden = GOLDEN.relative_to(GOLDEN.parents[2])
        text += f"\nIf the change is meant: `{UPDATE_COMMAND}`, then review `git diff {golden}`."
    return text


def _select(patterns: list[str]) -> list[str]:
    names = list(cases())
    if not patterns:
        return names
    picked = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    if not picked:
        raise SystemExit(f"no case matches {' '.join(patterns)} (see `python3 tests/sim_golden.py list`)")
    return picked


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("check", "update", "list"):
        print(__doc__.split("\n\n")[2] if __doc__ else "", file=sys.stderr)
        return 2
    command, patterns = argv[0], argv[1:]
    names = _select(patterns)
    if command == "list":
        for n in names:
            print(f"{n}{'  (slow)' if cases()[n].slow else ''}")
        return 0
    stored = load() if GOLDEN.exists() else {}
    start = time.perf_counter()
    if command == "update":
        entries = {} if not patterns else {n: e for n, e in stored.items() if n in cases()}
        changed = 0
        for k, n in enumerate(names, 1):
            entries[n] = digest(n)
            changed += entries[n] != stored.get(n)
            if k % 50 == 0:
                print(f"  {k}/{len(names)} cases ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
        if not patterns:
            gone = sorted(set(stored) - set(cases()))
            for n in gone:
                print(f"removed {n}")
        save(entries)
        print(f"wrote {len(names)} cases to {GOLDEN} ({changed} changed) in {time.perf_counter() - start:.1f} s")
        return 0
    failed = 0
    for n in names:
        got = digest(n)
        if got != stored.get(n):
            failed += 1
            print(explain(n, stored.get(n), got, hint=False))
    stale = sorted(set(stored) - set(cases())) if not patterns else []
    for n in stale:
        print(f"{n}: stored but no longer a case")
    took = time.perf_counter() - start
    if failed or stale:
        print(f"{failed} of {len(names)} cases differ{f', {len(stale)} stale' if stale else ''} ({took:.1f} s); "
              f"if meant: {UPDATE_COMMAND}, then review the diff")
        return 1
    print(f"{len(names)} cases match {GOLDEN.name} ({took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
