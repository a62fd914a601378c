"""The scenario library. Each fault has a negative control beside it: the same set-up with the one
knob that removes the fault, which must show none of it."""

from __future__ import annotations

from stallscope.capture.emulator.config import (
    BurstLossConfig,
    DirectionConfig,
    LinkConfig,
    SlotPoolConfig,
    SwitchConfig,
)
from stallscope.capture.knobs import HostKnobs, RouteKnobs, SocketKnobs
from stallscope.capture.scenarios.spec import Scenario
from stallscope.vocabulary import Cause

MS = 1_000_000
# Bulk paths are rate-limited so a second of capture stays small enough for a committed fixture.
PATH_RATE = 50_000_000
# The burst scenarios' path: at 10 Mbit/s their ~27-segment window queues ~35 ms, the margin by
# which the silence before each timeout (RTO >= srtt + 200 ms) clears the 200 ms observe() asks for.
LOSSY_RATE = 10_000_000
# One-way delay of the ordinary test path: a LAN-like 2 ms round trip.
LAN = DirectionConfig(delay_ns=1 * MS)
LAN_LINK = LinkConfig(LAN, LAN)
# 1995: no SACK on either end.
NO_SACK = {"tcp_sack": 0}
# The emulated ATM path: OC-3 (135 Mbit/s of cells after SONET framing), IP MTU 9180 (RFC 1626).
ATM_RATE = 135_000_000
ATM_MTU = 9180
ATM_ACCESS = 155_520_000


def _reqresp(name: str, description: str, *, app_buffer: int, nodelay: bool, expected=(),
             per_request: bool = False) -> Scenario:
    return Scenario(
        name=name,
        description=description,
        workload="reqresp",
        workload_spec={"app_buffer": app_buffer, "lengths": "random", "seed": 7,
                       "per_request_connection": per_request},
        sender=HostKnobs(socket=SocketKnobs(nodelay=nodelay)),
        sender_mtu=9000,
        receiver_mtu=9000,
        link=LAN_LINK,
        expected=expected,
        detail="buffer_tearing" if expected else None,
        seconds=2.0,
    )


def _atm(name: str, description: str, switch: SwitchConfig | None, expected=(), detail=None) -> Scenario:
    forward = DirectionConfig(rate_bps=ATM_RATE, atm_cell_tax=True, delay_ns=1 * MS, switch=switch)
    return Scenario(
        name=name,
        description=description,
        workload="bulk",
        workload_spec={"write_size": 64 * 1024},
        sender=HostKnobs(sysctls=NO_SACK),
        receiver=HostKnobs(sysctls=NO_SACK),
        sender_mtu=ATM_MTU,
        receiver_mtu=ATM_MTU,
        link=LinkConfig(forward, LAN),
        expected=expected,
        detail=detail,
    )


# Scheduled bursts (deterministic, unlike a Gilbert-Elliott chain): 12 consecutive full-size frames
# every 400, after 400 frames of warm-up, each burst also losing the first retransmission of its
# first segment. Linux NewReno (SACK off) repairs a plain burst one hole per round trip without a
# timeout; with the repair lost it has only the retransmission timer. SACK's RACK resends it.
BURST_SCHEDULE = BurstLossConfig(length=12, every=400, warmup=400, count=20, lose_first_repair=True)
BURST_LINK = LinkConfig(DirectionConfig(rate_bps=LOSSY_RATE, delay_ns=1 * MS, bursts=BURST_SCHEDULE), LAN)
# Lost ACKs: every frame back from the receiver counts (min_frame_len 0), and a burst outlasts the
# ACKs of a whole receive window (32 KB: about a dozen), so the sender hears nothing until its timer.
ACK_LOSS_SCHEDULE = BurstLossConfig(length=16, every=600, warmup=300, count=6, min_frame_len=0)
ACK_LOSS_LINK = LinkConfig(DirectionConfig(rate_bps=LOSSY_RATE, delay_ns=1 * MS),
                           DirectionConfig(delay_ns=1 * MS, bursts=ACK_LOSS_SCHEDULE))
# A fixed receive buffer (no autotuning) keeps the sender window-limited: after the lost repair
# it has nothing new to send, so the capture shows the whole timeout as silence.
BURST_RCVBUF = 32 * 1024
# Reno: slow start runs on to the receive window (cubic's HyStart may stop it short, and a
# cwnd-limited sender keeps sending new data after the lost repair, shortening the silence).
BURST_SENDER = SocketKnobs(congestion="reno")

