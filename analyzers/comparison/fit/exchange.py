"""Connections that exchange messages: request/response trials (naglemark), messages answered by
the peer, and the hosts' turnaround."""

from __future__ import annotations

import statistics
from typing import Any

import polars as pl

from ...findings import ConnectionAnalysis, DirectionAnalysis
from .buffers import DEFAULT_SNDBUF
from .model import Fitted


def sender_speaks_first(rows: pl.DataFrame, dir_: int) -> bool:
    first = rows.filter(pl.col("new_data") & (pl.col("payload_len") > 0)).sort("ts_ns").head(1)
    return not first.is_empty() and first["dir"][0] == dir_


def fit_messages(d: DirectionAnalysis, rows: pl.DataFrame, values: dict[str, Fitted]) -> None:
    lengths, _ = responses(rows, d.dir)
    replies, _ = responses(rows, 1 - d.dir)
    if lengths:
        values["write"] = Fitted(int(statistics.median(lengths)), f"median message: the sender's bytes between the "
                                 f"peer's answers ({len(lengths)} messages)")
    if replies:
        values["reply"] = Fitted(int(statistics.median(replies)), f"median answer of the peer ({len(replies)} answers)")


# naglemark's client asks with a request of this many bytes (native/src/sim/naglemark.rs
# REQUEST_BYTES); a peer whose requests are more than this many times larger writes messages of
# its own that the trial cannot carry.
TRIAL_REQUEST_BYTES = 16


MESSAGE_FACTOR = 4


# The bulk run with replies has one message size and one answer size: this share of each at its median.
UNIFORM_SHARE = 0.9


def peer_writes_messages(rows: pl.DataFrame, dir_: int) -> bool:
    """The peer's requests are messages of one size the trial cannot carry, each answered with one
    size (a server answering varied lengths, an HTTP one say, stays a trial: it replays them)."""
    requests, _ = responses(rows, 1 - dir_)
    answers, _ = responses(rows, dir_)
    if not requests or not answers or statistics.median(requests) <= MESSAGE_FACTOR * TRIAL_REQUEST_BYTES:
        return False
    return all(sum(1 for x in xs if x == statistics.median(xs)) >= UNIFORM_SHARE * len(xs) for xs in (requests, answers))


def fit_answers(conn: ConnectionAnalysis, d: DirectionAnalysis, rows: pl.DataFrame,
                 values: dict[str, Fitted]) -> None:
    """A bulk run with replies whose sender is the peer (it writes the messages) and whose
    receiver is the trace's data sender (it answers each): the stacks and Nagle settings swapped,
    the peer's messages as the writes, the sender's answers as the reply."""
    other = conn.peer_of(d)
    requests, _ = responses(rows, 1 - d.dir)
    answers, _ = responses(rows, d.dir)
    mine = values["personality"]
    theirs = values.get("receiver_personality", mine)
    values["personality"] = Fitted(theirs.value, f"the peer writes the messages, so the run's sender is its stack: "
                                   f"{theirs.source}")
    values["receiver_personality"] = Fitted(mine.value, f"the side that answers, the trace's data sender: "
                                            f"{mine.source}")
    nagle = values.pop("nagle", None)
    if nagle is not None and nagle.value is not None:
        values["receiver_nagle"] = Fitted(nagle.value, f"the answering side's: {nagle.source}")
    if other is not None and other.profile.get("nagle") == "off":
        values["nagle"] = Fitted("OFF", "the peer sent short segments while a short one was unacknowledged "
                                 "(its profile.nagle off)")
    sent = (other.profile.get("bytes") if other is not None else None) or sum(requests)
    values["bytes"] = Fitted(int(sent), "the new bytes the peer sent: its messages (its profile.bytes)")
    values["write"] = Fitted(int(statistics.median(requests)), f"the peer's median message: its bytes between the "
                             f"sender's answers ({len(requests)} messages)")
    values["reply"] = Fitted(int(statistics.median(answers)), f"the sender's median answer ({len(answers)} answers)")
    pers = theirs.value
    default = DEFAULT_SNDBUF.get(pers)
    if default:
        values["sndbuf"] = Fitted(default, f"the peer's messages ({values['write'].value} bytes) each fit under the "
                                  f"window, so no flight of its shows S: {pers}'s default send buffer ({default})")
    r = other.profile.get("peer_receive_window_max") if other is not None else None
    if r:
        values["rcvbuf"] = Fitted(int(r), "the largest window the answering side advertised (Moldeklev's R)")
    values["read"] = Fitted(int(r) if r else 65536, "the receive buffer (the reader takes what is there)")


