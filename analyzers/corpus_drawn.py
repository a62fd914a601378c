"""Drawn corpora: the scoring corpus's mechanisms with every parameter drawn at random (seeded by
the draw's number) from ranges around the papers' settings, so that each draw is a corpus no rule
was ever shaped on. The fixed holdout (corpus_holdout.py) stops being one once rules are mended
on what it shows; a new draw measures how the analyzer generalizes.

    python -m stallscope.analyzers.corpus --draw N DIR
    stallscope score --corpus DIR

The same draw number always gives the same plan (and, the simulator being deterministic, the same
traces). Its figures are in docs/scoring.md ("Drawn corpora"); no test pins them.
"""

from __future__ import annotations

import random
from typing import Any

from stallscope.analyzers.corpus import KB, PERSONALITIES, SERIAL, TraceSpec, _bulk, _naglemark

# Each family's number of traces per draw (150 in all: the MSS family has half as many).
PER_FAMILY = 12
NAGLE_VARIANTS = ("NAGLE", "OFF", "MINSHALL", "CORK", "MSMV", "EOM", "E+M", "MIN+MORE", "DLDET", "BORMAN",
                  "UNACKED-MSS")
BUFFERS = (4096, 8192, 12288, 16384, 24576, 32768, 40960, 49152, 52428, 65535)


def _link(rng: random.Random, names: tuple[str, ...]) -> dict[str, Any]:
    name = rng.choice(names)
    return dict(SERIAL) if name == "serial" else {"link": name}


def _tag(link: dict[str, Any]) -> str:
    return "serial" if link["link"] == "custom" else link["link"]


