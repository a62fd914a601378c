"""The stack (simulator personality): what the trace shows of it, and which stacks it rules out."""

from __future__ import annotations

from typing import Any

import polars as pl

from ...findings import ConnectionAnalysis, DirectionAnalysis
from .model import Fitted

# personality_of's answer when a stack shows nothing that tells it apart.
GENERIC_STACK = "no RFC 1323/2018 options and nothing more specific: the 4.4BSD reference stack"


SUNOS_COPIES = "short segments in multiples of 4096 bytes (SunOS 4 sosend copies)"


def sunos_copies(profile: dict[str, Any]) -> bool:
    """Short segments a whole number of SunOS 4's 4096-byte sosend copies long."""
    return any(s % 4096 == 0 for s in profile.get("common_short_segments") or [])


def personality_of(profile: dict[str, Any], delayed_ack: dict[str, Any] | None) -> Fitted:
    """The simulator personality closest to what the trace shows of a stack.

    SACK and timestamps in the SYN mark a modern stack (Linux offers both by default; FreeBSD 4
    timestamps alone); without either the stack predates RFC 1323/2018: a 200 ms delayed-ACK tick
    means the BSD family, and among it an MSS rounded down to a 2048-byte cluster is 4.4BSD's
    tcp_mss (docs/tcp-rules.md#mss-and-buffer-sizing), 4096-byte write pieces SunOS's sosend.
    """
    guess = (profile.get("stack") or {}).get("guess", "unknown")
    sack, ts = profile.get("sack"), profile.get("timestamps")
    timer = (delayed_ack or {}).get("timer")
    if sack:
        return Fitted("linux", "SACK offered in both SYNs (a modern stack; Linux offers it by default)")
    hz = profile.get("_ts_hz")
    if ts and sack is False and hz is not None and hz >= 500:
        return Fitted("linux", f"timestamps ticking at {hz:.0f} Hz (Linux's 1 ms clock), SACK switched off")
    if ts and sack is False:
        return Fitted("freebsd4", "timestamps without SACK (RFC 1323 but not RFC 2018: FreeBSD 4; Linux offers both)"
                      + (f"; timestamps tick at {hz:.0f} Hz (FreeBSD's 10 ms clock)" if hz else ""))
    if ts:
        return Fitted("linux", "timestamps, SACK not known (a SYN missed): Linux, the common modern stack")
    if guess == "linux":
        return Fitted("linux20", "no SACK or timestamps, Linux-like behaviour (stack guess linux): Linux 2.0")
    mss = profile.get("max_segment") or 0
    offered = [x for x in (profile.get("mss_advertised"), profile.get("mss_offered_by_peer")) if x]
    rounded = min(offered) // 2048 * 2048 if offered else mss
    # The largest segment the MSS offered rounded down to a cluster: a buffer or a write smaller than
    # the MSS also gives segments that are multiples of 2048, but not that one.
    if mss > 2048 and mss % 2048 == 0 and mss == rounded:
        return Fitted("bsd44", f"MSS {mss} a multiple of the 2048-byte cluster (4.4BSD tcp_mss rounding)"
                      + (f" below the {min(offered)} offered" if offered and min(offered) != mss else ""))
    if sunos_copies(profile):
        return Fitted("sunos41", SUNOS_COPIES)
    if timer == "tick":
        return Fitted("bsd44", "a 200 ms delayed-ACK tick and no RFC 1323 options (BSD family)")
    return Fitted("bsd44", GENERIC_STACK)


def ts_clock_hz(rows: pl.DataFrame | None, dir_: int) -> float | None:
    """How fast a sender's TCP timestamps tick (RFC 7323 leaves the clock to the stack: Linux
    1000 Hz, FreeBSD 4 100 Hz): TSval advance over wall time, over at least 100 ms."""
    if rows is None:
        return None
    ts = rows.filter((pl.col("dir") == dir_) & pl.col("opt_ts_val").is_not_null()).sort("ts_ns")
    if ts.height < 2:
        return None
    span = ts["ts_ns"][-1] - ts["ts_ns"][0]
    ticks = (int(ts["opt_ts_val"][-1]) - int(ts["opt_ts_val"][0])) % (1 << 32)
    return ticks / (span / 1e9) if span >= 100_000_000 else None


# Stacks without RFC 1323/2018 options, by how they open the congestion window: 4.4BSD and Tru64
# slow-start from one segment; SunOS 4.1 (Tahoe without slow start on the LAN) and Linux 2.0 send
# what the window allows at once (docs/tcp-rules.md; personality.rs initial_cwnd_segments).
SLOW_START_STACKS = ("bsd44", "tru64")


