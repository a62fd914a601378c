"""The path: round trip, bottleneck rate and one-way delays, MTU, and the ATM or jumbo-frame links a
loss pattern points at."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from ...findings import ConnectionAnalysis, DirectionAnalysis
from ...stalls import gap_threshold_ns
from .model import Fitted

# An IPv4 and a TCP header without options: an MSS plus these is the interface MTU it was set from.
TCP_IP_HEADERS = 40


# Rate estimates from packet or ACK spacing can only be too low (queueing spreads packets out), so
# the fit takes a high percentile of them, not the median: the back-to-back pairs show the
# bottleneck, and the very top is the odd pair compressed behind a queue.
RATE_PERCENTILE = 0.9


MIN_RATE_SAMPLES = 8


def fit_route_mtu(conn: ConnectionAnalysis, d: DirectionAnalysis, values: dict[str, Fitted]) -> None:
    """GigaTCP's unused MSS: both ends offered a larger MSS than any segment used, and none was lost
    for it (the analyzer's mss_mismatch finding): the sender's route held its segments to a
    smaller MTU (Linux `mtu lock`) than the interface MTU its SYN was offered from. The simulator's
    route_mtu does the same: the SYN offers the interface's MSS, the segments fit the route."""
    finding = next((f for f in conn.findings if f.cause == "mss_mismatch" and f.dir == d.dir), None)
    ip = d.profile.get("max_ip_len")
    if finding is None or not ip or "mtu" not in values or ip >= values["mtu"].value:
        return
    values["route_mtu"] = Fitted(int(ip), f"the largest datagram sent ({ip} bytes), under the interface MTU the SYN's "
                                 f"MSS came from ({values['mtu'].value}): the sender's route MTU (the mss_mismatch "
                                 f"finding: {finding.evidence.get('why') if isinstance(finding.evidence, dict) else ''})")


# IP over ATM's MTUs: RFC 1626's default for LLC/SNAP over AAL5 (9180) and FORE's (9188 with
# null encapsulation; 9244 over its TAXI links, the simulator's atm140).
ATM_MTUS = (9180, 9188, 9244)


def atm_path(values: dict[str, Fitted], profile: dict[str, Any]) -> str | None:
    """Why the path may be ATM (cells of 48 payload bytes, an AAL5 trailer, a switch port whose
    buffer holds cells), or None: an IP-over-ATM MTU (the sender's interface MTU, or the largest
    datagram it sent)."""
    mtu = values["mtu"].value if "mtu" in values else None
    if mtu in ATM_MTUS:
        return f"the MTU {mtu} is IP over ATM's ({values['mtu'].source}; RFC 1626)"
    if profile.get("max_ip_len") in ATM_MTUS:
        return f"the largest datagram ({profile['max_ip_len']} bytes) is IP over ATM's MTU (RFC 1626)"
    return None


# The largest Ethernet frame without jumbo support (1518 bytes: a 1500-byte datagram): a larger one
# needs a jumbo receive slot at the NIC (Shalunov, GigaTCP; simulate.links.nic).
STANDARD_ETHERNET_DATAGRAM = 1500


def jumbo_path(values: dict[str, Fitted], rows: pl.DataFrame | None, dir_: int) -> str | None:
    """Why the trace's losses may be a receiving NIC short of jumbo receive slots, or a black hole,
    or None: jumbo frames (datagrams above 1500 bytes) were sent, every data segment the sender had
    to resend was first sent as one (a slot pool loses only frames that need a jumbo slot), and some
    resends were jumbo frames too."""
    mtu = values["mtu"].value if "mtu" in values else None
    if rows is None or not mtu or mtu <= STANDARD_ETHERNET_DATAGRAM:
        return None
    data = rows.filter((pl.col("dir") == dir_) & (pl.col("payload_len") > 0) & pl.col("ip_len").is_not_null()
                       & pl.col("seq_rel").is_not_null()).select("seq_rel", "ip_len", "retransmission")
    resent = data.filter(pl.col("retransmission"))
    if resent.is_empty() or int(resent["ip_len"].max()) <= STANDARD_ETHERNET_DATAGRAM:
        # (No resend was a jumbo frame: the sender sent smaller at once, as an ICMP frag-needed tells
        # it to; a black hole or a short slot pool takes jumbo resends too.)
        return None
    # Each resend's first transmission, the one lost: a sender that fell back to smaller segments
    # (Linux's RFC 4821 black-hole detection) re-cuts its resends, so their own sizes hide it.
    first = data.filter(~pl.col("retransmission")).select(
        pl.col("seq_rel").cast(pl.Int64), pl.col("ip_len").alias("_first_len")).sort("seq_rel")
    lost = resent.select(pl.col("seq_rel").cast(pl.Int64), "ip_len").sort("seq_rel").join_asof(
        first, on="seq_rel", strategy="backward")
    sizes = lost.select(pl.coalesce("_first_len", "ip_len")).to_series()
    if int(sizes.min()) <= STANDARD_ETHERNET_DATAGRAM:
        return None
    recut = int(lost["ip_len"].min()) <= STANDARD_ETHERNET_DATAGRAM
    return (f"jumbo frames (MTU {mtu}), and all {resent.height} resent data segments were first sent as jumbo "
            f"frames (the smallest such datagram {int(sizes.min())} bytes"
            + (f"; resent as small as {int(lost['ip_len'].min())} bytes: the sender fell back to smaller segments"
               if recut else "") + "): losses a NIC short of jumbo receive slots, or a hop with a standard MTU, "
            "would cause")


def fit_path(d: DirectionAnalysis, conn: ConnectionAnalysis, rows: pl.DataFrame | None,
              values: dict[str, Fitted], warnings: list[str]) -> None:
    p = d.profile
    vantage = conn.vantage.get(str(d.dir)) or {}
    rtt = vantage.get("path_rtt_ns")
    if rtt:
        values["delay_ns"] = Fitted(max(1, rtt // 2), f"half the path round trip ({rtt} ns, from the {vantage.get('from')})")
    else:
        values["delay_ns"] = Fitted(1_000_000, "default 1 ms: no round trip measured")
        warnings.append("no path round trip measured: the delay is a default")
    segment = p.get("common_segment") or p.get("max_segment")
    if segment:
        values["_segment"] = Fitted(int(segment), "the full segment's payload as sent")
    adv = p.get("mss_advertised")
    if adv:
        # The interface MTU behind the sender's MSS option: the stack then sizes its segments as it
        # did (options, cluster rounding, the peer's offer), which the segments alone may not show
        # (a send buffer smaller than the MSS never sends a full one).
        values["mtu"] = Fitted(int(adv) + TCP_IP_HEADERS, f"the sender's MSS option ({adv}) + 40: its interface MTU")
    else:
        mss = p.get("common_segment") or p.get("max_segment")
        if mss:
            # The simulator's MSS is the option's value; timestamps then take 12 bytes of each segment.
            ts = 12 if p.get("timestamps") else 0
            values["mss"] = Fitted(int(mss) + ts, ("the full segment the sender sent most (profile.common_segment)"
                                   if p.get("common_segment") else "the largest segment sent (profile.max_segment)")
                                   + (" plus the 12 bytes of the timestamp option" if ts else "") + ": no SYN seen")
        ip = p.get("max_ip_len")
        if ip:
            values["mtu"] = Fitted(int(ip), "the largest datagram sent (profile.max_ip_len)")
        elif mss:
            values["mtu"] = Fitted(int(mss) + TCP_IP_HEADERS, "MSS + 40")
    # A sender silent for a stall's length after an ACK paused (stalls.gap_threshold_ns).
    rate, how = bottleneck_rate(rows, d.dir, vantage.get("vantage"), pause_ns=gap_threshold_ns(rtt))
    if rate:
        values["rate_bps"] = Fitted(rate, how)
        if rtt:
            mtu = values["mtu"].value if "mtu" in values else None
            delay = one_way_delay(rows, rtt, rate, lambda ip: ip, vantage.get("from") == "handshake", mtu)
            values["delay_ns"] = Fitted(delay, f"half the path round trip ({rtt} ns, from the {vantage.get('from')}) "
                                        "less its two packets' serialisation")
    else:
        goodput = d.goodput_bps or 0
        values["rate_bps"] = Fitted(max(int(goodput * 2), 1_000_000), "twice the goodput: too few packet pairs to measure")
        warnings.append("bottleneck rate not measured (too few back-to-back packets): twice the goodput assumed")
    flight = p.get("send_buffer_estimate") or p.get("max_in_flight")
    values["_path"] = Fitted({"rtt": rtt, "vantage": vantage.get("vantage"), "from": vantage.get("from"), "flight": flight},
                             "the path measurements the calibration re-reads per framing")


def bottleneck_rate(rows: pl.DataFrame | None, dir_: int, vantage: str | None,
                    wire: Callable[[int], int] = lambda ip: ip, idle_ns: int = 0,
                    pause_ns: int | None = None) -> tuple[int | None, str]:
    """The path's bottleneck rate in bit/s of wire bytes (`wire`: a datagram's bytes on the link,
    for a candidate framing) from packet spacing: at a tap after the bottleneck (receiver or
    middle) consecutive data packets arrive one serialisation time apart; at the sender, the ACKs
    come back at that spacing (the ACK clock, Jacobson 1988), each for the packets it covers.
    `idle_ns`: a window-limited sender's wait per ACK (the round trip the link stays idle while
    the whole window is out), taken off each ACK's gap. `pause_ns`: see bottleneck_rates."""
    return bottleneck_rates(rows, dir_, vantage, [(wire, idle_ns)], pause_ns=pause_ns)[0]


def bottleneck_rates(rows: pl.DataFrame | None, dir_: int, vantage: str | None,
                     variants: list[tuple[Callable[[int], int], int]],
                     percentile: float = RATE_PERCENTILE, pause_ns: int | None = None) -> list[tuple[int | None, str]]:
    """bottleneck_rate for each (wire, idle_ns) of `variants`, the packets paired once; the rate
    at `percentile` of the pairs'. At the sender's tap, with `pause_ns`: an ACK covering data sent
    that long or more after the ACK before it pairs with nothing: the sender paused between them (a
    writer's think time), so their gap holds the pause, not the path's pace (a 2000-byte write every
    300 ms read as an 82 kbit/s link). The latest data it covers counts: an ACK of a segment sent on
    the ACK before and of the next write's (Linux holding a 10 ms writer's every other write) holds
    the writer's pause too."""
    if rows is None or rows.is_empty():
        return [(None, "")] * len(variants)
    data = rows.filter((pl.col("dir") == dir_) & pl.col("new_data") & (pl.col("payload_len") > 0)
                       & ~pl.col("superframe")).sort("ts_ns")
    sizes = data["ip_len"].unique().to_list()

    def framed(df: pl.DataFrame, wire: Callable[[int], int]) -> pl.DataFrame:
        return df.with_columns(wire=pl.col("ip_len").replace_strict(sizes, [wire(int(x)) for x in sizes],
                                                                     return_dtype=pl.Int64))

    if vantage in ("receiver", "middle"):
        pairs = data.with_columns(gap=pl.col("ts_ns").diff()).filter(pl.col("gap") > 0)
        return [_rate(framed(pairs, wire), f"spacing of consecutive data packets at the {vantage} tap "
                      f"({pairs.height} pairs", percentile) for wire, _ in variants]
    acks = (rows.filter((pl.col("dir") == 1 - dir_) & pl.col("acks_new") & pl.col("ack_rel").is_not_null())
            .sort("ts_ns").select("ts_ns", "ack_rel").with_columns(gap=pl.col("ts_ns").diff()))
    if acks.height < MIN_RATE_SAMPLES or data.is_empty():
        return [(None, "")] * len(variants)
    # Each data packet belongs to the first ACK that covers its end.
    covered = (data.select("seq_end", "ip_len", pl.col("ts_ns").alias("sent_ns")).sort("seq_end")
               .join_asof(acks.sort("ack_rel").select("ack_rel", "ts_ns"), left_on="seq_end", right_on="ack_rel",
                          strategy="forward"))
    out = []
    for wire, idle_ns in variants:
        per_ack = framed(covered, wire).group_by("ts_ns").agg(pl.col("wire").sum(), pl.col("sent_ns").max())
        pairs = acks.join(per_ack, on="ts_ns")
        if pause_ns is not None:
            pairs = pairs.filter(~(pl.col("sent_ns") - (pl.col("ts_ns") - pl.col("gap")) >= pause_ns).fill_null(False))
        pairs = pairs.with_columns(gap=pl.col("gap") - idle_ns).filter(pl.col("gap") > 0)
        out.append(_rate(pairs, "spacing of the peer's ACKs at the sender tap per wire byte of the packets each "
                         f"covers ({pairs.height} ACKs", percentile))
    return out


def sustained_rates(rows: pl.DataFrame | None, dir_: int, vantage: str | None, span_ns: int,
                    wires: list[Callable[[int], int]]) -> list[tuple[int | None, str]]:
    """The rate the path carried the trace's data at, over spans of at least `span_ns` (a path
    round trip): per span from each ACK (or, at a tap after the bottleneck, each data packet), the
    wire bytes covered until the first ACK `span_ns` later over the time between; their median,
    per framing of `wires`. Where consecutive pairs mislead (at a Linux sender's tap each ACK covers
    a GSO burst and the ACKs bunch: a 50 Mbit/s path's 90th percentile is 4.2 Gbit/s), a round
    trip's worth of ACKs still moves at the bottleneck's rate when the window keeps the link busy;
    below it when a window held the flight (then the trace's goodput is what the run must carry)."""
    import numpy as np

    none = [(None, "")] * len(wires)
    if rows is None or rows.is_empty() or span_ns <= 0:
        return none
    data = rows.filter((pl.col("dir") == dir_) & pl.col("new_data") & (pl.col("payload_len") > 0)
                       & ~pl.col("superframe")).sort("ts_ns")
    if data.height < MIN_RATE_SAMPLES:
        return none
    if vantage in ("receiver", "middle"):
        per, what = data.select("ts_ns", "ip_len"), "consecutive data packets at the " + str(vantage) + " tap"
    else:
        acks = (rows.filter((pl.col("dir") == 1 - dir_) & pl.col("acks_new") & pl.col("ack_rel").is_not_null())
                .sort("ack_rel").select("ack_rel", "ts_ns"))
        if acks.height < MIN_RATE_SAMPLES:
            return none
        per = (data.select("seq_end", "ip_len").sort("seq_end")
               .join_asof(acks, left_on="seq_end", right_on="ack_rel", strategy="forward")
               .drop_nulls("ts_ns"))
        what = "the peer's ACKs at the sender tap, per wire byte of the packets they cover"
    sizes = per["ip_len"].unique().to_list()
    out = []
    for wire in wires:
        framed = (per.with_columns(wire=pl.col("ip_len").replace_strict(sizes, [wire(int(x)) for x in sizes],
                                                                         return_dtype=pl.Int64))
                  .group_by("ts_ns").agg(pl.col("wire").sum()).sort("ts_ns"))
        t, w = framed["ts_ns"].to_numpy(), framed["wire"].to_numpy()
        cum = np.concatenate([[0], np.cumsum(w)])
        j = np.searchsorted(t, t + span_ns)
        i = np.nonzero(j < len(t))[0]
        if len(i) < MIN_RATE_SAMPLES:
            out.append((None, ""))
            continue
        j = j[i]
        rates = (cum[j + 1] - cum[i + 1]) * 8e9 / (t[j] - t[i])
        out.append((int(np.median(rates)), f"the rate {what} moved at over spans of one round trip ({span_ns} ns; "
                    f"the median of {len(i)} spans)"))
    return out


def _rate(pairs: pl.DataFrame, how: str, percentile: float = RATE_PERCENTILE) -> tuple[int | None, str]:
    """The rate of (wire bytes, gap) samples: their high percentile, or None with too few."""
    if pairs.height < MIN_RATE_SAMPLES:
        return None, ""
    rates = pairs["wire"].cast(pl.Float64) * 8e9 / pairs["gap"].cast(pl.Float64)
    which = "the fastest pair" if percentile >= 1 else f"{int(percentile * 100)}th percentile"
    return int(rates.quantile(percentile)), f"{how}, {which})"


def one_way_delay(rows: pl.DataFrame | None, rtt: int, rate: int | None, wire: Callable[[int], int],
                  from_handshake: bool, mss_ip: int | None) -> int:
    """The path's one-way propagation delay: half the measured round trip less the time the two
    packets of that round trip took on the wire (the SYN and SYN-ACK, or a full segment and its
    ACK), so the serialisation is not counted twice once the model adds its own."""
    if not rate:
        return max(1, rtt // 2)
    if from_handshake and rows is not None:
        syns = rows.filter(pl.col("flag_syn")).sort("ts_ns")["ip_len"].head(2).to_list()
        sizes = syns if len(syns) == 2 else [44, 44]
    else:
        sizes = [mss_ip or 1500, 40]
    ser = sum(wire(int(x)) for x in sizes) * 8e9 / rate
    return max(1, int((rtt - ser) / 2))