# A switch buffer smaller than a window: about three 9180-byte PDUs (192 cells each).
SMALL_SWITCH_CELLS = 600


def _scenarios() -> list[Scenario]:
    s = [
        _reqresp("nagle_4k_jumbo", "request/response, 4 KB application writes over a 9000-byte MTU, Nagle on: "
                 "the last sub-MSS piece waits for a delayed ACK (~40 ms)",
                 app_buffer=4096, nodelay=False, expected=(Cause.NAGLE_DELAYED_ACK,)),
        _reqresp("nagle_4k_jumbo_nodelay", "negative control: the same with TCP_NODELAY",
                 app_buffer=4096, nodelay=True),
        _reqresp("nagle_128k_buffer", "negative control: the same with a 128 KB application buffer "
                 "(one write per response)", app_buffer=128 * 1024, nodelay=False),
        _reqresp("nagle_4k_jumbo_per_request", "negative control: the 4 KB buffer with Nagle on, but one "
                 "connection per request: Linux's quick-ACK mode on a fresh connection acknowledges at once",
                 app_buffer=4096, nodelay=False, per_request=True),
        _atm("atm_clean", "negative control: bulk over a 135 Mbit/s ATM path (MTU 9180, cell tax), SACK off, "
             "no switch buffer limit", None),
        _atm("atm_small_buffer", "bulk over the ATM path through a small switch buffer with no discard "
             "policy: cells lost from many PDUs, SACK off, retransmission timeouts",
             SwitchConfig(SMALL_SWITCH_CELLS, "none", access_rate_bps=ATM_ACCESS),
             expected=(Cause.BURST_LOSS_TIMEOUT,), detail="atm_cell_loss"),
        _atm("atm_ppd", "the small switch buffer with partial packet discard",
             SwitchConfig(SMALL_SWITCH_CELLS, "ppd", access_rate_bps=ATM_ACCESS),
             expected=(Cause.BURST_LOSS_TIMEOUT,), detail="atm_cell_loss"),
        _atm("atm_epd", "the small switch buffer with early packet discard: whole PDUs refused, fewer "
             "PDUs lost, fewer timeouts",
             SwitchConfig(SMALL_SWITCH_CELLS, "epd", access_rate_bps=ATM_ACCESS),
             expected=(Cause.BURST_LOSS_TIMEOUT,), detail="atm_cell_loss"),
        Scenario(
            name="jumbo_slots",
            description="bulk with 9000-byte frames into a receiving NIC with 8 jumbo slots, each "
                        "returned 1 ms after use: bursts overflow it, SACK off, timeouts",
            workload="bulk",
            workload_spec={"write_size": 64 * 1024},
            sender=HostKnobs(sysctls=NO_SACK),
            receiver=HostKnobs(sysctls=NO_SACK),
            sender_mtu=9000, receiver_mtu=9000,
            link=LinkConfig(DirectionConfig(rate_bps=1_000_000_000, delay_ns=1 * MS,
                                            slot_pool=SlotPoolConfig(8, 2048, 1 * MS)), LAN),
            expected=(Cause.JUMBO_SLOT_EXHAUSTION,),
        ),
        Scenario(
            name="pmtu_blackhole",
            description="9000-byte MTU at both ends, a 1500-byte hop that drops larger packets silently, "
                        "tcp_mtu_probing off: the connection stalls after the handshake",
            workload="bulk",
            sender=HostKnobs(sysctls={"tcp_mtu_probing": 0}),
            sender_mtu=9000, receiver_mtu=9000,
            link=LinkConfig(DirectionConfig(delay_ns=1 * MS, pmtu=1500), LAN),
            expected=(Cause.PMTU_BLACKHOLE,),
        ),
        Scenario(
            name="pmtu_blackhole_probing",
            description="the same black hole with tcp_mtu_probing=1: timeouts, then the sender probes a "
                        "smaller MSS and recovers",
            workload="bulk",
            sender=HostKnobs(sysctls={"tcp_mtu_probing": 1}),
            sender_mtu=9000, receiver_mtu=9000,
            link=LinkConfig(DirectionConfig(delay_ns=1 * MS, pmtu=1500), LAN),
            expected=(Cause.PMTU_BLACKHOLE,),
            seconds=4.0,
        ),
        Scenario(
            name="pmtu_icmp",
            description="negative control: the 1500-byte hop answers with ICMP fragmentation-needed; "
                        "path MTU discovery works",
            workload="bulk",
            sender=HostKnobs(sysctls={"tcp_mtu_probing": 0}),
            sender_mtu=9000, receiver_mtu=9000,
            link=LinkConfig(DirectionConfig(rate_bps=PATH_RATE, delay_ns=1 * MS, pmtu=1500, pmtu_mode="icmp"), LAN),
        ),
        Scenario(
            name="mss_mismatch",
            description="both ends advertise MSS 8960 (MTU 9000, route advmss on the sender); the sender's "
                        "route has `mtu lock 1500`, so it sends 1448-byte segments",
            workload="bulk",
            sender=HostKnobs(route=RouteKnobs(mtu=1500, mtu_lock=True, advmss=8960)),
            sender_mtu=9000, receiver_mtu=9000,
            link=LinkConfig(DirectionConfig(rate_bps=PATH_RATE, delay_ns=1 * MS), LAN),
            expected=(Cause.MSS_MISMATCH,),
        ),
        Scenario(
            name="slow_reader",
            description="the receiving application reads 2 KB every 10 ms from a 32 KB receive buffer: "
                        "zero windows",
            workload="bulk",
            workload_spec={"read_size": 2048, "read_think_us": 10_000},
            receiver=HostKnobs(socket=SocketKnobs(rcvbuf=32 * 1024)),
            link=LAN_LINK,
            expected=(Cause.RECEIVER_WINDOW_LIMITED,),
        ),
        Scenario(
            name="small_sndbuf_long_rtt",
            description="a 32 KB send buffer on a 100 ms round trip: at most one buffer per round trip",
            workload="bulk",
            sender=HostKnobs(socket=SocketKnobs(sndbuf=32 * 1024)),
            link=LinkConfig(DirectionConfig(delay_ns=50 * MS), DirectionConfig(delay_ns=50 * MS)),
            expected=(Cause.SEND_BUFFER_LIMITED,),
        ),
        Scenario(
            name="burst_loss",
            description=f"bursts of {BURST_SCHEDULE.length} consecutive full-size frames every "
                        f"{BURST_SCHEDULE.every}, each also losing its first repair, on a "
                        f"{LOSSY_RATE // 1_000_000} Mbit/s path, SACK off: every burst ends in a retransmission timeout",
            workload="bulk",
            sender=HostKnobs(sysctls=NO_SACK, socket=BURST_SENDER),
            receiver=HostKnobs(sysctls=NO_SACK, socket=SocketKnobs(rcvbuf=BURST_RCVBUF)),
            link=BURST_LINK,
            expected=(Cause.BURST_LOSS_TIMEOUT,),
        ),
        Scenario(
            name="burst_loss_sack",
            description="negative control: the same bursts with SACK on, repaired without a timeout",
            workload="bulk",
            sender=HostKnobs(socket=BURST_SENDER),
            receiver=HostKnobs(socket=SocketKnobs(rcvbuf=BURST_RCVBUF)),
            link=BURST_LINK,
        ),
        Scenario(
            name="ack_loss",
            description=f"bursts of {ACK_LOSS_SCHEDULE.length} consecutive ACKs lost on the way back, every "
                        f"{ACK_LOSS_SCHEDULE.every} frames of the receiver, on the lossy path: the data arrives, the sender "
                        "hears nothing and its retransmission timer fires (DSACK reports the resend as a duplicate)",
            workload="bulk",
            sender=HostKnobs(socket=BURST_SENDER),
            receiver=HostKnobs(socket=SocketKnobs(rcvbuf=BURST_RCVBUF)),
            link=ACK_LOSS_LINK,
            expected=(Cause.ACK_LOSS_TIMEOUT,),
        ),
        Scenario(
            name="idle_app",
            description="the application writes 64 KB, then sits idle 300 ms, repeatedly: the gaps are "
                        "the application's",
            workload="pausing",
            link=LAN_LINK,
            expected=(Cause.APPLICATION_IDLE,),
        ),
        Scenario(
            name="clean_bulk",
            description="negative control: bulk over a clean 50 Mbit/s path with a 2 ms round trip",
            workload="bulk",
            link=LinkConfig(DirectionConfig(rate_bps=PATH_RATE, delay_ns=1 * MS), LAN),
        ),
    ]
    return s


SCENARIOS: dict[str, Scenario] = {s.name: s for s in _scenarios()}


def get(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise KeyError(f"no scenario {name!r}; known: {', '.join(SCENARIOS)}") from None
