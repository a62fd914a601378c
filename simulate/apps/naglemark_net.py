"""naglemark's transport: pairs of the reference TCP hosts (simulate/tcp) over a link preset.

The client host always runs traditional Nagle (Mogul §7: it never sends while awaiting an ACK);
the server runs the variant under test with the given send buffer; the client's receive buffer is
the personality's default (32 KB for Tru64, as in §7). One connection per request (trials s, r)
builds a fresh host pair per connection, so both hosts' 200 ms delayed-ACK ticks are kept on one
global grid: a real host's fast timer runs for all its connections at once
(docs/tcp-rules.md#delayed-ack-timers).
"""

from __future__ import annotations

from typing import Callable

from ..engine import NS_PER_MS, NS_PER_S, Simulator
from ..links.presets import LINK_PRESETS, make_path
from ..nagle import NagleVariant
from ..tcp.host import Host
from ..tcp.personality import DelAckPolicy, Family, Personality, get_personality
from .naglemark import AppSocket

CLIENT_ADDR, SERVER_ADDR = "10.0.0.1", "10.0.0.2"
SERVER_PORT = 8000
FIRST_CLIENT_PORT = 20000
# A closed connection's hosts keep running this long (FIN exchange), then stop their ticks.
LINGER_NS = 1 * NS_PER_S


def lan_server_personality(p: Personality) -> Personality:
    """The server starts each connection without slow start (cwnd unlimited), as a BSD stack that
    exempts its local subnet does. Calibrated, not read from Tru64 source: with the 4.4BSD
    passive-open cwnd of 2 segments, every FDDI response above 8192 bytes on a fresh connection
    waits for the 200 ms tick (the first MCLBYTES cluster, 8192 < 2 * MSS 4312, cannot draw an
    ACK), which contradicts table 5's 0.0 % for OFF in the per-request trials; Ethernet scores are
    the same either way (measured: every worst score within 5 points in both settings)."""
    if p.family is Family.BSD:
        return p.with_(initial_cwnd_segments=0)
    return p


class _GlobalTickHost(Host):
    """A Host created mid-run whose free-running ticks stay on the grid that started at t=0."""

    def _start_ticks(self, phase: int) -> None:
        p, now = self.p, self.sim.now
        if p.delack is DelAckPolicy.BSD_TICK:
            self.sim.schedule(now + (phase - now) % p.delack_ns, self._fast_tick)
        if p.slow_tick_ns is not None:
            self.sim.schedule(now + (phase - now) % p.slow_tick_ns, self._slow_tick)


class _Socket:
    """AppSocket over one Host (write/read/close pass the simulator's current time)."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def write(self, nbytes: int, done: Callable[[int], None]) -> None:
        self.host.write(self.host.sim.now, nbytes, done)

    def read(self, max_bytes: int, got: Callable[[int, int], None]) -> None:
        self.host.read(self.host.sim.now, max_bytes, got)

    def close(self) -> None:
        self.host.close(self.host.sim.now)


class HostPairNetwork:
    """naglemark.Network: each `connect` wires a client and a server host over a fresh path."""

    def __init__(
        self,
        sim: Simulator,
        *,
        personality: str,
        link: str,
        variant: NagleVariant,
        sockbuf: int,
        receiver_inference: bool,
        client_tick_phase_ns: int,
        server_tick_phase_ns: int,
        rate_bps: int | None = None,
        delay_ns: int | None = None,
        mtu: int | None = None,
    ) -> None:
        self.sim = sim
        # Overrides of the preset's rate, one-way delay and MTU (make_path), e.g. a capture rig's path.
        self.path = {k: v for k, v in (("rate_bps", rate_bps), ("delay_ns", delay_ns), ("mtu", mtu)) if v is not None}
        self.personality = get_personality(personality)
        self.link = link
        self.variant = variant
        self.sockbuf = sockbuf
        self.receiver_inference = receiver_inference
        self.client_phase = client_tick_phase_ns
        self.server_phase = server_tick_phase_ns
        self.connections = 0
        self.hosts: list[tuple[Host, Host]] = []

    def connect(self, established: Callable[[int, AppSocket, AppSocket], None]) -> None:
        sim, p = self.sim, self.personality
        mtu = self.path.get("mtu", LINK_PRESETS[self.link].mtu)
        n = self.connections
        self.connections += 1
        self._retire_previous()
        client = _GlobalTickHost(
            sim, f"client{n}", CLIENT_ADDR, FIRST_CLIENT_PORT + n, p, mtu=mtu,
            nagle=NagleVariant.NAGLE, receiver_inference=self.receiver_inference,
            tick_phase_ns=self.client_phase, uid_base=2 * n << 32,
        )
        server = _GlobalTickHost(
            sim, f"server{n}", SERVER_ADDR, SERVER_PORT, lan_server_personality(p), mtu=mtu, sndbuf=self.sockbuf,
            nagle=self.variant, receiver_inference=self.receiver_inference,
            tick_phase_ns=self.server_phase, uid_base=(2 * n + 1) << 32,
        )
        forward, reverse = make_path(sim, self.link, **self.path)
        forward.connect(server)
        reverse.connect(client)
        client.attach(forward)
        server.attach(reverse)
        server.listen()
        self.hosts.append((client, server))
        client.on_established = lambda now: established(now, _Socket(client), _Socket(server))
        client.connect(sim.now, SERVER_ADDR, SERVER_PORT)

    def _retire_previous(self) -> None:
        """Stop the previous pair's ticks once its FIN exchange has had time to finish."""
        if not self.hosts:
            return
        old = self.hosts[-1]
        self.sim.after(LINGER_NS, lambda now: [h.stop() for h in old])


def make_network(
    *,
    personality: str,
    link: str,
    variant: NagleVariant,
    sockbuf: int,
    receiver_inference: bool,
    seed: int,
    rate_bps: int | None = None,
    delay_ns: int | None = None,
    mtu: int | None = None,
) -> tuple[HostPairNetwork, int]:
    """(network, raw link rate in bit/s for the score). The seed sets the simulator's random
    source and the two hosts' tick phases (independent clocks). `rate_bps`, `delay_ns` and `mtu`
    override the preset's (Python engine only: the native core knows the presets)."""
    if link not in LINK_PRESETS or (rate_bps or LINK_PRESETS[link].rate_bps) <= 0:
        raise KeyError(f"unknown link preset {link!r} for naglemark; try ethernet10 or fddi")
    if sockbuf <= 0:
        raise ValueError(f"naglemark: sockbuf must be positive, got {sockbuf}")
    sim = Simulator(seed=seed)
    tick = 200 * NS_PER_MS
    client_phase = sim.rng.randrange(tick)
    server_phase = sim.rng.randrange(tick)
    net = HostPairNetwork(
        sim, personality=personality, link=link, variant=NagleVariant(variant), sockbuf=sockbuf,
        receiver_inference=receiver_inference, client_tick_phase_ns=client_phase, server_tick_phase_ns=server_phase,
        rate_bps=rate_bps, delay_ns=delay_ns, mtu=mtu,
    )
    return net, rate_bps or LINK_PRESETS[link].rate_bps