def plan(draw: int) -> list[TraceSpec]:
    """Draw `draw`'s corpus, in a fixed order (names unique: each carries the draw and its index)."""
    rng = random.Random(f"stallscope-corpus-draw-{draw}")
    out: list[TraceSpec] = []

    def seed() -> int:
        return rng.randrange(1, 10_000)

    def add(spec: TraceSpec) -> None:
        out.append(TraceSpec(f"{spec.name}-d{draw}n{len(out)}", spec.family, spec.kind, spec.config,
                             spec.impairments, spec.read_rate_bps))

    for _ in range(PER_FAMILY):
        p, link = rng.choice(PERSONALITIES), _link(rng, ("serial", "ethernet10", "fddi", "atm140", "fastethernet"))
        w = rng.randrange(1000, 16385)
        add(_bulk("bulk", f"{p}-{_tag(link)}-w{w}", personality=p, write=w, seed=seed(), **link))
    for _ in range(PER_FAMILY):
        p, v = rng.choice(("tru64", "bsd44", "linux", "freebsd4")), rng.choice(NAGLE_VARIANTS)
        link, w = rng.choice(("ethernet10", "fddi", "fastethernet")), rng.randrange(1500, 9001)
        sb = rng.choice((8192, 16384, 32768))
        add(_bulk("nagle", f"{p}-{link}-{v}-w{w}-snd{sb}", personality=p, link=link, nagle=v, write=w, sndbuf=sb,
                  seed=seed()))
    for _ in range(PER_FAMILY):
        p, policy = rng.choice(("sunos41", "bsd44", "freebsd4", "linux")), rng.choice(("none", "ppd", "epd"))
        cells, rate = rng.randrange(150, 801), rng.randrange(60, 121) * 1_000_000
        buf = rng.choice((24576, 32768, 52428, 65535))
        add(_bulk("atm", f"{p}-{policy}-{cells}cells-{rate // 1_000_000}m-b{buf}", personality=p, link="atm140",
                  bytes=512 * KB, sndbuf=buf, rcvbuf=buf, seed=seed(),
                  impairments={"atm_switch": {"buffer_bytes": 48 * cells, "out_rate_bps": rate, "policy": policy}}))
    for _ in range(PER_FAMILY):
        p, slots = rng.choice(("linux", "freebsd4", "bsd44", "tru64")), rng.randrange(2, 9)
        add(_bulk("jumbo", f"{p}-{slots}slots", personality=p, link="gige", mtu=9000, bytes=512 * KB, sndbuf=65536,
                  rcvbuf=65536, seed=seed(), impairments={"jumbo_slots": slots}))
    for _ in range(PER_FAMILY):
        p, mode = rng.choice(PERSONALITIES), rng.choice(("icmp", "blackhole"))
        link, hop = rng.choice((("fddi", 1500), ("fastethernet", 1280), ("fastethernet", 1400)))
        add(_bulk("pmtu", f"{p}-{link}-{hop}-{mode}", personality=p, link=link, seed=seed(),
                  impairments={"pmtu_mtu": hop, "pmtu_mode": mode}))
    for _ in range(PER_FAMILY):
        p, link = rng.choice(PERSONALITIES), rng.choice(("ethernet10", "fddi", "fastethernet"))
        kind = rng.choice(("random", "gilbert", "ackloss"))
        if kind == "random":
            rate = rng.randrange(5, 41) / 1000
            im, tag = {"loss": rate}, f"random{rate:g}"
        elif kind == "gilbert":
            enter, leave = rng.randrange(5, 31) / 1000, rng.randrange(20, 51) / 100
            im, tag = {"gilbert": [enter, leave, 0.0, rng.randrange(40, 81) / 100]}, f"gilbert{enter:g}-{leave:g}"
        else:
            rate = rng.randrange(3, 13) / 100
            im, tag = {"reverse_loss": rate}, f"ackloss{rate:g}"
        add(_bulk("loss", f"{p}-{link}-{tag}", personality=p, link=link, bytes=rng.choice((384, 512, 1024)) * KB,
                  seed=seed(), impairments=im))
    for _ in range(PER_FAMILY):
        p, s, r = rng.choice(("sunos41", "bsd44")), rng.choice(BUFFERS[:-1]), rng.choice(BUFFERS[:-1])
        io = rng.choice((4096, 8192))
        add(_bulk("moldeklev", f"{p}-S{s}-R{r}-io{io}", personality=p, link="atm140", mtu=9244, sndbuf=s, rcvbuf=r,
                  write=io, read=io, cost="sun_ipx", bytes=512 * KB, seed=seed()))
    for _ in range(PER_FAMILY):
        p, link = rng.choice(PERSONALITIES), rng.choice(("ethernet10", "fddi", "fastethernet"))
        w, reply = rng.randrange(500, 30001), rng.choice((32, 100, 512, 1460, 4000, 10000))
        add(_bulk("reqresp", f"{p}-{link}-w{w}-r{reply}", personality=p, link=link, write=w, reply=reply, seed=seed()))
    for _ in range(PER_FAMILY):
        p, link = rng.choice(PERSONALITIES), rng.choice(("ethernet10", "fddi", "fastethernet"))
        read, rb, rate = rng.choice((1024, 2048, 4096, 8192)), rng.choice(BUFFERS[1:]), rng.randrange(5, 81) * 100_000
        add(_bulk("slowreader", f"{p}-{link}-read{read}-rcv{rb}-{rate // 1000}k", personality=p, link=link, read=read,
                  rcvbuf=rb, read_rate_bps=rate, seed=seed()))
    for _ in range(PER_FAMILY):
        p, link = rng.choice(PERSONALITIES), rng.choice(("ethernet10", "fddi", "fastethernet"))
        w, think = rng.randrange(1000, 50001), rng.randrange(5, 401)
        add(_bulk("idle", f"{p}-{link}-think{think}ms-w{w}", personality=p, link=link, write=w,
                  think_ns=think * 1_000_000, seed=seed()))
    for _ in range(PER_FAMILY):
        p, sb = rng.choice(PERSONALITIES), rng.choice((4096, 8192, 12000, 16384, 24576, 32768))
        rate, delay = rng.randrange(2, 51) * 1_000_000, rng.randrange(10, 101) * 1_000_000
        add(_bulk("sndbuf", f"{p}-snd{sb}-{rate // 1_000_000}m-{delay // 1_000_000}ms", personality=p, link="custom",
                  rate_bps=rate, delay_ns=delay, sndbuf=sb, seed=seed()))
    for _ in range(PER_FAMILY // 2):
        p, mode = rng.choice(("linux", "freebsd4", "bsd44")), rng.choice(("icmp", "blackhole"))
        add(_bulk("mss", f"{p}-hostmtu9000-{mode}", personality=p, link="fastethernet", host_mtu=9000, seed=seed(),
                  impairments={"pmtu_mtu": 1500, "pmtu_mode": mode}))
    for _ in range(PER_FAMILY):
        p, v = rng.choice(("tru64", "bsd44", "linux")), rng.choice(("NAGLE", "OFF", "MINSHALL", "E+M"))
        link, trial = rng.choice(("ethernet10", "fddi")), rng.choice(("S", "R", "s"))
        spec = _naglemark(p, v, link, trial, rng.randrange(12, 41), think_ms=rng.choice((0, 0, 5, 30)))
        spec.config["seed"] = seed()
        add(spec)
    return out
