"""What each direction's sender is, inferred from what it did: the MSS it was offered and the
largest segment it sent, its send buffer S (Moldeklev's S: the in-flight plateau while the peer's
window had room) and the peer's receive buffer R (largest window advertised), its write pattern,
whether Nagle is on, the options it negotiated, and a stack guess with its evidence.

Nagle: a segment shorter than the MSS sent while an earlier short segment is still unacknowledged
breaks both the classic rule and Minshall's (docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay),
so it proves Nagle off; a short segment sent while only full ones are out is allowed by Minshall
(Linux) and proves nothing; with no violation, Nagle is taken to be on, the default of every stack.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from stallscope.analyzers.vantage import INITIAL_TTLS

# Profile fields that depend on the flight, and so on where the tap sits (vantage.sender_view).
FLIGHT_FIELDS = ("send_buffer_estimate", "_send_buffer_flight", "max_in_flight")
# Nagle is called off only when enough short segments broke its rule (one can be a write that
# raced an ACK at the tap). An interactive writer with Nagle off breaks it only when two writes
# come within a round trip: an FTP server's "150" then "226" replies, 5 % of its short segments.
NAGLE_OFF_MIN = 3
NAGLE_OFF_SHARE = 0.02
# The most frequent lengths of short segments sent behind unacknowledged short ones, kept where
# NAGLE_OFF_MIN or more went so.
NAGLE_FREE_LENGTHS = 64


# 4.4BSD and FreeBSD round an MSS above MCLBYTES down to a multiple of it (1 KB..8 KB clusters).
BSD_CLUSTER = 1024
TIMESTAMP_OPTION = 12
# Segments of the largest size, mostly without PSH, that show the MSS in use when below the offer.
MSS_EVIDENCE_SEGMENTS = 20
WRITE_SIZED_SHARE = 0.5


# A direction's IPv4 ids count per connection when most consecutive packets step by one and nearly
# all step forward by a little (random ids step anywhere, a DF sender's zero ids not at all). Fewer
# steps of one can be packets lost before the tap (a shaping queue on the sender drops half of a
# slow start) or a host-wide counter's other flows: the lower share is trusted only where the
# host's other captured connections show counters of their own (id_counters).
IP_ID_COUNTING_SHARE = 0.8
# ...over this many packets of the direction at least, unless the host's other connections show it
# keeps a counter per connection (id_counters): a host-wide counter counts one per packet too
# while the host sends nothing else, and a short connection can fall in such a quiet spell (nDPI's
# skinny.pcap: a phone's 12 signalling packets stepped by one until its RTP stream began, then
# skipped 4 ids for the RTP packets it sent, read as 4 segments lost).
IP_ID_MIN_PACKETS = 20
IP_ID_COUNTING_SHARE_OWN = 0.25
IP_ID_FORWARD_SHARE = 0.95
IP_ID_FORWARD_MAX = 256
# Data segments from the peer after which a direction with no pure ACK at all is read as filtered.
ACKS_EXPECTED_AFTER = 2
# RFC 1122 4.2.2.6: with no MSS option a host may send 536-byte segments, so every MSS is at least
# this unless a SYN said otherwise.
DEFAULT_MSS = 536


def full_segment_size(profile: dict[str, Any], recent: int | None = None) -> int:
    """What Nagle calls a full segment for this sender: the MSS both sides offered (less the
    timestamp option), unless the sender's own segments say it uses less: BSD's rounding of the MSS
    down to mbuf clusters (9140 -> 8192), a path finding (the offer is unusable), or retransmissions
    re-cut (PMTU discovery lowered it: then the size sent most, or `recent`, the largest recent one).
    Without an offer (no SYN seen): the largest segment sent, when many of that size say it is the
    MSS; else at least 536 bytes, the MSS every IPv4 host may assume (RFC 1122 4.2.2.6): a writer
    of 100-byte messages seen mid-connection sends short segments, not full ones."""
    largest = int(profile.get("max_segment") or 0)
    if recent is not None and largest:
        recent = min(recent, largest)  # max_segment leaves out TSO/GRO super-frames
    if profile.get("resegmented"):
        now = recent if recent else int(profile.get("common_segment") or 0)
        if now and now < largest:
            return now
    if profile.get("path_cause") is not None:
        return max(recent or 0, largest)
    offered = [v for v in (profile.get("mss_offered_by_peer"), profile.get("mss_advertised")) if v]
    negotiated = min(offered) - (TIMESTAMP_OPTION if profile.get("timestamps") else 0) if offered else 0
    if largest and largest % BSD_CLUSTER == 0 and 0 <= negotiated - largest < 2 * BSD_CLUSTER:
        return largest
    at_max = profile.get("segments_at_max") or 0
    mss_sized = at_max >= MSS_EVIDENCE_SEGMENTS and (profile.get("pushed_at_max") or 0) < WRITE_SIZED_SHARE * at_max
    if largest < negotiated and mss_sized:
        # Many segments of one size below the offer, most without PSH: not each a write, so the
        # MSS sized them (a route or path MTU the SYN did not show), not the application.
        return largest
    if not offered and not mss_sized:
        return max(recent or 0, largest, DEFAULT_MSS)
    return max(recent or 0, largest, negotiated)


def segment_size_shown(profile: dict[str, Any]) -> bool:
    """Whether the trace shows what a full segment is for this sender: a SYN's MSS offer, or many
    segments of the largest size most without PSH (the MSS cut them, not each a write). Otherwise
    full_segment_size's largest segment may be a write, and a segment of that size a short one."""
    if profile.get("mss_offered_by_peer") or profile.get("mss_advertised"):
        return True
    at_max = profile.get("segments_at_max") or 0
    return at_max >= MSS_EVIDENCE_SEGMENTS and (profile.get("pushed_at_max") or 0) < WRITE_SIZED_SHARE * at_max