def fit_request_response(d: DirectionAnalysis, rows: pl.DataFrame | None, values: dict[str, Fitted],
                          warnings: list[str]) -> None:
    p = d.profile
    lengths, gaps = responses(rows, d.dir) if rows is not None else ([], [])
    if not lengths:
        lengths = [int(p["bytes"])]
        warnings.append("no request/response boundaries found: one response of all the bytes")
    values["lengths"] = Fitted(lengths, f"{len(lengths)} responses: the sender's new bytes between the peer's requests")
    fit_turnaround(rows, d.dir, gaps, values)
    pers = values["personality"].value
    nagle = values.get("nagle")
    if nagle is not None and nagle.value == "OFF":
        values["variant"] = Fitted("OFF", nagle.source)
    else:
        # Linux's Nagle test is Minshall's (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay).
        values["variant"] = Fitted("MINSHALL" if pers == "linux" else "NAGLE",
                                   f"Nagle as {pers} implements it")
    s = p.get("send_buffer_estimate")
    values["sockbuf"] = Fitted(max(int(s), 65536) if s else 65536,
                               "the flight's plateau, at least 64 KB (a response rarely fills the buffer)")
    values["app_buf"] = _app_buf(p, rows, d.dir, lengths)
    if p.get("peer_receive_window_max"):
        values["_peer_window"] = Fitted(int(p["peer_receive_window_max"]), "the largest window the peer advertised")
    if rows is not None:
        fit_host_pace(d, rows, values)


# The sender paced its own responses when most left this many times slower than its fastest.
HOST_PACE_FACTOR = 4


# RTT samples this many times the path's round trip: the peer's delayed ACKs (a Nagle hold) in them.
HELD_RTT_FACTOR = 10


