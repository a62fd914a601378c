"""Connection findings about the path rather than one stall: an MSS advertised but never used
(GigaTCP's tcp_mssopt / tcp_mss bug), a path MTU black hole (full-size segments resent with a
doubling timer until the MSS falls or the connection dies), and jumbo receive-slot exhaustion (only
large frames lost, in bursts, on a jumbo-frame path: GigaTCP's "no free jumbo buffers").

`findings(rows, profile)` reads one direction's packets (its data and the peer's ACKs).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from stallscope.analyzers.causes.common import Rows, rows_of
from stallscope.analyzers.causes.loss import ATM_MTU_LOW, STANDARD_IP_MTU, link_mtu
from stallscope.analyzers.inference import WRITE_SIZED_SHARE
from stallscope.analyzers.sender_state import TIMEOUT_FLOOR_NS
from stallscope.analyzers.vantage import Timing
from stallscope.vocabulary import Cause

# An MSS this far below what both sides advertised, over this many full segments, was never used.
# Below 0.75: BSD's rounding of the MSS down to mbuf clusters (9140 -> 8192) stays above it.
MSS_UNUSED_SHARE = 0.75
MSS_MIN_SEGMENTS = 20
TIMESTAMP_OPTION = 12
# A black hole: the same full-size segment timed out this many times in a row.
BLACKHOLE_RESENDS = 3
# Seen from the receiver: the first data came this long after the handshake (a retransmission
# timeout at least), or data was sent that never arrived while small packets did.
FAR_SIDE_FIRST_DATA_NS = 1_000_000_000
# At the receiver, data that follows the handshake within this share of the RTT was not preceded
# by a lost attempt (an ICMP round trip to a hop, a timeout).
PROMPT_SHARE = 0.25


# Where the loss is not shown size-selective (below), the losses must come in bursts: this many
# frames resent per timeout on average.
BURST_PER_TIMEOUT = 2
# Ethernet's usual jumbo MTU: full segments filling it name the link without a SYN's MSS.
JUMBO_ETHERNET_MTU = 9000
# FDDI's IP MTU (RFC 1390).
FDDI_MTU = 4352
# Small frames a size-blind loss would have taken (at the large frames' loss rate) for "none lost"
# to show the loss size-selective: with 3 expected, none lost happens by chance 5 % of the time.
SELECTIVE_EXPECTED = 3


# An IPv4 id counter that steps by 1 per packet shows packets the sender sent that never arrived.
ID_STEP_MAX = 64


# RFC 879's default MSS: a datagram of 576 bytes crosses every IPv4 path, so what a black hole drops
# carried more; bytes a sender numbered past all data seen, as many as this, were a packet lost.
MIN_DROPPED_PAYLOAD = 536

# Taps where a packet lost on the path may be lost before the tap saw it.
AWAY_FROM_SENDER = ("receiver", "middle")


def _ids_skipped_before_data(own: pl.DataFrame) -> int | None:
    """Packets the sender numbered but the tap never saw before its first data (Linux counts IPv4
    ids per connection). None when the ids do not count up (IPv6, zero or random ids): they cannot
    tell."""
    data_at = own.filter(pl.col("payload_len") > 0)["ts_ns"].min()
    ids = own.filter(pl.col("ts_ns") <= data_at)["ip_id"].to_list() if data_at is not None else []
    if len(ids) < 2 or any(i is None for i in ids):
        return None
    steps = [(b - a) % 65536 for a, b in zip(ids, ids[1:])]
    if any(st == 0 or st > ID_STEP_MAX for st in steps):
        return None
    return sum(st - 1 for st in steps)


def _first_data_delay(own: pl.DataFrame) -> int | None:
    after_syn = own.filter(~pl.col("flag_syn"))
    data = own.filter(pl.col("payload_len") > 0)
    if after_syn.height == 0 or data.height == 0:
        return None
    return int(data["ts_ns"].min() - after_syn["ts_ns"].min())


def findings(own: Rows, profile: dict[str, Any], timing: Timing | None = None) -> list[tuple[str, float, dict[str, Any]]]:
    """(cause, confidence, evidence) for each path finding of one direction; `own` holds that
    direction's packets, in time order (or reads them when a check needs them); `timing` says where
    the tap was."""
    out = []
    for check in (_pmtu_blackhole, _far_side_blackhole, _mss_mismatch, _jumbo_slots):
        found = check(own, profile, timing)
        if found is not None:
            out.append(found)
            break  # the first path cause explains the lost large segments; the rest would repeat it
    return out


def _mss_mismatch(rows: Rows, p: dict[str, Any], timing: Timing | None):
    offered = [v for v in (p.get("mss_offered_by_peer"), p.get("mss_advertised")) if v]
    seg = p.get("max_segment") or 0
    if not offered or not seg or p.get("superframes"):
        return None
    usable = min(offered) - (TIMESTAMP_OPTION if p.get("timestamps") else 0)
    peer_window = p.get("peer_receive_window_max") or 0
    if p.get("window_known", True) and 0 < peer_window < 2 * usable:
        # The peer's window, not the MSS, sized the segments: Linux cuts segments to half the
        # largest window the peer offered (tcp_bound_to_half_wnd), and no sender exceeds the window.
        return None
    # Only a bulk sender shows its MSS: it had several full segments out at once, and they were
    # not each a write of their own (PSH on most: the application's writes sized them, NODELAY).
    bulk = (p.get("max_in_flight") or 0) >= 4 * seg
    if not (bulk and seg < MSS_UNUSED_SHARE * usable):
        return None  # (the last test below, read first: no query where it cannot pass)
    own = rows_of(rows)
    full = own.filter(pl.col("payload_len") == seg).height
    pushed = own.filter((pl.col("payload_len") == seg) & pl.col("flag_psh")).height
    if full and pushed > WRITE_SIZED_SHARE * full:
        return None
    far = timing is not None and timing.vantage in AWAY_FROM_SENDER
    if far:
        # From the receiver a segment lost for its size is invisible, and from a tap in the middle
        # too where the hop that drops it lies before the tap. IPv4 ids that count up with
        # none skipped before the first data show nothing was sent and lost (a larger attempt
        # would have taken an id); where the ids cannot tell, only data that came right behind the
        # handshake shows it (path jitter can delay it: then no finding, never a false one).
        skipped = _ids_skipped_before_data(own)
        if skipped:
            return None
        if skipped is None:
            first = _first_data_delay(own)
            if first is None or not timing.path_rtt_ns or first > PROMPT_SHARE * timing.path_rtt_ns:
                return None
    if seg < MSS_UNUSED_SHARE * usable and full >= MSS_MIN_SEGMENTS and bulk:
        return (Cause.MSS_MISMATCH.value, 0.5 if far else 0.8, {
            "caveat": ("seen away from the sender, path MTU discovery lowering the MSS through an ICMP that "
                       "never passes this tap looks the same") if far else None,
            "mss_advertised": p.get("mss_advertised"), "mss_offered_by_peer": p.get("mss_offered_by_peer"),
            "largest_segment": seg, "full_segments": full,
            "why": "both sides offered a larger MSS, yet no segment ever used it and none was lost for it",
        })
    return None


def _far_side_blackhole(rows: Rows, p: dict[str, Any], timing: Timing | None):
    """A black hole seen from the receiver, or from a tap in the middle past the hop that drops the
    large packets: small packets of the sender arrive, its data does not (its sequence numbers run
    ahead of all data seen, or the data seen lies past a hole nothing ever filled, and the sender
    went silent a second or more with packets it numbered never arriving), or only smaller segments
    arrive, long after the handshake. (A middle tap before that hop sees the large ones resent:
    `_pmtu_blackhole`.) Where the sender's silence is read, its bounds are in the evidence
    (`silence_*`): the stall no candidate shows, the tap having seen no data outstanding."""
    if timing is None or timing.vantage not in AWAY_FROM_SENDER or not p.get("syn_seen", True):
        return None
    if p.get("_capture_missed"):
        return None  # a sampled or lossy capture (artifacts.sampled_streams): unseen data is the capture's
    if p.get("_plain_packets", 1) + p.get("_peer_plain_packets", 1) == 0:
        # Only SYN, FIN and RST packets: a capture filtered to connections' set-up and tear-down
        # (tcpdump 'tcp[tcpflags] & (tcp-syn|tcp-fin|tcp-rst) != 0'), whose data and ACKs were
        # never kept; numbers past the data seen are no loss.
        return None
    if timing.vantage == "middle" and p.get("peer_data_packets"):
        # In the middle the data's first arrival may wait on the peer's request, which the tap saw
        # pass long after the handshake (a VPN client's TLS sessions whose servers answered 1.9 s
        # in): only a one-way transfer's late first data is the path's.
        return None
    offered = [v for v in (p.get("mss_offered_by_peer"), p.get("mss_advertised")) if v]
    seg = p.get("max_segment") or 0
    bulk = (p.get("max_in_flight") or 0) >= 4 * max(seg, 1)
    # The first data's delay is the path's only in a one-way transfer: in an exchange it waits on
    # the peer's request, which the tap may have seen pass long after the handshake (webex's TLS
    # servers answered 1.3 and 1.7 s in, seen at the VPN client; in the middle, above).
    late_may_show = bool(offered) and seg < MSS_UNUSED_SHARE * min(offered) and bulk and not p.get("peer_data_packets")
    # No data seen, and sequence numbers that ran a packet too large for some hop past the SYN (the
    # span reaches them).
    unseen_may_show = not p.get("data_packets") and (p.get("sequence_span") is None
                                                      or p["sequence_span"] > MIN_DROPPED_PAYLOAD)
    # Data seen only in segments smaller than the MSS both sides offered, past a hole a packet
    # long: the full-size ones before it never came (a write's short tail passed a 1400-byte hop).
    hole_may_show = (bool(offered) and 0 < seg < min(offered) - TIMESTAMP_OPTION and not p.get("peer_data_packets")
                     and (p.get("sequence_span") or 0) > MIN_DROPPED_PAYLOAD + seg)
    if not (late_may_show or unseen_may_show or hole_may_show):
        return None  # (the profile rules out every reading below: no query, which costs per direction)
    own = rows_of(rows)
    data = own.filter(pl.col("payload_len") > 0)
    # A reset's sequence number is data sent only once the sender had acknowledged its peer's SYN:
    # one answering a stray ACK before the handshake (RFC 9293 3.10.7.3) carries that ACK's number,
    # from another connection's space.
    shaken = own.filter(pl.col("flag_ack") & ~pl.col("flag_rst"))["ts_ns"].min()
    numbered = own.filter(~pl.col("flag_rst") | (pl.col("ts_ns") > shaken)) if shaken is not None else own.filter(
        ~pl.col("flag_rst"))
    ahead = int(numbered["seq_rel"].max() or 0) - int(data["seq_end"].max() if data.height else 1)
    # (Unless the receiver acknowledged data the tap never saw: it arrived, a filtered capture.)
    # ...and no further than the receiver's window lets a sender run: a packet from beyond it (a
    # stray ACK of an earlier connection before the handshake) carries another sequence space.
    window = p.get("peer_receive_window_max") or 0
    # (Nor where the receiver's ACKs passed the data seen: what ran ahead arrived, and the capture
    # missed it; a FIN seen after the gap hides it from acked_unseen, which reads ACKs past every
    # sequence number seen: Zeek's miss_end_data.pcap, a response the client acknowledged whole.)
    seen_end = int(data["seq_end"].max() if data.height else 1)
    acked_past = int(own["snd_una"].max() or 0) > seen_end + 1 if "snd_una" in own.columns else False
    if (data.height == 0 and MIN_DROPPED_PAYLOAD <= ahead <= window + STANDARD_IP_MTU
            and not p.get("acked_unseen") and not acked_past):
        silence = _silence(own, numbered.filter(pl.col("seq_rel") - 1 >= MIN_DROPPED_PAYLOAD).row(0, named=True), p)
        if silence and silence["silence_to_ns"] - silence["silence_from_ns"] < TIMEOUT_FLOOR_NS:
            # The sender moved on without waiting a retransmission timer: whatever the tap missed,
            # nothing shows it was lost for its size (a capture that dropped one packet looks so).
            return None
        return (Cause.PMTU_BLACKHOLE.value, 0.6, {
            "bytes_sent_never_seen": ahead, "data_segments_seen": 0, **silence,
            "why": f"the sender's sequence numbers ran {ahead} bytes ahead, yet none of its data arrived "
                   "while its small packets did: large packets are lost on the path"})
    if hole_may_show and data.height and not p.get("acked_unseen") and not acked_past:
        found = _unfilled_hole(own, data, p, window)
        if found is not None:
            return found
    if not late_may_show:
        return None
    first = _first_data_delay(own)
    if first is not None and first >= FAR_SIDE_FIRST_DATA_NS:
        return (Cause.PMTU_BLACKHOLE.value, 0.6, {
            "first_data_after_handshake_ns": first, "largest_segment": seg, "mss_offered": min(offered),
            "why": f"the first data arrived {first / 1e9:.1f} s after the handshake, in segments smaller than "
                   "the MSS both sides offered: the larger ones were lost on the path"})
    return None


def _silence(own: pl.DataFrame, showed: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    """The sender's silence before the packet that `showed` its data had gone (its last packet
    before it, to it), with the IPv4 ids it skipped in between: packets that never arrived where its
    ids are known to count each packet (`packets_never_seen`), a likely count otherwise."""
    before = own.filter(pl.col("ts_ns") < showed["ts_ns"])
    if before.height == 0:
        return {}
    last = before.row(before.height - 1, named=True)
    out = {"silence_from_frame": last["frame"], "silence_from_ns": last["ts_ns"],
           "silence_to_frame": showed["frame"], "silence_to_ns": showed["ts_ns"]}
    if last.get("ip_id") is not None and showed.get("ip_id") is not None:
        step = (showed["ip_id"] - last["ip_id"]) % 65536
        if 0 < step <= ID_STEP_MAX:
            out["ip_ids_skipped"] = step - 1
            if p.get("_ip_ids_count"):
                out["packets_never_seen"] = step - 1
    return out


def _unfilled_hole(own: pl.DataFrame, data: pl.DataFrame, p: dict[str, Any], window: int):
    """The far-side black hole where some data passed: a write's short tail came through past a
    hole of full-size segments that never did, the receiver never acknowledged past the hole, and
    the sender, still there (a later packet of its own), was silent FAR_SIDE_FIRST_DATA_NS or more
    after its last data, its packets in between numbered but never seen (its resends of the hole,
    too large to pass). A capture that missed the hole's data would have seen the receiver
    acknowledge it; a receiver gone away would have seen the resends arrive."""
    acked = _acked(own) or 1
    covering = data.filter((pl.col("seq_rel") <= acked) & (pl.col("seq_end") > acked))
    past = data.filter(pl.col("seq_rel") > acked)
    if covering.height or past.height == 0:
        return None
    hole = int(past["seq_rel"].min()) - acked
    if not MIN_DROPPED_PAYLOAD <= hole <= window + STANDARD_IP_MTU:
        return None
    last_data = data.row(data.height - 1, named=True)
    later = own.filter(pl.col("ts_ns") > last_data["ts_ns"])
    if later.height == 0 or later["ts_ns"][0] - last_data["ts_ns"] < FAR_SIDE_FIRST_DATA_NS:
        return None
    silence = _silence(own, later.row(0, named=True), p)
    if p.get("_ip_ids_count") and not silence.get("packets_never_seen"):
        return None  # the ids count every packet, and none went missing: nothing was resent
    return (Cause.PMTU_BLACKHOLE.value, 0.6, {
        "bytes_never_seen": hole, "hole_from_seq": acked, "data_segments_seen": data.height,
        "largest_segment": p.get("max_segment"), **silence,
        "why": f"{hole} bytes before the data seen never arrived and were never acknowledged, while smaller "
               "segments did arrive; the sender then fell silent with its resends never reaching the tap: "
               "full-size packets are lost on the path"})


def _pmtu_blackhole(rows: Rows, p: dict[str, Any], timing: Timing | None):
    if p.get("timeouts") is not None and p["timeouts"] < BLACKHOLE_RESENDS:
        return None  # (the profile's count of the rows below: no query where it cannot pass)
    own = rows_of(rows)
    # (A TSO/GRO super-frame's length is no datagram the path carried: it says nothing of the MTU.)
    to = own.filter((pl.col("retrans_kind") == "timeout") & ~pl.col("superframe"))
    if to.height < BLACKHOLE_RESENDS:
        return None
    runs = to.group_by("seq_rel").agg(pl.len().alias("n"), pl.col("ip_len").max().alias("ip"),
                                      pl.col("frame").min().alias("frame"), pl.col("ts_ns").min().alias("ts"))
    runs = runs.filter(pl.col("n") >= BLACKHOLE_RESENDS).sort("ts")
    if runs.height == 0:
        return None
    r = runs.row(0, named=True)
    if r["ip"] <= STANDARD_IP_MTU // 2:
        return None
    before = own.filter(pl.col("ts_ns") <= r["ts"])
    una_before = _acked(before)
    if una_before is not None and una_before > r["seq_rel"]:
        return None  # the peer acknowledged it before the first resend: it arrived, its ACKs did not
    later = own.filter((pl.col("ts_ns") > r["ts"]) & (pl.col("payload_len") > 0))
    smaller = later.filter(pl.col("ip_len") < r["ip"])
    # What went through in smaller segments must be that segment's own data, resent smaller (a
    # lowered MSS, RFC 4821's probing), and acknowledged after it: lost ACKs also make one segment
    # time out again and again, at every size the sender tries, and any later short segment (a
    # write's tail) would pass for the fallback.
    fallback = smaller.filter((pl.col("seq_rel") <= r["seq_rel"]) & (pl.col("seq_end") > r["seq_rel"]))
    after = _acked(own.filter(pl.col("ts_ns") > fallback["ts_ns"].min())) if fallback.height else None
    passed = after is not None and after > r["seq_rel"]
    acked = _acked(own)
    never_acked = acked is None or acked <= r["seq_rel"]
    if not passed and timing is not None and timing.vantage == "receiver":
        return None  # its resends reached the receiver's tap, and none was answered: the receiver stopped
    if not (passed or never_acked):
        return None
    if not passed and una_before is not None and _size_passed_before(before, una_before, r["ip"]):
        # Datagrams that large had crossed the path and been acknowledged just before: nothing
        # shows this one was lost for its size. A path or peer gone silent (lost ACKs to the end of
        # the capture: ack_loss captured with longer bursts) times it out the same way.
        return None
    return (Cause.PMTU_BLACKHOLE.value, 0.85 if never_acked or passed else 0.6, {
        "segment_seq": r["seq_rel"], "segment_ip_len": r["ip"], "timeouts_in_a_row": r["n"], "first_frame": r["frame"],
        "smaller_segments_after": smaller.height, "never_acknowledged": never_acked,
        "why": "the same full-size segment timed out again and again"
               + (" until smaller segments went through" if passed else " and was never acknowledged"),
    })


def _acked(rows: pl.DataFrame) -> int | None:
    """The highest cumulative ACK among `rows` that the capture showed (None: none): before the
    peer's first packet snd_una is the first byte seen, which a capture that starts mid-connection
    may show resent, never acknowledged."""
    return rows.filter(pl.col("peer_window").is_not_null())["snd_una"].max()


def _size_passed_before(before: pl.DataFrame, una: int, ip_len: int) -> bool:
    """Among the rows up to the first resend (`before`, acknowledged up to `una` then), a data
    segment in a datagram of `ip_len` bytes or more that was acknowledged."""
    return before.filter((pl.col("payload_len") > 0) & (pl.col("ip_len") >= ip_len) & ~pl.col("superframe")
                         & (pl.col("seq_end") <= una)).height > 0


def _jumbo_slots(rows: Rows, p: dict[str, Any], timing: Timing | None):
    if p.get("timeouts") is not None and p["timeouts"] < 2:
        return None  # (the profile's count of the rows below: no query where it cannot pass)
    own = rows_of(rows)
    lost = own.filter(pl.col("retransmission"))
    timeouts = own.filter(pl.col("retrans_kind") == "timeout").height
    ip_max = p.get("max_ip_len") or 0
    if lost.height == 0 or timeouts < 2 or not (STANDARD_IP_MTU < ip_max and link_mtu(p) < ATM_MTU_LOW):
        return None
    # A small frame counts as lost when its resend filled the hole the peer's cumulative ACK
    # pointed at. After a timeout Linux without SACK resends everything past the hole (go-back-N),
    # small frames the receiver already had among them: those resends say nothing of what was lost.
    small = lost.filter(pl.col("ip_len") <= STANDARD_IP_MTU)
    # (A resend wholly below the ACK, of data the peer already had, filled no hole.)
    small_lost = small.filter((pl.col("seq_rel") <= pl.col("snd_una"))
                              & (pl.col("seq_rel") + pl.col("payload_len") > pl.col("snd_una"))).height
    if small_lost:
        return None
    sent = own.filter(pl.col("payload_len") > 0)
    small_sent = sent.filter(pl.col("ip_len") <= STANDARD_IP_MTU).height
    large_sent = sent.height - small_sent
    large_lost = lost.height - small.height
    # "Only large frames lost" means something where size-blind loss at the large frames' rate
    # would have taken some small ones too: with one small frame among hundreds it says nothing.
    expected_small = small_sent * large_lost / large_sent if large_sent else 0.0
    selective = expected_small >= SELECTIVE_EXPECTED
    # Else what is left of the mechanism is a burst emptying the slot pool: single losses, each
    # ending in a timeout, are random loss (SunOS's 4 KB segments on FDDI). Where no SYN's MSS
    # named the link, 8 KB datagrams fit an ATM MTU (9180) as well as a jumbo Ethernet one, and an
    # ATM switch's cell loss takes large frames in bursts too (Kung & Morris): 1 to 13 per timeout
    # in the drawn corpora's ATM runs, 18 in a jumbo one, so no burst size tells them apart; only
    # small frames passing where size-blind loss would have taken some names the slot pool then.
    # (Datagrams of exactly Ethernet's usual jumbo MTU name the link as well: no ATM stack fills
    # 9000, its IP MTU is 9180 and BSD rounds its MSS down to 8192.)
    link_known = bool(p.get("mss_advertised") or p.get("mss_offered_by_peer")) or ip_max == JUMBO_ETHERNET_MTU
    # An FDDI ring's frames (RFC 1390's MTU of 4352) are its standard size, no jumbo Ethernet
    # frame: a burst of them lost is a burst loss (Gilbert loss on FDDI, 2 frames a timeout).
    ethernet = link_known and link_mtu(p) != FDDI_MTU
    if not selective and (not ethernet or lost.height < BURST_PER_TIMEOUT * timeouts):
        return None
    shown = (f"where loss blind to size would have taken {expected_small:.0f} of the {small_sent} small ones"
             if selective else f"in bursts that timed out ({lost.height} frames resent over {timeouts} timeouts)")
    return (Cause.JUMBO_SLOT_EXHAUSTION.value, 0.8 if selective else 0.6, {
        "lost_large_frames": large_lost, "lost_small_frames": 0,
        "small_frames_resent_past_the_hole": small.height, "small_frames_sent": small_sent,
        "small_losses_expected": round(expected_small, 2),
        "timeouts": timeouts, "largest_ip_len": ip_max,
        "why": "only jumbo frames (above the standard 1500-byte MTU) were lost, " + shown,
    })