OPEN_START_STACKS = ("sunos41", "linux20")


OLD_STACKS = SLOW_START_STACKS + OPEN_START_STACKS


def first_flight(rows: pl.DataFrame | None, dir_: int, profile: dict[str, Any]) -> Fitted | None:
    """Whether the sender slow-started: the new bytes it sent before the peer first acknowledged
    data, against the room it had (the peer's first window and the flight's plateau). At most one
    MSS while two fitted: slow start; more than one MSS: none. None when the room did not tell."""
    if rows is None:
        return None
    acks = rows.filter((pl.col("dir") == 1 - dir_) & (pl.col("ack_rel") > 1))
    if acks.is_empty():
        return None
    first_ack = acks["ts_ns"].min()
    sent = int(rows.filter((pl.col("dir") == dir_) & pl.col("new_data") & (pl.col("payload_len") > 0)
                           & (pl.col("ts_ns") < first_ack))["payload_len"].sum())
    offers = [x for x in (profile.get("mss_advertised"), profile.get("mss_offered_by_peer")) if x]
    mss = min(offers) if offers else None
    windows = rows.filter((pl.col("dir") == 1 - dir_) & pl.col("win_scaled").is_not_null())["win_scaled"]
    # A first window of zero (the peer's buffer full when the capture began) leaves no room to tell.
    rooms = [x for x in (int(windows[0]) if windows.len() else None, profile.get("send_buffer_estimate")) if x]
    room = min(rooms) if rooms else None
    if not mss or not sent or not room:
        return None
    if sent > mss:
        return Fitted(False, f"{sent} bytes sent before the first ACK, more than one MSS ({mss}): no slow start")
    if room >= 2 * mss:
        return Fitted(True, f"{sent} bytes sent before the first ACK, one MSS ({mss}) while {room} fitted: slow start")
    return None


# Stacks that round the MSS down to whole mbuf clusters when it exceeds one (tcp_mss; personality.rs
# mclbytes): 4.4BSD's 2048-byte clusters, Tru64's 8192.
MSS_CLUSTER = {"bsd44": 2048, "tru64": 8192}


# Linux 2.0 never offers a window above 32767 (personality.rs max_window).
LINUX20_MAX_WINDOW = 32767


BSD_TICK_NS = 200_000_000


def ttl_ruled_out(ttl: int | None, at_host: bool) -> dict[str, str]:
    """Pre-RFC 1323 stacks a host's IP TTL rules out (simulate.pcap_writer.PERSONALITY_TTL: SunOS
    4.1 and OSF/1 kept 4.3BSD-Tahoe's TCP_TTL of 60, 4.4BSD and Linux send 64). A TTL of 61 to 64
    left an initial 64; one of 60 is the initial TTL only at the host's own tap (`at_host`):
    elsewhere it may be 64 less four routers."""
    from stallscope.simulate.pcap_writer import PERSONALITY_TTL

    if ttl is None or not (60 <= ttl <= 64) or (ttl == 60 and not at_host):
        return {}
    initial = 60 if ttl == 60 else 64
    return {s: (f"packets with a TTL of {ttl}" + (" at the host's own tap" if ttl == 60 else "")
                + f": an initial TTL of {initial}, not {s}'s {PERSONALITY_TTL[s]}")
            for s in OLD_STACKS if PERSONALITY_TTL[s] != initial}