def fit_host_pace(d: DirectionAnalysis, rows: pl.DataFrame, values: dict[str, Fitted]) -> None:
    """Whether a Linux sender paced its own responses, likely because its RTT samples took in
    Nagle holds (docs/comparison.md, "Request/response captures": the mechanism is inferred).

    Linux keeps the bytes a socket has queued in the host to about 1 ms at its pacing rate, at
    least two segments (TCP small queues, tcp_small_queue_check), and the pacing rate is
    cwnd x MSS / srtt: an RTT sample that waited for the peer's delayed ACK behind a Nagle hold
    (40 ms and more) raises srtt, and the budget falls to two segments per release of the host's
    queue. Then the responses' full segments leave spaced out with no ACK between them, which no
    link after the sender's tap causes. The simulator has no such pace: the calibration makes it up
    with a slower link, which is right for the fitted run, but a change that removes the holds
    (TCP_NODELAY, TCP_CORK) should remove the pace too (the capture pair's TCP_NODELAY side shows
    none), so those what-ifs run at the rate the unpaced responses left at (`_host_pace`)."""
    p = d.profile
    full = p.get("common_segment") or p.get("max_segment")
    path = values.get("_path")
    hs = (path.value.get("rtt") if path else None) or 0
    if values["personality"].value != "linux" or not full or not hs:
        return
    rates = sorted(response_emission_rates(rows, d.dir, int(full)))
    if len(rates) < MIN_PROMPT_ACKS:
        return
    median, fast = rates[len(rates) // 2], rates[int(0.9 * (len(rates) - 1))]
    samples = rows.filter((pl.col("dir") == d.dir) & pl.col("rtt_ns").is_not_null())["rtt_ns"]
    held = int((samples >= HELD_RTT_FACTOR * hs).sum()) if samples.len() else 0
    if median * HOST_PACE_FACTOR > fast or not held:
        return
    values["_host_pace"] = Fitted(
        {"unpaced_rate": int(fast), "paced_rate": int(median)},
        f"the sender paced its responses: of {len(rates)} responses whose full segments no ACK interrupted, half "
        f"left at {median / 1e6:.0f} Mbit/s or slower and a tenth at {fast / 1e6:.0f} Mbit/s or faster, and {held} of "
        f"its RTT samples waited {HELD_RTT_FACTOR} round trips or more (delayed ACKs behind Nagle holds, which raise "
        "Linux's srtt and likely shrank its pacing rate and small-queue budget)")


# At least this many prompt ACKs (ACKs of two or more segments) for their median to count.
MIN_PROMPT_ACKS = 8


# The prompt ACKs took at least this share of the turnaround: the client asked again at once.
ANSWERED_AT_ONCE = 0.9


# A loaded round trip this much above the handshake's is tried as the path's by the calibration.
LOADED_RTT_MARGIN = 1.05


def fit_turnaround(rows: pl.DataFrame | None, dir_: int, gaps: list[int], values: dict[str, Fitted]) -> None:
    """The client's think time, and the round trip the exchanges met. At the sender's tap the time
    from a response's last byte to the next request (the turnaround) is the last byte's trip, the
    client's think time and the request's trip: the think time is what it holds beyond one round
    trip. Where the peer's ACKs of two or more segments (the newest segment's trip and the ACK's, no
    think time in them) took about as long as the turnaround, the client asked again at once and
    the turnaround is the round trip the responses met under load, which may be longer than the
    handshake's (queueing; a user-space link emulator that reads nothing while it sleeps until the
    next packet's deadline delays a packet arriving behind another by up to its whole delay): kept
    for the calibration to try as the path's (calibrate.request_response.response_delays). Else the think time is the
    turnaround less the handshake's round trip."""
    path = values.get("_path")
    hs = (path.value.get("rtt") if path else None) or 0
    if not gaps:
        values["think_ns"] = Fitted(0, "no turnaround seen (no request after a response): none")
        return
    turnaround = int(statistics.median(gaps))
    prompt = _prompt_ack_delays(rows, dir_) if rows is not None else []
    what = f"the median turnaround ({turnaround} ns from a response's last byte to the next request, {len(gaps)} seen)"
    if len(prompt) >= MIN_PROMPT_ACKS and statistics.median(prompt) >= ANSWERED_AT_ONCE * turnaround:
        ack = int(statistics.median(prompt))
        loaded = max(min(turnaround, ack), hs)
        # (At least none: the handshake's round trip may exceed a turnaround the tap saw, as on a
        # capture filtered to data, where what reads as the handshake is no round trip.)
        values["think_ns"] = Fitted(max(0, turnaround - loaded), f"{what} less one round trip as the responses met it: the "
                                    f"median delay of the peer's {len(prompt)} ACKs of two or more segments ({ack} ns) "
                                    "is about as long, so the client asked again at once")
        if path and hs and loaded > LOADED_RTT_MARGIN * hs:
            values["_path"] = Fitted({**path.value, "loaded_rtt": loaded,
                                      "loaded_rtt_source": f"{what}, the ACKs of two or more segments as long"},
                                     path.source)
        return
    values["think_ns"] = Fitted(max(0, turnaround - hs), f"{what} less the handshake's round trip ({hs} ns)"
                                + (f": the peer's ACKs of two or more segments took less ({len(prompt)} ACKs), so "
                                   "the turnaround holds a think time" if prompt else ""))


def _prompt_ack_delays(rows: pl.DataFrame, dir_: int) -> list[int]:
    """The peer's ACKs of two or more of the sender's segments: each one's delay after the newest
    segment it covers (the state table's ack_delay_ns)."""
    acks = rows.filter((pl.col("dir") != dir_) & (pl.col("ack_segments") >= 2) & pl.col("ack_delay_ns").is_not_null())
    return acks["ack_delay_ns"].to_list()


# The first short segment ends at the same offset in at least this share of the responses.
COMMON_FIRST_WRITE = 0.25


def _app_buf(p: dict[str, Any], rows: pl.DataFrame | None, dir_: int, lengths: list[int]) -> Fitted:
    """The server's write size. On an idle connection a response's first write goes out whole
    (Nagle lets it go): its last segment is short unless the write is whole segments, and the
    writes after it coalesce behind it. So where a response's first short segment other than its
    last ends at the same offset from the response's start in many responses, that offset is a
    write; where the responses start with a full segment and hold no short one but their last,
    each was written at once (the writes at least the largest response); else the bytes per
    PSH-marked segment."""
    pushes = p.get("push_segments") or 0
    full = p.get("common_segment") or p.get("max_segment")
    shape = _response_shapes(rows, dir_, int(full)) if rows is not None and full else None
    if shape is not None and lengths:
        offsets, starts_full, one_short, n = shape
        if offsets:
            offset, count = max(sorted(offsets.items()), key=lambda kv: kv[1])
            if count >= COMMON_FIRST_WRITE * n and offset >= 512:
                return Fitted(offset, f"the first write of a response: in {count} of {n} responses the first short "
                              f"segment before the last ends {offset} bytes in (the first write leaves whole on an "
                              "idle connection)")
        if n and starts_full >= n / 2 and one_short >= 0.9 * n:
            return Fitted(max(lengths), f"the largest response ({max(lengths)} bytes): {starts_full} of {n} responses "
                          f"start with a full segment and {one_short} hold no short segment but their last, so "
                          "each was written at once")
    app_buf = int(round(sum(lengths) / pushes)) if pushes else 4096
    return Fitted(app_buf, f"bytes per PSH-marked segment ({pushes} pushes)")


def _response_shapes(rows: pl.DataFrame, dir_: int, full: int) -> tuple[dict[int, int], int, int, int] | None:
    """Of the sender's responses: how many end their first short segment other than the last at
    each offset from the response's start, how many start with a full segment, how many hold no
    short segment but their last, and how many there are."""
    new = rows.filter(pl.col("new_data") & (pl.col("payload_len") > 0)).sort("ts_ns")
    if new.is_empty():
        return None
    new = new.with_columns(msg=(pl.col("dir") != dir_).cum_sum()).filter(pl.col("dir") == dir_)
    new = new.with_columns(end=pl.col("payload_len").cum_sum().over("msg"),
                           last=pl.col("ts_ns") == pl.col("ts_ns").max().over("msg"))
    per = new.group_by("msg").agg(first=pl.col("payload_len").first(),
                                  early_shorts=((pl.col("payload_len") < full) & ~pl.col("last")).sum())
    early = (new.filter((pl.col("payload_len") < full) & ~pl.col("last")).group_by("msg")
             .agg(pl.col("end").first()))
    offsets: dict[int, int] = {}
    for e in early["end"].to_list():
        offsets[int(e)] = offsets.get(int(e), 0) + 1
    return (offsets, int((per["first"] >= full).sum()), int((per["early_shorts"] == 0).sum()), per.height)


def responses(rows: pl.DataFrame, dir_: int) -> tuple[list[int], list[int]]:
    """The sender's responses as (lengths, think times): the new bytes sent between two of the
    peer's requests (compare.messages), and the time from a response's last byte to the next request."""
    import bisect

    from ..compare import messages

    msgs = messages(rows, dir_)
    requests = (rows.filter((pl.col("dir") != dir_) & pl.col("new_data") & (pl.col("payload_len") > 0))
                .sort("ts_ns")["ts_ns"].to_list())
    gaps = []
    for m in msgs:
        i = bisect.bisect_right(requests, m["last_ns"])
        if i < len(requests):
            gaps.append(requests[i] - m["last_ns"])
    return [m["bytes"] for m in msgs], gaps


def response_emission_rates(rows: pl.DataFrame, dir_: int, full: int) -> list[float]:
    """Per response of three or more full segments that no ACK of new data interrupted: the rate
    (bit/s of IP bytes) its full segments left the sender's tap at, from the first to the last."""
    new = rows.filter((pl.col("new_data") & (pl.col("payload_len") > 0)) | ((pl.col("dir") != dir_)
                                                                            & pl.col("acks_new"))).sort("ts_ns")
    if new.is_empty():
        return []
    new = new.with_columns(msg=((pl.col("dir") != dir_) & pl.col("new_data") & (pl.col("payload_len") > 0)).cum_sum())
    out = []
    for _, g in new.group_by("msg", maintain_order=True):
        fulls = g.filter((pl.col("dir") == dir_) & (pl.col("payload_len") >= full))
        if fulls.height < 3:
            continue
        t0, t1 = fulls["ts_ns"][0], fulls["ts_ns"][-1]
        acked = g.filter((pl.col("dir") != dir_) & pl.col("acks_new") & (pl.col("ts_ns") > t0) & (pl.col("ts_ns") < t1))
        if acked.height or t1 <= t0:
            continue
        out.append(float(fulls["ip_len"][1:].sum()) * 8e9 / (t1 - t0))
    return out