# Columns the profile reads: selected first, so that no filter copies the whole state table.
_PROFILE_COLUMNS = ["stream", "dir", "ts_ns", "payload_len", "superframe", "new_data", "seq_end", "seq_rel",
                    "retransmission", "control_retransmission", "retrans_kind", "dup_ack", "win_scaled", "flag_syn", "flag_fin",
                    "flag_rst", "flag_psh", "opt_mss", "opt_wscale", "opt_sack_perm", "opt_ts_val", "in_flight",
                    "usable_window", "ip_id", "snd_una"]
# A direction's largest segment that crossed a wire as one (its max_segment).
_MAX_SEGMENT = pl.col("payload_len").filter((pl.col("payload_len") > 0) & ~pl.col("superframe")).max()


def wire_superframes(state: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """`state.select(columns)` (with `superframe` among them) where a datagram the decoder flagged
    only for its size is not a super-frame when its payload fits the MSS its receiver offered in
    the SYN: that receiver's interface carries it as one segment (FORE's ATM MTU 9244, MSS 9204, is
    above the 9216-byte jumbo limit the decoder applies to Ethernet-like links). A TSO/GRO
    super-frame holds several segments, more than the offer."""
    st = state.select(columns)
    if not st["superframe"].any():
        return st
    offered = (
        state.select("stream", "dir", "flag_syn", "opt_mss").filter(pl.col("flag_syn") & pl.col("opt_mss").is_not_null())
        .group_by(["stream", "dir"]).agg(pl.col("opt_mss").first().alias("_offered"))
        .with_columns(dir=(1 - pl.col("dir").cast(pl.Int64)).cast(st.schema["dir"]))
    )
    fits = pl.col("_offered").is_not_null() & (pl.col("payload_len") <= pl.col("_offered"))
    return (st.join(offered, on=["stream", "dir"], how="left", maintain_order="left")
            .with_columns(superframe=pl.col("superframe") & ~fits).drop("_offered"))


def direction_profiles(state: pl.DataFrame) -> dict[tuple[int, int], dict[str, Any]]:
    """Profile per (stream, dir) of every direction that sent anything."""
    st = wire_superframes(state, _PROFILE_COLUMNS)
    data = st.filter(pl.col("payload_len") > 0)
    seg = data.filter(~pl.col("superframe"))
    # The size the direction sends most: its full segment once PMTU discovery has lowered the MSS.
    common = seg.group_by(["stream", "dir", "payload_len"]).len().sort(
        ["stream", "dir", "len", "payload_len"], descending=[False, False, True, True]).group_by(
        ["stream", "dir"], maintain_order=True).agg(pl.col("payload_len").first().alias("common_segment"))
    max_segment = _MAX_SEGMENT
    agg = st.group_by(["stream", "dir"]).agg(
        packets=pl.len(),
        data_packets=(pl.col("payload_len") > 0).sum(),
        # The sequence space a new segment took, less the FIN's (and a SYN's) one number: payload only.
        new_bytes=pl.when(pl.col("new_data")).then(
            (pl.col("seq_end") - pl.col("seq_rel") - pl.col("flag_fin").cast(pl.Int64) - pl.col("flag_syn").cast(pl.Int64))
            .clip(lower_bound=0)).otherwise(0).sum(),
        seq_span=pl.col("seq_end").max() - pl.col("seq_rel").min(),
        retrans_packets=pl.col("retransmission").sum() + pl.col("control_retransmission").sum(),
        retrans_bytes=pl.when(pl.col("retransmission")).then(pl.col("payload_len")).otherwise(0).sum(),
        timeouts=(pl.col("retrans_kind") == "timeout").sum(),
        fast_retrans=(pl.col("retrans_kind") == "fast").sum(),
        dup_acks=pl.col("dup_ack").sum(),
        zero_windows=((pl.col("win_scaled") == 0) & ~pl.col("flag_syn") & ~pl.col("flag_rst")).sum(),
        max_segment=max_segment,
        superframes=pl.col("superframe").sum(),
        syn_mss=pl.col("opt_mss").filter(pl.col("flag_syn")).first(),
        syn_wscale=pl.col("opt_wscale").filter(pl.col("flag_syn")).first(),
        syn_sack=pl.col("opt_sack_perm").filter(pl.col("flag_syn")).first(),
        syn_seen=pl.col("flag_syn").any(),
        timestamps=pl.col("opt_ts_val").is_not_null().any(),
        ip_ids_vary=pl.col("ip_id").n_unique() > 1,
        ip_id_step_one=((pl.col("ip_id").cast(pl.Int32).diff() % 65536) == 1).mean(),
        pure_acks=((pl.col("payload_len") == 0) & ~pl.col("flag_syn") & ~pl.col("flag_fin")
                   & ~pl.col("flag_rst")).sum(),
        # Packets with none of SYN, FIN and RST: a capture filtered to set-up and tear-down has none.
        plain_packets=(~pl.col("flag_syn") & ~pl.col("flag_fin") & ~pl.col("flag_rst")).sum(),
        ip_id_forward=((pl.col("ip_id").cast(pl.Int32).diff() + 65536) % 65536).is_between(1, IP_ID_FORWARD_MAX).mean(),
        ttl_max=pl.lit(None, pl.Int64),
        max_window=pl.col("win_scaled").max(),
        psh_segments=(pl.col("flag_psh") & (pl.col("payload_len") > 0)).sum(),
        at_max=(pl.col("payload_len") == max_segment).sum(),
        psh_at_max=((pl.col("payload_len") == max_segment) & pl.col("flag_psh")).sum(),
        first_data_ns=pl.col("ts_ns").filter(pl.col("payload_len") > 0).min(),
        first_resend_ns=pl.col("ts_ns").filter(pl.col("retransmission")).min(),
        last_data_ns=pl.col("ts_ns").filter(pl.col("payload_len") > 0).max(),
        **_FLIGHT,
        flight_p90=pl.col("in_flight").filter(pl.col("new_data")).quantile(0.9),
    )
    # Retransmissions smaller than the first send at the same sequence number: the sender cut its
    # segments (PMTU discovery, MTU probing), so its full size fell during the connection.
    resent = data.filter(pl.col("retransmission")).select("stream", "dir", "seq_rel").unique()
    firsts = data.join(resent, on=["stream", "dir", "seq_rel"], how="semi").group_by(["stream", "dir", "seq_rel"]).agg(pl.col("payload_len").first().alias("_first"),
                                                              pl.col("payload_len").min().alias("_min"), pl.len().alias("_n"))
    recut = firsts.filter((pl.col("_n") > 1) & (pl.col("_min") < pl.col("_first"))).group_by(["stream", "dir"]).agg(
        pl.len().alias("resegmented"))
    agg = agg.join(recut, on=["stream", "dir"], how="left")
    agg = agg.join(common, on=["stream", "dir"], how="left")
    out: dict[tuple[int, int], dict[str, Any]] = {}
    rows = {(r["stream"], r["dir"]): r for r in agg.iter_rows(named=True)}
    for (stream, d), r in rows.items():
        peer = rows.get((stream, 1 - d), {})
        out[(stream, d)] = _profile(r, peer)
    return out


# In flight while the peer's window still had a full segment of room: the send-buffer plateau, in
# bytes of data (a FIN takes a sequence number but no room in the buffer: SunOS with S = 8192 had
# 8193 out when its FIN left behind the last full buffer).
_DATA_IN_FLIGHT = pl.col("in_flight") - pl.col("flag_fin").cast(pl.Int64)
_SENT_WITH_ROOM = pl.col("new_data") & (pl.col("usable_window") >= _MAX_SEGMENT)
_FREE_FLIGHT = _DATA_IN_FLIGHT.filter(_SENT_WITH_ROOM)
_ONE_FLIGHT_UNA = pl.col("snd_una").filter(
    _SENT_WITH_ROOM & (_DATA_IN_FLIGHT > _FREE_FLIGHT.max() - _MAX_SEGMENT) & (2 * _DATA_IN_FLIGHT > _FREE_FLIGHT.max()))
_FLIGHT = {
    "flight_free": _FREE_FLIGHT.max(),
    # Where one flight alone came near it (within a segment, and past half of it: a one-segment
    # plateau's short tails are no approach), that flight's snd_una: the estimate then shows where
    # that flight's data ended, which may be a message's (a response on a connection of its own),
    # not a ceiling (causes/common.py).
    "flight_free_una": _ONE_FLIGHT_UNA.min().filter(_ONE_FLIGHT_UNA.n_unique() == 1).first(),
    "flight_max": pl.col("in_flight").filter(pl.col("new_data")).max(),
}


# Where consecutive packets of one address switch connection: an id this far ahead or less is one
# counter numbering both; a host whose switches land near that often shares one, a host whose
# switches almost never do keeps a counter per connection (each starts at a random value, so two
# land this near by chance once in 256). A busy host's counter moves on between its captured TCP
# packets for the packets the capture left out (a P2P client's UDP): 8 was too near for that.
SHARED_COUNTER_STEP = 256
SHARED_COUNTER_SHARE = 0.5
OWN_COUNTER_SHARE = 0.1
SHARED_COUNTER_MIN_SWITCHES = 4
ID_COUNTER_SAMPLE = 200_000


def id_counters(packets: pl.DataFrame, endpoints: pl.DataFrame,
                ttls: dict[tuple[int, int], int]) -> dict[tuple[int, int], str]:
    """Per (stream, dir) of a source address with more than one captured connection: "shared"
    when the host numbers all its packets with one counter (a skipped id is then another flow's
    packet, not one lost before the tap), "own" when each connection has its own, as Linux's do.
    A sender whose IPv4 packets arrive with a TTL above 64 is "shared" whatever its connections
    show (`_ttl_shared`; `ttls`: `ttl_max(packets)`)."""
    kinds = _ttl_shared(ttls)
    addrs = endpoints.group_by("src_addr").agg(pl.len().alias("n")).filter(pl.col("n") > 1)["src_addr"]
    if addrs.len() == 0:
        return kinds
    # The capture's first packets are enough to tell (and a full pass costs ~0.1 s per 2 M packets).
    m = packets.select("src_addr", "stream", "ip_id").filter(
        pl.col("src_addr").is_in(addrs.implode()) & pl.col("ip_id").is_not_null()).head(ID_COUNTER_SAMPLE)
    switches = m.with_columns(
        prev_stream=pl.col("stream").shift(1).over("src_addr"),
        step=((pl.col("ip_id").cast(pl.Int32) - pl.col("ip_id").shift(1).over("src_addr").cast(pl.Int32) + 65536)
              % 65536),
    ).filter(pl.col("prev_stream").is_not_null() & (pl.col("stream") != pl.col("prev_stream")))
    verdicts = switches.group_by("src_addr").agg(
        n=pl.len(), near=pl.col("step").is_between(1, SHARED_COUNTER_STEP).mean()).filter(
        pl.col("n") >= SHARED_COUNTER_MIN_SWITCHES).with_columns(
        kind=pl.when(pl.col("near") >= SHARED_COUNTER_SHARE).then(pl.lit("shared"))
        .when(pl.col("near") <= OWN_COUNTER_SHARE).then(pl.lit("own")).otherwise(None)).drop_nulls("kind")
    if verdicts.height == 0:
        return kinds
    rows = endpoints.join(verdicts.select("src_addr", "kind"), on="src_addr").select("stream", "dir", "kind").iter_rows()
    # A stack that is not Linux numbers no connection on its own: its TTL outranks the switches.
    return {(int(st), int(d)): k for st, d, k in rows} | kinds


# Initial TTLs: 64 (Linux, the BSDs, macOS), 128 (Windows), 255 (Solaris, network equipment). An
# IPv4 packet seen with more than 64 left a stack that does not start at 64: not Linux, the one
# stack that numbers each connection's packets with a counter of its own. Windows numbers every
# packet of the host from one counter, so a skip is the host's other traffic (a DNS query, another
# connection the capture does not hold), not a packet lost before the tap.
LINUX_TTL = 64
TTL = "ttl"  # read for this alone (a table without it: no direction is judged by it)


def ttl_max(packets: pl.DataFrame) -> dict[tuple[int, int], int]:
    """The largest IP TTL (IPv6 hop limit) per (stream, dir): the fewest routers its packets crossed
    before the tap. Empty for a table without the column."""
    if TTL not in packets.columns:
        return {}
    rows = packets.select("stream", "dir", TTL).drop_nulls(TTL).group_by(["stream", "dir"]).agg(pl.col(TTL).max())
    return {(int(st), int(d)): int(t) for st, d, t in rows.iter_rows()}


def _ttl_shared(ttls: dict[tuple[int, int], int]) -> dict[tuple[int, int], str]:
    """"shared" for each direction whose packets arrive with a TTL above 64 (`ttl_max`). (An IPv6
    direction's hop limit may count too: it carries no ids, so nothing reads its counter.)"""
    return {k: "shared" for k, t in ttls.items() if t > LINUX_TTL}


def flight_fields(state: pl.DataFrame) -> dict[tuple[int, int], dict[str, Any]]:
    """FLIGHT_FIELDS per (stream, dir): what `direction_profiles` reads from the flight, alone (the
    analysis re-reads them from the flight as the sender knew it)."""
    agg = wire_superframes(state, ["stream", "dir", "payload_len", "superframe", "new_data", "in_flight", "usable_window",
                                    "flag_fin", "snd_una"]).group_by(
        ["stream", "dir"]).agg(**_FLIGHT)
    return {(r["stream"], r["dir"]): {"send_buffer_estimate": r["flight_free"],
                                      "_send_buffer_flight": r["flight_free_una"],
                                      "max_in_flight": r["flight_max"]}
            for r in agg.iter_rows(named=True)}


def _profile(r: dict[str, Any], peer: dict[str, Any]) -> dict[str, Any]:
    offered = peer.get("syn_mss")
    p = {
        "packets": r["packets"],
        "data_packets": r["data_packets"],
        # From the first data packet to the last, two or more: the goodput's span (private).
        "_data_span_ns": (r["last_data_ns"] - r["first_data_ns"]) if r["data_packets"] >= 2 else None,
        # The first retransmission's time (private): a congestion window grown before it was not cut.
        "_first_resend_ns": r["first_resend_ns"],
        "bytes": r["new_bytes"] if r["data_packets"] else 0,
        # Sequence space used, SYN and FIN included: data sent counts even if the tap never saw it.
        "sequence_span": r["seq_span"],
        "_plain_packets": r["plain_packets"],
        "retransmitted_packets": r["retrans_packets"],
        "retransmitted_bytes": r["retrans_bytes"],
        "timeouts": r["timeouts"],
        "fast_retransmissions": r["fast_retrans"],
        "duplicate_acks_sent": r["dup_acks"],
        "zero_windows_sent": r["zero_windows"],
        "mss_advertised": r["syn_mss"],
        "mss_offered_by_peer": offered,
        "max_segment": r["max_segment"],
        "superframes": r["superframes"],
        "sack": bool(r["syn_sack"] and peer.get("syn_sack")) if r["syn_seen"] and peer.get("syn_seen") else None,
        "timestamps": bool(r["timestamps"]),
        "window_scale": r["syn_wscale"] if r["syn_seen"] else None,
        "send_buffer_estimate": r["flight_free"],
        "_send_buffer_flight": r["flight_free_una"],
        "max_in_flight": r["flight_max"],
        "peer_receive_window_max": peer.get("max_window"),
        "push_segments": r["psh_segments"],
        # Filled in by nagle_evidence, once the full segment size is known.
        "common_short_segments": [],
        "nagle": "unknown",
        "nagle_evidence": "",
        "short_segments": 0,
        "syn_seen": bool(r["syn_seen"]),
        "resegmented": r["resegmented"] or 0,
        "common_segment": r["common_segment"],
        "segments_at_max": r["at_max"],
        "pushed_at_max": r["psh_at_max"],
        # Whether the peer's duplicate ACKs can be told from a capture's copies of one frame
        # (artifacts.py removes an exact repeat within 1 ms): they differ from the ACK before
        # them in their IPv4 id when the peer's ids count, and a pure ACK with neither an id nor a
        # timestamp is kept; one with a timestamp but no id repeats that ACK byte for byte within
        # one timestamp tick. (Private: not in the JSON.)
        "_peer_dupacks_visible": bool(peer.get("ip_ids_vary")) or not peer.get("timestamps", False),
        # The direction's IPv4 ids count up by one per packet (a per-connection counter, Linux's for
        # DF packets), so a skipped id is a packet sent and not seen here. (Private.)
        "_ip_ids_count": _ids_count(r, peer, IP_ID_COUNTING_SHARE, IP_ID_MIN_PACKETS),
        # The same with the lower share, for a host whose counters are its connections' own. (Private.)
        "_ip_ids_count_own": _ids_count(r, peer, IP_ID_COUNTING_SHARE_OWN),
    }
    return p


def _ids_count(r: dict[str, Any], peer: dict[str, Any], step_one_share: float, min_packets: int = 0) -> bool:
    """Whether the direction's IPv4 ids count one per packet, at `step_one_share` of steps of one
    over `min_packets` packets or more.
    Not where it sent not one pure ACK for the peer's data segments: a capture filter kept only
    packets with payload (or every ACK rode on data), and its ids skip for the ACKs it dropped."""
    no_pure_acks = r["pure_acks"] == 0 and (peer.get("data_packets") or 0) >= ACKS_EXPECTED_AFTER
    return (r["packets"] >= min_packets and (r["ip_id_step_one"] or 0) >= step_one_share and (r["ip_id_forward"] or 0) >= IP_ID_FORWARD_SHARE
            and not no_pure_acks)


def settle_id_counting(profiles: dict[tuple[int, int], dict[str, Any]], counters: dict[tuple[int, int], str],
                       data_only: bool) -> None:
    """Each profile's `_ip_ids_count` once the host's counters are known (`id_counters`): a host
    with counters of its own trusts the lower share of steps of one, a host-wide counter none; in a
    capture filtered to data (note data_only) every id skip may be a packet the filter dropped."""
    for key, kind in counters.items():
        if key in profiles:
            profiles[key]["_ip_ids_count"] = kind == "own" and profiles[key]["_ip_ids_count_own"]
    if data_only:
        for prof in profiles.values():
            prof["_ip_ids_count"] = False
    # Each direction's peer's, for the packets the peer sent and this tap never saw (its lost ACKs).
    for (s, d), prof in profiles.items():
        prof["_peer_ip_ids_count"] = bool((profiles.get((s, 1 - d)) or {}).get("_ip_ids_count"))


def nagle_evidence(state: pl.DataFrame, profiles: dict[tuple[int, int], dict[str, Any]]) -> None:
    """Nagle on or off per direction, against the full segment size of `full_segment_size` (run
    once the profiles know their path causes): a segment shorter than it, sent while an earlier
    short one was unacknowledged, breaks both the classic and Minshall's rule."""
    if not profiles:
        return
    full = pl.DataFrame({"stream": [k[0] for k in profiles], "dir": [k[1] for k in profiles],
                         "_full": [full_segment_size(p) for p in profiles.values()]},
                        schema={"stream": pl.UInt32, "dir": pl.UInt8, "_full": pl.Int64})
    short = (pl.col("payload_len") > 0) & (pl.col("payload_len") < pl.col("_full")) & ~pl.col("superframe")
    st = wire_superframes(state, ["stream", "dir", "payload_len", "superframe", "new_data", "seq_end", "snd_max", "snd_una"]).join(
        full, on=["stream", "dir"], how="left").with_columns(_short=short & pl.col("new_data"))
    st = st.with_columns(
        _short_end=pl.when(pl.col("_short")).then(pl.col("seq_end")).forward_fill().shift(1).over(["stream", "dir"]),
        _prev_flight=(pl.col("snd_max").shift(1).over(["stream", "dir"]) - pl.col("snd_una")).clip(lower_bound=0),
    )
    behind_short = pl.col("_short") & (pl.col("_short_end") > pl.col("snd_una"))
    agg = st.group_by(["stream", "dir"]).agg(
        short_new=pl.col("_short").sum(),
        short_behind_short=behind_short.sum(),
        short_behind_any=(pl.col("_short") & (pl.col("_prev_flight") > 0)).sum(),
        behind_short_lens=pl.col("payload_len").filter(behind_short).value_counts(sort=True).head(NAGLE_FREE_LENGTHS),
    )
    sizes = (
        st.filter(pl.col("_short")).group_by(["stream", "dir", "payload_len"]).len()
        .sort(["stream", "dir", "len", "payload_len"], descending=[False, False, True, False])
        .group_by(["stream", "dir"], maintain_order=True).agg(pl.col("payload_len").head(5).alias("common_short"))
    )
    for r in agg.join(sizes, on=["stream", "dir"], how="left").iter_rows(named=True):
        p = profiles.get((r["stream"], r["dir"]))
        if p is not None:
            p["nagle"], p["nagle_evidence"] = _nagle(r)
            p["short_segments"] = r["short_new"]
            # Lengths of short segments that went out behind an unacknowledged short one: Nagle
            # did not hold a segment of these (private; causes/nagle.py).
            p["_nagle_free_lengths"] = {v["payload_len"]: v["count"] for v in r["behind_short_lens"] or []
                                        if v["count"] >= NAGLE_OFF_MIN}
            p["common_short_segments"] = list(r["common_short"] or [])


def _nagle(r: dict[str, Any]) -> tuple[str, str]:
    if not r["short_new"]:
        return "unknown", "no segment shorter than the largest was sent"
    if r["short_behind_short"] >= max(NAGLE_OFF_MIN, NAGLE_OFF_SHARE * r["short_new"]):
        return "off", (f"{r['short_behind_short']} segments shorter than the MSS were sent while an earlier "
                       "short segment was unacknowledged (both the classic and Minshall rules forbid it)")
    behind_full = r["short_behind_any"] - r["short_behind_short"]
    variant = "minshall or classic" if not behind_full else "minshall"
    broke = (f"{r['short_behind_short']} of them behind an unacknowledged short one, too few to call it off"
             if r["short_behind_short"] else "none behind an unacknowledged short one")
    return "on", (f"short segments waited for the ACK of an earlier short one ({r['short_new']} short segments, "
                  f"{broke}; {behind_full} went out behind full ones: {variant})")


# Stacks by the TTL they start their packets at, above Linux's and the BSDs' 64; the weight of that
# evidence against theirs (all four of Linux's signs together tie it).
INITIAL_TTL_STACKS = {128: "Windows", 255: "Solaris, AIX's TCP or a router's own stack"}
OTHER_TTL_WEIGHT = 4


def stack_guess(own: dict[str, Any], peer_acks: dict[str, Any]) -> dict[str, Any]:
    """Linux, BSD family, or other, from what this side did: its options, its Nagle rule, its
    delayed-ACK timer (seen when it acknowledged the other side), its retransmission timer, and the
    TTL its packets started at."""
    evidence: list[str] = []
    linux = bsd = 0
    if own.get("timestamps") and own.get("window_scale") is not None:
        linux += 1
        evidence.append("SYN offers timestamps and window scaling (RFC 7323, on by default in Linux)")
    elif own.get("window_scale") is None and own.get("sack") is False:
        bsd += 1
        evidence.append("no SACK or window scaling in the SYN (pre-1996 stack)")
    timer = peer_acks.get("timer")
    if timer == "one-shot" and 30_000_000 <= peer_acks.get("timer_ns", 0) <= 60_000_000:
        linux += 2
        evidence.append(f"delays its ACKs by a one-shot timer of {peer_acks['timer_ns'] / 1e6:.0f} ms (Linux TCP_DELACK_MIN)")
    elif timer == "tick":
        bsd += 2
        evidence.append("delays its ACKs to a free-running 200 ms tick (BSD tcp_fasttimo)")
    elif timer == "one-shot" and 90_000_000 <= peer_acks.get("timer_ns", 0) <= 110_000_000:
        bsd += 1
        evidence.append("delays its ACKs by a one-shot 100 ms timer (FreeBSD)")
    if "minshall" in own.get("nagle_evidence", "") and own.get("nagle") == "on" and "classic" not in own.get("nagle_evidence", ""):
        linux += 1
        evidence.append("sends short segments behind full ones but never behind a short one (Minshall, as Linux)")
    mss = own.get("mss_advertised")
    if mss and mss % 1024 == 0 and mss >= 2048:
        bsd += 1
        evidence.append(f"MSS {mss} rounded to mbuf clusters (BSD tcp_mss)")
    # No router raises a TTL: one above 64 left a host that starts its packets higher than Linux and
    # the BSDs do (p0f's first test). It outweighs the behaviour above, which other stacks share
    # (timestamps, Minshall's rule), though not all of it at once (a Linux host behind a middlebox
    # that rewrites TTLs).
    other = 0
    ttl = own.get("ttl_max")
    if ttl is not None and ttl > LINUX_TTL:
        initial = min(t for t in INITIAL_TTLS if t >= ttl)
        other = OTHER_TTL_WEIGHT
        evidence.append(f"its packets carry an IP TTL of {ttl}: they started at {initial} "
                        f"({INITIAL_TTL_STACKS[initial]}), where Linux and the BSDs start at 64")
    best = max(linux, bsd, other)
    if [linux, bsd, other].count(best) > 1:
        guess = "unknown"
    else:
        guess = "linux" if linux == best else "bsd" if bsd == best else "other"
    return {"guess": guess, "evidence": evidence}
