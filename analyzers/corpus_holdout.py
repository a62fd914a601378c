"""A holdout corpus: the scoring corpus's mechanisms (analyzers/corpus.py) with parameters and seeds
it never uses (other read rates, buffers, links, delays, write sizes, think times, loss rates, MTUs),
so that rules fitted on the scoring corpus are measured on traces they were not shaped on.

    python -m stallscope.analyzers.corpus --holdout DIR
    stallscope score --corpus DIR

Its figures are in docs/analyzer.md ("Holdout corpus"); no test pins them: it is for measuring.
"""

from __future__ import annotations

from stallscope.analyzers.corpus import KB, PERSONALITIES, TraceSpec, _bulk, _naglemark


def plan() -> list[TraceSpec]:
    """The holdout corpus, in a fixed order (names unique and stable, none shared with corpus.plan())."""
    out: list[TraceSpec] = []
    P = PERSONALITIES
    for k, p in enumerate(P):
        for rate, rb, link, read in ((2_000_000, 16384, "fddi", 1024), (3_000_000, 65535, "fastethernet", 4096), (6_000_000, 24576, "ethernet10", 8192)):
            out.append(_bulk("slowreader", f"{p}-{rate//1_000_000}mbit-rcv{rb}-{link}", personality=p, link=link, read=read,
                             rcvbuf=rb, read_rate_bps=rate, seed=40 + k))
        for sb, rate, d in ((4096, 2_000_000, 20_000_000), (24576, 45_000_000, 80_000_000), (12000, 10_000_000, 30_000_000)):
            out.append(_bulk("sndbuf", f"{p}-snd{sb}-{rate//1_000_000}m-{d//1_000_000}ms", personality=p, link="custom",
                             rate_bps=rate, delay_ns=d, sndbuf=sb, seed=50 + k))
        for tag, im, link in (("random2", {"loss": 0.02}, "fddi"), ("gilbert2", {"gilbert": [0.02, 0.3, 0.0, 0.5]}, "fastethernet"),
                              ("ackloss10", {"reverse_loss": 0.10}, "ethernet10")):
            out.append(_bulk("loss", f"{p}-{tag}-{link}", personality=p, link=link, bytes=384 * KB, seed=60 + k, impairments=im))
        for think, w in ((10, 4096), (60, 50000), (300, 2000)):
            out.append(_bulk("idle", f"{p}-think{think}ms-w{w}", personality=p, link="fddi", write=w, think_ns=think * 1_000_000, seed=70 + k))
        for w, r, link in ((2000, 100, "fastethernet"), (6000, 1460, "ethernet10")):
            out.append(_bulk("reqresp", f"{p}-{link}-w{w}-r{r}", personality=p, link=link, write=w, reply=r, seed=80 + k))
        for link in ("fastethernet", "atm140"):
            out.append(_bulk("bulk", f"{p}-{link}-w5000", personality=p, write=5000, link=link, seed=90 + k))
    for i, v in enumerate(("NAGLE", "MINSHALL", "CORK", "MSMV", "EOM", "E+M", "MIN+MORE", "DLDET", "BORMAN", "UNACKED-MSS", "OFF")):
        for j, p in enumerate(("tru64", "bsd44", "linux", "freebsd4")):
            link = ("fddi", "fastethernet", "ethernet10")[(i + j) % 3]
            out.append(_bulk("nagle", f"{p}-{link}-{v}-w{2500 + 1700 * j}", personality=p, link=link, nagle=v,
                             write=2500 + 1700 * j, sndbuf=(8192, 32768)[(i + j) % 2], seed=100 + i))
    for p in ("bsd44", "freebsd4", "linux"):
        for s, r in ((8192, 32768), (16384, 16384), (32768, 16384), (24576, 49152)):
            out.append(_bulk("moldeklev", f"{p}-S{s}-R{r}-w4096", personality=p, link="atm140", mtu=9244, sndbuf=s, rcvbuf=r,
                             write=4096, read=4096, bytes=512 * KB, seed=3))
    for p in ("linux", "freebsd4", "tru64"):
        for slots in (3, 6):
            out.append(_bulk("jumbo", f"{p}-{slots}slots-s2", personality=p, link="gige", mtu=9000, bytes=512 * KB,
                             sndbuf=65536, rcvbuf=65536, impairments={"jumbo_slots": slots}, seed=2))
    for p in ("linux", "bsd44", "sunos41"):
        for mode in ("icmp", "blackhole"):
            out.append(_bulk("pmtu", f"{p}-fastethernet-1280-{mode}", personality=p, link="fastethernet",
                             impairments={"pmtu_mtu": 1280, "pmtu_mode": mode}, seed=4))
    for p in ("sunos41", "bsd44", "linux"):
        for policy in ("none", "epd"):
            out.append(_bulk("atm", f"{p}-{policy}-400cells-s7", personality=p, link="atm140", bytes=512 * KB,
                             sndbuf=32768, rcvbuf=32768, seed=7,
                             impairments={"atm_switch": {"buffer_bytes": 48 * 400, "out_rate_bps": 80_000_000, "policy": policy}}))
    for p in ("tru64", "bsd44", "linux"):
        for v in ("NAGLE", "MINSHALL"):
            out.append(_naglemark(p, v, "ethernet10", "R", 16, think_ms=5))
    return out