def stacks_ruled_out(profile: dict[str, Any], ttl: int | None = None, at_host: bool = False) -> Fitted | None:
    """Pre-RFC 1323 stacks the trace rules out (None: none): a segment larger than the offered
    MSS rounded down to the stack's cluster (4.4BSD, Tru64); a largest peer window that is not a
    whole number of 4.4BSD's segments (it rounds the receive buffer up to them); a window above
    32767 (Linux 2.0); the host's IP TTL (`ttl`, seen at its own tap when `at_host`: ttl_ruled_out).
    The receiver is taken to run the sender's stack, as the calibration tries them."""
    offered = [x for x in (profile.get("mss_advertised"), profile.get("mss_offered_by_peer")) if x]
    biggest, window = profile.get("max_segment"), profile.get("peer_receive_window_max")
    out: dict[str, str] = dict(ttl_ruled_out(ttl, at_host))
    if offered:
        mss = min(offered)
        for stack, cluster in MSS_CLUSTER.items():
            used = mss // cluster * cluster if mss > cluster else mss
            if biggest and biggest > used:
                out[stack] = f"{biggest}-byte segments, more than {stack}'s {used} (the {mss} offered in {cluster}s)"
        used = mss // 2048 * 2048 if mss > 2048 else mss
        if "bsd44" not in out and window and used and window % used:
            out["bsd44"] = f"a largest window of {window}, not whole {used}-byte segments as 4.4BSD rounds it"
    if window and window > LINUX20_MAX_WINDOW:
        out["linux20"] = f"a window of {window}, above Linux 2.0's {LINUX20_MAX_WINDOW}"
    # The peer's delayed ACKs locked to a free-running 200 ms clock (the BSD tcp_fasttimo tick:
    # stalls.learn_tick), or spread over its period: Linux 2.0's timer is a one-shot ATO rounded
    # to a 10 ms jiffy (docs/tcp-rules.md#delayed-ack-timers).
    tick = profile.get("_peer_tick") or {}
    timer = (profile.get("peer_delayed_ack") or {}).get("timer")
    if "linux20" not in out and (tick.get("period_ns") == BSD_TICK_NS or timer == "tick"):
        out["linux20"] = ("the peer's delayed ACKs on a 200 ms tick ("
                          + (f"{tick['acks_on_phase']} of {tick['acks_held']} held ACKs in one phase window"
                             if tick.get("period_ns") == BSD_TICK_NS else "delays spread over its period")
                          + "), not Linux 2.0's one-shot timer")
    if not out:
        return None
    return Fitted(tuple(sorted(out)), "; ".join(f"not {k}: {v}" for k, v in sorted(out.items())))


