"""What the path's stages counted during a simulated run (BulkResult.path): per direction the
serial link, its loss stages, and the forward path's ATM switch port, PMTU hop and jumbo-slot NIC
when the run had them. Read by the reproductions (Kung & Morris's PDUs lost per episode, GigaTCP's
jumbo drops) and by tests; the simulator itself lives in the native core."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .links.atm import PduFate


@dataclass(frozen=True, slots=True)
class PduRecord:
    """One AAL5 PDU offered to the ATM switch port and what became of it."""

    at_ns: int  # its first cell reaches the switch
    uid: int
    cells: int
    fate: PduFate


@dataclass(frozen=True, slots=True)
class LinkCounters:
    name: str
    sent_packets: int
    sent_bytes: int
    # (at_ns, uid, reason) of each datagram the link itself refused (too large for its MTU).
    drops: tuple[tuple[int, int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class LossCounters:
    """A loss stage in front of a link: what it was offered, what it dropped, and (Gilbert-Elliott)
    whether it ended in the bad state."""

    offered: int
    lost: int
    bad: bool


@dataclass(frozen=True, slots=True)
class AtmCounters:
    cells_in: int
    cells_dropped: int
    pdus_in: int
    pdus_lost: int
    max_occupancy: int
    pdus: Sequence[PduRecord] = field(repr=False, default=())


@dataclass(frozen=True, slots=True)
class PmtuCounters:
    forwarded: int
    dropped: int
    icmp_sent: int


@dataclass(frozen=True, slots=True)
class NicCounters:
    """The receiving NIC's jumbo-slot pool (Shalunov): frames taken into a slot, frames dropped for
    want of one, standard frames that passed, and the fewest free slots seen."""

    accepted: int
    dropped: int
    small_passed: int
    min_free: int


@dataclass(frozen=True, slots=True)
class PathSide:
    link: LinkCounters
    losses: tuple[LossCounters, ...] = ()
    atm: AtmCounters | None = None
    pmtu: PmtuCounters | None = None
    nic: NicCounters | None = None


@dataclass(frozen=True, slots=True)
class PathCounters:
    forward: PathSide
    reverse: PathSide


def path_counters(link: str, raw: dict[str, Any], records: Any) -> PathCounters:
    """The native run's path counters (`raw["path"]`, its drops) as PathCounters; `records` builds
    the ATM PDU list on first use (most callers never read it)."""
    native = raw["path"]
    sides = []
    for side, suffix in enumerate(("fwd", "rev")):
        name = f"{link}-{suffix}"
        packets, nbytes = native["links"][side]
        drops = tuple((d[0], d[1], d[2]) for d in raw["drops"] if d[3] == name)
        losses = tuple(LossCounters(offered, lost, bool(bad)) for offered, lost, bad in native["loss"][side])
        atm = pmtu = nic = None
        if side == 0 and native["atm"] is not None:
            a = native["atm"]
            atm = AtmCounters(a["cells_in"], a["cells_dropped"], a["pdus_in"], a["pdus_lost"], a["max_occupancy"],
                              records(lambda rows=a["pdus"]: [PduRecord(at, uid, cells, PduFate(*fate))
                                                              for at, uid, cells, *fate in rows]))
        if side == 0 and native["pmtu"] is not None:
            pmtu = PmtuCounters(*native["pmtu"])
        if side == 0 and native["nic"] is not None:
            n = native["nic"]
            nic = NicCounters(n["accepted"], n["dropped"], n["small_passed"], n["min_free"])
        sides.append(PathSide(LinkCounters(name, packets, nbytes, drops), losses, atm, pmtu, nic))
    return PathCounters(*sides)