def classic_nagle_broken(rows: pl.DataFrame | None, dir_: int) -> Fitted | None:
    """Short segments the classic Nagle rule would have held, sent anyway (None: too few): new
    data below the full segment that ended its burst, sent while data was unacknowledged, with
    room in the peer's window for a full one (not a window edge, unless pushed: a write's tail
    that filled the window) and shorter than half the largest
    window (BSD's tcp_output sends a segment of half the window whatever Nagle says). As many as
    the analyzer calls Nagle off on (inference.NAGLE_OFF_MIN and NAGLE_OFF_SHARE): one can race
    an ACK."""
    from ...inference import NAGLE_OFF_MIN, NAGLE_OFF_SHARE

    if rows is None:
        return None
    # A short segment the sender followed at once with more new data was cut by segmentation
    # (a buffer or copy boundary), not let go past Nagle: only the last of a burst counts.
    both = rows.sort("ts_ns", maintain_order=True).with_columns(
        _burst_goes_on=((pl.col("dir").shift(-1) == pl.col("dir")) & pl.col("new_data").shift(-1)
                        & (pl.col("payload_len").shift(-1) > 0)).fill_null(False))
    st = both.filter((pl.col("dir") == dir_) & (pl.col("payload_len") > 0) & ~pl.col("superframe"))
    if st.height < 2:
        return None
    full = int(st["payload_len"].max())
    window = st["peer_window"].max()
    if not window:
        return None
    st = st.with_columns(_prev_flight=(pl.col("snd_max").shift(1) - pl.col("snd_una")).clip(lower_bound=0))
    short = st.filter(pl.col("new_data") & (pl.col("payload_len") < full))
    # A pushed segment ends its write: one that filled the window exactly was the write's tail, not
    # what a window cut from more data (a 32768-byte message in a 32768-byte window, its 648-byte
    # tail sent with the write's own full segments unacknowledged: Linux 2.0 with TCP_NODELAY).
    room = pl.col("snd_una") + pl.col("peer_window") - pl.col("seq_end")
    broke = short.filter((pl.col("_prev_flight") > 0) & ~pl.col("_burst_goes_on")
                         & (pl.col("payload_len") < int(window) // 2)
                         & ((room >= full - pl.col("payload_len")) | (pl.col("flag_psh") & (room >= 0))))
    if broke.height < max(NAGLE_OFF_MIN, NAGLE_OFF_SHARE * short.height):
        return None
    return Fitted(broke.height, f"{broke.height} of {short.height} short segments went out while data was "
                  "unacknowledged, with room in the window for a full segment and shorter than half of it: "
                  "the classic rule (every pre-RFC 1323 stack's) holds them")


def fit_stack(d: DirectionAnalysis, conn: ConnectionAnalysis, values: dict[str, Fitted],
               rows: pl.DataFrame | None = None) -> None:
    p = dict(d.profile)
    p["_ts_hz"] = ts_clock_hz(rows, d.dir)
    values["personality"] = personality_of(p, p.get("peer_delayed_ack"))
    named = values["personality"]
    copies = sunos_copies(p)
    start = first_flight(rows, d.dir, p)
    if values["personality"].value in OLD_STACKS:
        if start is not None:
            values["slow_start"] = start
        # Without SunOS's 4096-byte copies, Linux 2.0 first (personality_of names SunOS for them,
        # but after the cluster-rounded MSS a SunOS segment of two copies can show).
        opened = OPEN_START_STACKS if copies else OPEN_START_STACKS[::-1]
        allowed = ((SLOW_START_STACKS if start.value else opened) if start is not None
                   else (values["personality"].value, "sunos41", "bsd44", "tru64", "linux20"))
        # The windows a host advertises tell of its own stack: the sender's own for the sender,
        # where it showed; the peer's for the receiver (a Linux 2.0 client of a newer server).
        other = conn.peer_of(d)
        own = (other.profile.get("peer_receive_window_max") if other is not None else None) or None

        def ttl_of(x: DirectionAnalysis | None) -> tuple[int | None, bool]:
            """A host's TTL, and whether the tap sat at that host."""
            if x is None:
                return None, False
            return x.profile.get("ttl_max"), (conn.vantage.get(str(x.dir)) or {}).get("vantage") == "sender"

        ruled = stacks_ruled_out({**p, "peer_receive_window_max": own} if own else p, *ttl_of(d))
        # (The receiver's TTL where it tells something of its stack: a TTL of 60 away from it does not.)
        if own or ttl_ruled_out(*ttl_of(other)):
            theirs = stacks_ruled_out(p, *ttl_of(other))
            if theirs is not None and theirs.value != (ruled.value if ruled is not None else ()):
                values["receiver_stacks_ruled_out"] = Fitted(theirs.value, "for the receiver, by its own window: "
                                                             + theirs.source)
        if ruled is not None:
            values["stacks_ruled_out"] = ruled
            by_ttl = tuple(sorted(ttl_ruled_out(*ttl_of(d))))
            if by_ttl:
                # The calibration still searches from them: another start can reach the right
                # stack's closest run by another way (calibrate.refine).
                values["_stacks_ruled_out_by_ttl"] = Fitted(by_ttl, "the sender's TTL")
            allowed = tuple(x for x in allowed if x not in ruled.value) or allowed
        if values["personality"].value not in allowed:
            first = values["personality"]
            why = "; ".join(x.source for x in (start, ruled) if x is not None)
            values["personality"] = Fitted(allowed[0], f"{why}: {' or '.join(dict.fromkeys(allowed))}, not "
                                           f"{first.value} ({first.source})"
                                           + (f"; {SUNOS_COPIES}" if allowed[0] == "sunos41" and copies else ""))
            if allowed[0] == "sunos41" and copies:
                # Still named by the segments: SunOS's copies, once the first guess is ruled out.
                named = values["personality"]
    if values["personality"] is named and named.source != GENERIC_STACK and named.value in OLD_STACKS:
        # A pre-1323 stack the segments named (a cluster-rounded MSS, SunOS's copies), not one
        # left by elimination: the calibration keeps it ahead of the others (calibrate.stack_groups.stack_candidates).
        values["_stack_named"] = Fitted(named.value, named.source)
    other = conn.peer_of(d)
    if other is not None:
        # The receiver's stack: its own profile, and its delayed-ACK timer as the sender saw it.
        # A receiver that sends no data shows little of its stack; with nothing that tells it
        # apart, it is taken to be the sender's (two hosts of one site run one system).
        rp = dict(other.profile)
        rp.setdefault("sack", p.get("sack"))
        rp["_ts_hz"] = ts_clock_hz(rows, other.dir)
        mine = values["personality"].value
        theirs = personality_of(rp, p.get("peer_delayed_ack"))
        generic = theirs.source == GENERIC_STACK
        if theirs.value == mine or (generic and mine in ("sunos41", "bsd44", "tru64")):
            values["receiver_personality"] = Fitted(mine, f"the sender's stack: {theirs.source}")
        else:
            values["receiver_personality"] = theirs
    if p.get("nagle") == "off":
        values["nagle"] = Fitted("OFF", "short segments sent while a short one was unacknowledged (profile.nagle off)")
    elif p.get("nagle") == "on":
        values["nagle"] = Fitted(None, "Nagle on as the personality does it (profile.nagle on)")
        broke = classic_nagle_broken(rows, d.dir)
        if broke is not None:
            values["_classic_nagle_broken"] = broke
    if p.get("sack") is not None:
        values["sack"] = Fitted(bool(p["sack"]), "SACK permitted in the SYNs" if p["sack"] else "no SACK in the SYNs")
