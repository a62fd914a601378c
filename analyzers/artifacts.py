"""Artifacts of how the capture was taken, kept apart from what the network did: frames captured
twice (two capture points merged), timestamps that go backwards, TSO/GRO super-frames (one send seen
as one large datagram), payload cut by the snaplen, ACKs of data the capture never showed (a capture
drop, never called loss), windows whose scale the capture never showed (no SYN), and sequence numbers
that wrap past 2^32 (not an artifact, but said so that a reader comparing raw numbers is not misled).
Each becomes a note; duplicated frames are removed before the sender state is computed, so that none
can look like a retransmission, and a segment larger than the MSS its receiver offered is marked a
super-frame even when the datagram fits a jumbo frame (a tap before TSO or after GRO sees several
segments as one), and one within that MSS is not, whatever its size (loopback carries 64 KB).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from stallscope import _native
from stallscope.analyzers.findings import Note
from stallscope.analyzers.sender_state import by_stream_time, sender_state
from stallscope.packets.decoder import frame_from_columns

# Packets above which a capture with no TCP packet free of payload is read as filtered to data.
DATA_ONLY_MIN_PACKETS = 20

# Two copies of one frame: same direction, sequence, ACK, IP id, TCP timestamp, length, flags,
# window and SACK blocks this close in time (native/src/analysis/duplicates.rs).
DUPLICATE_WINDOW_NS = 1_000_000
# ...or this close where a non-zero IPv4 id and a TCP timestamp value both name the packet: no
# resend repeats both. A mirror port's copies come 1.2-1.6 ms late (Practical Packet Analysis'
# telnet); two taps merged, one at each end, a one-way delay late (small_sndbuf_long_rtt's sender
# and receiver captures merged: 50 ms, every data copy read as a resend before).
IDENTIFIED_WINDOW_NS = 1_000_000_000
# Copies of frames without an identity (no IPv4 id; pure ACKs, or data without a timestamp) that
# make up this share of a connection's frames are a merged capture's, not TCP's own repeats.
WEAK_COPY_SHARE = 0.2
# Optional column (the wire's sequence number) read for the wrap note when the packet table has it.
SEQ_RAW = "seq_raw"
_WRAP = 1 << 32


def _examples(df: pl.DataFrame) -> tuple[int, ...]:
    return tuple(int(f) for f in df["frame"].head(5).to_list())


def clean(packets: pl.DataFrame, loopback: frozenset[int] = frozenset()
          ) -> tuple[pl.DataFrame, list[Note], dict[int, list[Note]]]:
    """(packets without duplicated frames, file notes, notes per stream). `loopback`: the streams
    between loopback addresses (loopback_streams)."""
    file_notes: list[Note] = []
    conn_notes: dict[int, list[Note]] = {}
    # The decoder yields rows in file order; only the time column is read for backward steps.
    times = packets.select("frame", "ts_ns")
    if not times["frame"].is_sorted():
        times = times.sort("frame")
    in_file = times.with_columns(_behind=pl.col("ts_ns").cum_max().shift(1) - pl.col("ts_ns"))
    back = in_file.filter(pl.col("ts_ns") < pl.col("ts_ns").shift(1))
    # Rows stay in file order (each connection's in time order) unless the times go backwards.
    keyed = packets
    dup = _duplicates(keyed)
    dups = keyed.filter(dup)
    if dups.height:
        for s, g in dups.group_by("stream", maintain_order=True):
            conn_notes.setdefault(int(s[0]), []).append(Note(
                "duplicate_frames", f"{g.height} frames are copies of earlier ones (the same headers within 1 ms, or within 1 s "
                "where a non-zero IPv4 id and a TCP timestamp name the frame): capture points merged or a mirror "
                "port; the copies are ignored", g.height, _examples(g)))
        cleaned = keyed.filter(~dup)
    else:
        cleaned = keyed
    offered = _mss_offered(cleaned)
    cleaned = _superframes_by_common_segment(
        _superframes_on_loopback(_superframes_by_mss(cleaned, offered), offered, loopback), offered)
    if back.height:
        worst = int(in_file["_behind"].max() or 0)
        cleaned, stepped = _order(cleaned)
        how = ("the file's order fits TCP better than the timestamps' (a clock step): it is kept, and each later "
               "timestamp is moved forward by the step" if stepped else "the analysis orders packets by time")
        file_notes.append(Note("timestamps_backwards", f"{back.height} packets carry a timestamp earlier than the "
                               f"packet before them in the file (at most {worst / 1e6:.3f} ms behind the latest "
                               f"before them); {how}", back.height, _examples(back)))
    sup = cleaned.filter(pl.col("superframe"))
    for s, g in sup.group_by("stream", maintain_order=True):
        conn_notes.setdefault(int(s[0]), []).append(Note(
            "superframes", f"{g.height} TSO/GRO super-frames (datagrams larger than the link carries): each is one "
            "send seen before segmentation or after coalescing; segment sizes are read from the others",
            g.height, _examples(g)))
    cut = cleaned.filter(pl.col("payload_captured") < pl.col("payload_len"))
    if cut.height:
        file_notes.append(Note("payload_truncated", f"{cut.height} packets had their payload cut by the snaplen; "
                               "lengths come from the IP header, so the analysis is unaffected", cut.height,
                               _examples(cut)))
    if cleaned.height >= DATA_ONLY_MIN_PACKETS and not (cleaned["payload_len"] == 0).any():
        file_notes.append(Note("data_only", f"none of the {cleaned.height} TCP packets is without payload (no SYN, "
                               "FIN or pure ACK): the capture was filtered to data; ACK timing cannot be read, and "
                               "IPv4 ids skipped for the dropped ACKs are not read as losses", cleaned.height))
    # (SYNs and their answers alone are a scan or a flood, not a filter: only a FIN or reset numbered
    # past its SYN shows data the capture did not keep.)
    if (cleaned.height >= DATA_ONLY_MIN_PACKETS
            and (cleaned["flag_syn"] | cleaned["flag_fin"] | cleaned["flag_rst"]).all()
            and (~cleaned["flag_syn"] & (cleaned["seq_rel"] > 1)).any()):
        file_notes.append(Note("control_only", f"every one of the {cleaned.height} TCP packets carries SYN, FIN or "
                               "RST, and connections closed with sequence numbers past their SYNs: the capture was "
                               "filtered to set-up and tear-down, so their data and ACKs were never kept; sequence "
                               "numbers past the data seen are no loss", cleaned.height))
    for s, note in _window_scale_notes(cleaned).items():
        conn_notes.setdefault(s, []).append(note)
    for s, notes in _wrap_notes(cleaned).items():
        conn_notes.setdefault(s, []).extend(notes)
    cleaned = cleaned.drop(SEQ_RAW, strict=False)
    return cleaned, file_notes, conn_notes


def _duplicates(keyed: pl.DataFrame) -> pl.Series:
    """Rows that copy an earlier row within DUPLICATE_WINDOW_NS (IDENTIFIED_WINDOW_NS where a
    non-zero IPv4 id and a TCP timestamp name the packet).
    An IPv4 id repeats across a real retransmission only by chance, and a retransmission carries a
    new TSval unless it leaves within the same clock tick. IPv6 without timestamps has neither:
    there a resend within 1 ms of the original (a sub-millisecond RTT, repaired at once) is taken
    for a copy, rather than every copy of a merged capture for a retransmission."""
    cols = keyed.select(
        pl.col("stream").cast(pl.UInt32), pl.col("dir").cast(pl.UInt8), "seq_rel", "ack_rel", "ts_ns", "win_scaled",
        pl.col("frame").cast(pl.UInt64),
        pl.col("ip_id").cast(pl.Int64).fill_null(-1), pl.col("opt_ts_val").cast(pl.Int64).fill_null(-1),
        pl.col("opt_ts_ecr").cast(pl.Int64).fill_null(-1),
        pl.col("payload_len").cast(pl.UInt32),
        flags=(pl.col("flag_syn").cast(pl.UInt8) + pl.col("flag_fin").cast(pl.UInt8) * 2
               + pl.col("flag_rst").cast(pl.UInt8) * 4 + pl.col("flag_ack").cast(pl.UInt8) * 8),
        sack_key=(pl.col("sack_left").list.sum().fill_null(0) * 1_000_003
                  + pl.col("sack_right").list.sum().fill_null(0)).cast(pl.Int64),
    )
    arrays = {c: np.ascontiguousarray(cols[c].to_numpy()) for c in cols.columns}
    dup = frame_from_columns([_native.analysis_duplicates(arrays, DUPLICATE_WINDOW_NS, IDENTIFIED_WINDOW_NS)]).to_series()
    if not dup.any():
        return dup
    # A pure ACK without an IPv4 id to tell it apart is the same frame as the duplicate ACK TCP
    # sends for each segment that arrives out of order (its TCP timestamp too, within one clock
    # tick: IPv6 without SACK repeats its duplicate ACKs byte for byte), and a segment without an
    # id or a timestamp the same as its own resend (a fast retransmit on a sub-millisecond path).
    # Two merged capture points copy every frame, so such a frame is taken for a copy only in a
    # connection where frames that carry an identity (an id; a timestamp on data) were copied as
    # well, or where copies are WEAK_COPY_SHARE of its frames or more (a stack without ids, every
    # frame copied): a few such repeats and nothing else copied are TCP's own (the simulator's
    # 4.4BSD, its ids all 0, lost its duplicate ACKs and a fast retransmit, and a loss read as
    # lost ACKs).
    weak = (pl.col("ip_id").fill_null(0) == 0) & ((pl.col("payload_len") == 0) | pl.col("opt_ts_val").is_null())
    rows = dup.arg_true()
    marks = keyed.select("stream", "payload_len", "ip_id", "opt_ts_val")[rows].select("stream", weak=weak)
    copied = marks.filter(~pl.col("weak"))["stream"].unique().to_list()
    weak_counts = marks.filter(pl.col("weak")).group_by("stream").len()
    if weak_counts.height:
        totals = keyed.select("stream").filter(pl.col("stream").is_in(weak_counts["stream"].implode())).group_by(
            "stream").len()
        shares = weak_counts.join(totals, on="stream", suffix="_all")
        copied += shares.filter(pl.col("len") >= WEAK_COPY_SHARE * pl.col("len_all"))["stream"].to_list()
    kept = marks.select(pl.col("weak") & ~pl.col("stream").is_in(pl.Series(copied, dtype=marks["stream"].dtype)
                                                                   .implode())).to_series()
    return dup.scatter(rows.filter(kept), False)


def _inconsistency(packets: pl.DataFrame) -> int:
    """What a wrong packet order produces: data seen again (retransmissions) and ACKs of data not
    yet seen. The right order of a capture has the fewest."""
    st = sender_state(packets)
    return int(st["retransmission"].sum()) + int(st["acked_unseen"].sum())


def _order(packets: pl.DataFrame) -> tuple[pl.DataFrame, bool]:
    """Timestamps go backwards in the file: either packets were written out of order (a multi-queue
    tap, merged files: time order is right) or the capture's clock stepped back (an NTP step: the
    file order is right and the times after the step are off by it). The order with fewer
    retransmissions and ACKs of unseen data wins; time order on a tie. In file order, every
    backward step is added to all later timestamps, so they run forward again."""
    in_file = packets.sort("frame")
    step = (pl.col("ts_ns").shift(1) - pl.col("ts_ns")).clip(lower_bound=0).fill_null(0)
    repaired = in_file.with_columns(ts_ns=pl.col("ts_ns") + step.cum_sum())
    if _inconsistency(repaired) < _inconsistency(packets):
        return repaired, True
    return by_stream_time(packets), False


def _mss_offered(packets: pl.DataFrame) -> pl.DataFrame:
    """(stream, dir, _offered): the MSS each direction's receiver offered in its SYN."""
    return (
        packets.filter(pl.col("flag_syn") & pl.col("opt_mss").is_not_null())
        .group_by(["stream", "dir"]).agg(pl.col("opt_mss").first().alias("_offered"))
        .with_columns(dir=(1 - pl.col("dir").cast(pl.Int64)).cast(packets.schema["dir"]))
    )


def _superframes_by_mss(packets: pl.DataFrame, offered: pl.DataFrame) -> pl.DataFrame:
    """Where the receiver's SYN offered an MSS, a datagram is a super-frame exactly when its payload
    exceeds that offer. More payload never crossed a wire as one segment (TSO before segmentation,
    GRO after coalescing), though the datagram can fit the decoder's jumbo limit (three 1448-byte
    segments); no more is one segment, though the decoder, which cannot know the link's MTU, flags
    it for its size (loopback's 64 KB segments, FORE ATM's 9204-byte ones). Without the SYN the
    decoder's flag stands. `offered`: `_mss_offered(packets)`."""
    if offered.height == 0:
        return packets
    out = packets.join(offered, on=["stream", "dir"], how="left", maintain_order="left")
    by_mss = pl.when(pl.col("_offered").is_null()).then(pl.col("superframe")).otherwise(
        pl.col("payload_len") > pl.col("_offered"))
    return out.with_columns(superframe=by_mss).drop("_offered")


# The loopback interface's MTU (Linux lo: 65536): every datagram that fits an IP header's length
# field crosses it as one segment.
LOOPBACK_MAX_IP_LEN = 65535


def loopback_streams(endpoints: pl.DataFrame) -> frozenset[int]:
    """Streams whose two addresses are loopback ones (127.0.0.0/8, ::1): they never left the host.
    `endpoints`: one row per (stream, dir) with src_addr and dst_addr."""
    def lo(c: str) -> pl.Expr:
        return pl.col(c).str.starts_with("127.") | (pl.col(c) == "::1")
    return frozenset(endpoints.filter(lo("src_addr") & lo("dst_addr"))["stream"].to_list())


def _superframes_on_loopback(packets: pl.DataFrame, offered: pl.DataFrame, loopback: frozenset[int]) -> pl.DataFrame:
    """Where no SYN told the MSS, a connection between loopback addresses never left the host: lo
    carries 64 KB datagrams whole, so its 65483-byte segments are segments, not TSO/GRO
    super-frames (tcpdump on lo mid-connection read every full segment as one, and segment sizes
    from the short tails). Only a datagram past IP's 16-bit length (BIG TCP) is one."""
    if not loopback:
        return packets
    flagged = (pl.col("superframe") & (pl.col("ip_len") <= LOOPBACK_MAX_IP_LEN)
               & pl.col("stream").is_in(list(loopback)))
    keys = (packets.filter(flagged).select("stream", "dir").unique()
            .join(offered.select("stream", "dir"), on=["stream", "dir"], how="anti"))
    if keys.height == 0:
        return packets
    out = packets.join(keys.with_columns(_lo=pl.lit(True)), on=["stream", "dir"], how="left", maintain_order="left")
    return out.with_columns(superframe=pl.col("superframe") & ~(flagged & pl.col("_lo").fill_null(False))).drop("_lo")


# Without the SYN's MSS: the IP datagram an Ethernet link carries at most, the smallest segment a
# full one can be (RFC 1122's default MSS), and how many of a direction's datagrams must be of that
# length for it to be its segment.
ETHERNET_MTU = 1500
MIN_FULL_SEGMENT = 536
MIN_SEGMENTS_SEEN = 4


def _superframes_by_common_segment(packets: pl.DataFrame, offered: pl.DataFrame) -> pl.DataFrame:
    """Where no SYN told the receiver's MSS (the capture began mid-connection): a datagram larger
    than Ethernet carries whose payload is exactly two or more of its direction's most common
    Ethernet-sized segment is a super-frame (GRO at a receiver-side tap merges consecutive
    segments; a path that carried it whole would have made it the segment size). nDPI's
    ultrasurf.pcap, taken on a cloud VM: 2576-byte frames among 1288-byte ones read as jumbo frames
    lost (jumbo_slot_exhaustion). The decoder's own flag (too large for any link) stands."""
    big = packets.filter((pl.col("ip_len") > ETHERNET_MTU) & (pl.col("payload_len") > 0) & ~pl.col("superframe"))
    if big.height == 0:
        return packets
    keys = big.select("stream", "dir").unique().join(offered.select("stream", "dir"), on=["stream", "dir"], how="anti")
    if keys.height == 0:
        return packets
    common = (
        packets.join(keys, on=["stream", "dir"], how="semi")
        .filter((pl.col("payload_len") >= MIN_FULL_SEGMENT) & (pl.col("ip_len") <= ETHERNET_MTU))
        .group_by(["stream", "dir", "payload_len"]).agg(pl.len().alias("_n"))
        .filter(pl.col("_n") >= MIN_SEGMENTS_SEEN)
        .sort(["_n", "payload_len"], descending=True)
        .group_by(["stream", "dir"], maintain_order=True).agg(pl.col("payload_len").first().alias("_common"))
    )
    if common.height == 0:
        return packets
    out = packets.join(common, on=["stream", "dir"], how="left", maintain_order="left")
    merged = ((pl.col("ip_len") > ETHERNET_MTU) & (pl.col("payload_len") >= 2 * pl.col("_common"))
              & (pl.col("payload_len") % pl.col("_common") == 0)).fill_null(False)
    return out.with_columns(superframe=pl.col("superframe") | merged).drop("_common")


def _window_scale_notes(packets: pl.DataFrame) -> dict[int, Note]:
    """Connections whose windows are raw field values because the SYNs that carry the scale were not
    both seen: the window rules stay silent there rather than read a scaled window as tiny, but for
    a zero window, which is zero at every scale."""
    # (A reset's window means nothing: a refused SYN's RST does not make the connection's windows unknown.)
    unknown = packets.filter(~pl.col("flag_syn") & ~pl.col("flag_rst") & ~pl.col("wscale_known"))
    out = {}
    for s, g in unknown.group_by("stream", maintain_order=True):
        out[int(s[0])] = Note(
            "window_scale_unknown", f"{g.height} packets carry a window whose scale is unknown (both SYNs were not "
            "captured, or the snaplen cut their options): windows are the raw field values, a floor of the real ones, "
            "so no stall is attributed to a window too small but a zero one", g.height,
            _examples(g))
    return out


# A window of unknown scale is read as unscaled when the sender's flight never went past the raw
# window's edge (at most this share of its data packets: a tap's timing) and filled it to within a
# segment at least this many times. Under any scale the window would be twice the raw value or more,
# and a sender stopping again and again at the raw edge, never beyond, would be a coincidence.
UNSCALED_OVER_SHARE = 0.01
UNSCALED_FILLS_MIN = 3


def unscaled_windows(state: pl.DataFrame) -> dict[int, Note]:
    """Connections of unknown window scale (no SYN seen) whose data senders kept inside the raw
    advertised window and filled it: the windows are read as unscaled (scale 0, as every stack
    before RFC 1323 and any peer that did not offer scaling), so the window rules apply."""
    data = state.filter(~pl.col("wscale_known") & (pl.col("payload_len") > 0) & ~pl.col("retransmission")
                        & pl.col("usable_window").is_not_null() & ~pl.col("flag_syn"))
    if data.height == 0:
        return {}
    seg = pl.col("payload_len").max().over(["stream", "dir"])
    per = data.with_columns(_seg=seg).group_by(["stream", "dir"]).agg(
        # (One byte past the edge is a FIN's sequence number or a persist timer's probe: any scale.)
        pl.len().alias("n"), (pl.col("usable_window") < -1).sum().alias("over"),
        # (A raw window under two segments is "filled" by any packet: a scaled one read raw, small.)
        ((pl.col("usable_window") < pl.col("_seg")) & (pl.col("peer_window") >= 2 * pl.col("_seg"))).sum().alias("fills"))
    releases = window_releases(state)
    out: dict[int, Note] = {}
    for (stream,), g in per.group_by("stream", maintain_order=True):
        inside = all(r["over"] <= UNSCALED_OVER_SHARE * r["n"] for r in g.iter_rows(named=True))
        fills = int(g["fills"].max())
        released = releases.get(int(stream), 0)
        if inside and fills >= UNSCALED_FILLS_MIN:
            out[int(stream)] = Note(
                "window_scale_inferred", f"the windows are read as unscaled: the sender's flight filled the raw "
                f"advertised window to within a segment {fills} times and never went past it, which no scaled window "
                "(twice the raw value or more) would explain; the window rules apply", fills)
        elif inside and released >= UNSCALED_FILLS_MIN:
            out[int(stream)] = Note(
                "window_scale_inferred", f"the windows are read as unscaled: {released} times the sender waited with "
                "less than a segment of room in the raw window and sent its next data right after the receiver "
                "opened it (an ACK of nothing new), never going past it; twice the raw window would have let a "
                "segment go without that update; the window rules apply", released)
    return out


def window_releases(state: pl.DataFrame) -> dict[int, int]:
    """Per stream of unknown window scale: how many times new data came as the connection's next
    packet after a pure window update from the peer (same ACK, larger window), where the raw window
    before it left the sender less than its largest segment of room. The update released a sender
    the raw window held (a slow reader's window of Linux 2.0, which never scales: 2800 bytes of room
    against 4312-byte segments, each reopened by a read), which is unscaled_windows' evidence where
    the raw window is under two segments and a flight "fills" it by chance."""
    rows = (state.filter(~pl.col("wscale_known"))
            .select("stream", "dir", "ts_ns", "flag_ack", "ack_rel", "win_scaled", "payload_len", "new_data",
                    "usable_window", "flag_syn", "flag_fin", "flag_rst"))
    if rows.height == 0:
        return {}
    rows = rows.sort(["stream", "ts_ns"], maintain_order=True).with_row_index("_row")
    pure = pl.col("flag_ack") & (pl.col("payload_len") == 0) & ~pl.col("flag_syn") & ~pl.col("flag_fin") & ~pl.col("flag_rst")
    acks = (rows.filter(pure).with_columns(
        prev_ack=pl.col("ack_rel").shift(1).over(["stream", "dir"]),
        prev_win=pl.col("win_scaled").shift(1).over(["stream", "dir"]))
        .select("_row", update=(pl.col("ack_rel") == pl.col("prev_ack")) & (pl.col("win_scaled") > pl.col("prev_win")),
                gain=pl.col("win_scaled") - pl.col("prev_win")))
    seg = pl.col("payload_len").max().over(["stream", "dir"])
    marked = (rows.with_columns(_seg=seg.cast(pl.Int64)).join(acks, on="_row", how="left")
              .with_columns(p_dir=pl.col("dir").shift(1).over("stream"), p_update=pl.col("update").shift(1).over("stream"),
                            p_gain=pl.col("gain").shift(1).over("stream")))
    # The room before the update: what the data row's (after it was sent) would have been with
    # the old window, before this packet's payload.
    released = marked.filter(pl.col("new_data") & (pl.col("payload_len") > 0) & (pl.col("p_dir") != pl.col("dir"))
                             & pl.col("p_update").fill_null(False)
                             & (pl.col("usable_window") - pl.col("p_gain") + pl.col("payload_len").cast(pl.Int64)
                                < pl.col("_seg")))
    return {int(s): int(n) for s, n in released.group_by("stream").len().iter_rows()}


# A window scale is 0 to 14 (RFC 7323 2.3).
MAX_WSCALE = 14
# Data packets a direction needs before its flight bounds its peer's window scale.
SCALE_FLOOR_MIN_PACKETS = 20


def window_scale_floors(state: pl.DataFrame) -> dict[tuple[int, int], int]:
    """{(stream, dir of the window's owner): scale} for windows of unknown scale (no SYN seen) that
    the peer's data shows to be scaled: the smallest scale under which the flight stayed inside the
    advertised window (but for UNSCALED_OVER_SHARE of its packets, a FIN or a probe a byte past
    the edge). No sender runs past the window, so the real scale is at least this: the raw window
    times 2^scale is a floor of the real one, closer than the raw value (a Linux receiver's 248
    raw under its scale of 10 behind a 68 KB flight: 248 bytes raw, 253,952 as the floor). Where
    the raw window held the flight (scale 0) `unscaled_windows` decides."""
    data = state.filter(~pl.col("wscale_known") & (pl.col("payload_len") > 0) & ~pl.col("retransmission")
                        & ~pl.col("flag_syn") & (pl.col("peer_window") > 0) & (pl.col("in_flight") > 0))
    if data.height == 0:
        return {}
    # The scale each packet needs: log2 of its flight over the raw window, rounded up.
    need = (pl.col("in_flight") - 1).cast(pl.Float64) / pl.col("peer_window").cast(pl.Float64)
    per = data.select("stream", "dir", need.log(2).ceil().clip(0, MAX_WSCALE + 1).alias("s")).group_by(
        ["stream", "dir"]).agg(pl.len().alias("n"), pl.col("s").quantile(1 - UNSCALED_OVER_SHARE, "lower").alias("s")).sort(
        ["stream", "dir"])  # (notes in a stable order)
    out: dict[tuple[int, int], int] = {}
    for stream, d, n, scale in per.iter_rows():
        if n >= SCALE_FLOOR_MIN_PACKETS and scale is not None and 1 <= scale <= MAX_WSCALE:
            out[(int(stream), 1 - int(d))] = int(scale)
    return out


def apply_scale_floors(state: pl.DataFrame, floors: dict[tuple[int, int], int]) -> pl.DataFrame:
    """`state` with each (stream, owner)'s windows multiplied by 2^scale: the owner's own advertised
    windows (win_scaled) and, on its peer's packets, the peer's view of them (peer_window, and the
    usable window they leave)."""
    if not floors:
        return state
    keys = pl.DataFrame({"stream": [k[0] for k in floors], "_owner": [k[1] for k in floors],
                         "_factor": [1 << v for v in floors.values()]},
                        schema={"stream": state.schema["stream"], "_owner": pl.Int64, "_factor": pl.Int64})
    own = keys.rename({"_owner": "_d", "_factor": "_own"})
    peer = keys.with_columns(_d=1 - pl.col("_owner")).drop("_owner").rename({"_factor": "_peer"})
    st = (state.with_columns(_d=pl.col("dir").cast(pl.Int64))
          .join(own, on=["stream", "_d"], how="left").join(peer, on=["stream", "_d"], how="left"))
    old = pl.col("peer_window")
    return st.with_columns(
        win_scaled=pl.when(pl.col("_own").is_not_null()).then(pl.col("win_scaled") * pl.col("_own")).otherwise(
            pl.col("win_scaled")).cast(state.schema["win_scaled"]),
        usable_window=pl.when(pl.col("_peer").is_not_null()).then(
            pl.col("usable_window") + old * (pl.col("_peer") - 1)).otherwise(pl.col("usable_window")).cast(
            state.schema["usable_window"]),
        peer_window=pl.when(pl.col("_peer").is_not_null()).then(old * pl.col("_peer")).otherwise(old).cast(
            state.schema["peer_window"]),
    ).drop("_d", "_own", "_peer")


def _wrap_notes(packets: pl.DataFrame) -> dict[int, list[Note]]:
    """Directions whose sequence numbers pass 2^32 on the wire. The analysis works on unwrapped
    relative numbers, so nothing changes; the note says where raw numbers jump back to 0."""
    if SEQ_RAW not in packets.columns:
        return {}
    # seq_raw - seq_rel is the direction's ISN (mod 2^32) on every one of its packets: a direction
    # wraps when its ISN plus its highest sequence end passes 2^32 (rows are read only then).
    isn = (pl.col(SEQ_RAW).cast(pl.Int64) - pl.col("seq_rel")) % _WRAP
    end = pl.col("seq_rel") + pl.col("payload_len").cast(pl.Int64)
    # A reset answering a SYN carries sequence number 0 (RFC 9293 3.10.7.1), read as one past an
    # ISN of 2^32 - 1: not a wrap.
    cols = packets.filter(~pl.col("flag_rst")).select("stream", "dir", "ts_ns", "frame", SEQ_RAW, "seq_rel",
                                                      "payload_len")
    tops = cols.group_by(["stream", "dir"]).agg(isn.first().alias("_isn"), end.max().alias("_top")).filter(
        pl.col("_isn") + pl.col("_top") >= _WRAP)
    if tops.height == 0:
        return {}
    # Per wrapping direction: how many packets are past the wrap, and the first few in time order
    # (a bounded pick per group: sorting every wrapped row cost a quarter second on 2 M packets).
    wrapped = cols.filter((isn + end) >= _WRAP).group_by(["stream", "dir"]).agg(
        pl.len().alias("n"), pl.struct("ts_ns", "frame").bottom_k_by(["ts_ns", "frame"], 5).alias("first"),
        pl.col("ts_ns").min().alias("t0")).sort(["stream", "t0", "dir"])
    out: dict[int, list[Note]] = {}
    for s, d, n, first, _ in wrapped.iter_rows():
        first = [r["frame"] for r in sorted(first, key=lambda r: (r["ts_ns"], r["frame"]))]
        out.setdefault(int(s), []).append(Note(
            "sequence_wrap", f"direction {int(d)}'s sequence numbers wrap past 2^32 on the wire (from frame "
            f"{int(first[0])}); the analysis uses unwrapped relative numbers", int(n), tuple(int(f) for f in first)))
    return out


# A connection whose capture missed data (acknowledged, never shown) as many times as this share of
# its advancing ACKs (and this many times or more) is a sampled or lossy capture throughout, not one
# that missed a packet here and there (a busy tcpdump): the exact packet order the cause rules read
# is not there. Public captures: 57 of 1,694 connections with ten advancing ACKs or more reach it (trimmed,
# carved or crafted test captures); with every third frame left out, 576 of 624; simulated and
# recorded captures, none.
SAMPLED_SHARE = 0.1
SAMPLED_MIN = 3


def sampled_streams(state: pl.DataFrame) -> dict[int, tuple[int, int]]:
    """Streams whose capture missed data throughout (SAMPLED_SHARE): stream -> (packets the
    capture missed, ACKs that advanced). Missed: an ACK covering data beyond all the tap had seen
    (acked_unseen), or a hole in a sender's sequence that its peer acknowledged past and nothing
    seen ever filled (a sender never skips bytes, and a hole the network made is filled by a resend
    before it is acknowledged): at the sender's own tap the data the capture dropped is ACKed only
    after later data was seen, so only the holes show it."""
    cols = state.select("stream", "dir", "payload_len", "seq_rel", "seq_end", "acked_unseen", "acks_new", "ack_rel")
    data = cols.filter(pl.col("payload_len") > 0).select(
        "stream", "dir", "seq_rel", "seq_end", before=pl.col("seq_end").cum_max().shift(1).over(["stream", "dir"]))
    holes = data.filter(pl.col("seq_rel") > pl.col("before")).select("stream", "dir", at=pl.col("before"))
    missed = cols.filter(pl.col("acked_unseen")).group_by("stream").len()
    if holes.height:
        # The seen segment that starts at or below the hole's first byte and reaches furthest past it.
        cover = (data.group_by(["stream", "dir", "seq_rel"]).agg(pl.col("seq_end").max())
                 .sort("seq_rel").with_columns(reach=pl.col("seq_end").cum_max().over(["stream", "dir"])))
        acked = cols.filter(pl.col("ack_rel").is_not_null()).group_by(["stream", "dir"]).agg(
            pl.col("ack_rel").max().alias("acked")).select("stream", "acked", dir=(1 - pl.col("dir").cast(pl.Int64))
                                                            .cast(pl.UInt8))
        unfilled = (holes.sort("at").join_asof(cover.select("stream", "dir", "seq_rel", "reach"), left_on="at",
                                               right_on="seq_rel", by=["stream", "dir"], strategy="backward",
                                               check_sortedness=False)
                    .join(acked, on=["stream", "dir"], how="inner")
                    .filter((pl.col("reach").is_null() | (pl.col("reach") <= pl.col("at")))
                            & (pl.col("acked") > pl.col("at")))
                    .group_by("stream").len())
        missed = pl.concat([missed, unfilled]).group_by("stream").agg(pl.col("len").sum())
    if missed.height == 0:
        return {}
    counts = (missed.join(_advancing_acks(cols, missed["stream"]), on="stream")
              .filter((pl.col("len") >= SAMPLED_MIN) & (pl.col("len") >= SAMPLED_SHARE * pl.col("advanced"))))
    return {int(r[0]): (int(r[1]), int(r[2])) for r in counts.select("stream", "len", "advanced").iter_rows()}


# Out-of-order events needed before a stream's two directions are read as clocked apart, the share
# of its advancing ACKs they must reach, how soon the packet that restores the order must show, and
# how alike their leads must be (a clock offset is one constant: the spread between the 10th and
# 90th percentiles within a quarter of the median, or DISORDER_SPREAD_NS).
DISORDER_MIN = 3
DISORDER_SHARE = 0.1
DISORDER_LEAD_NS = 1_000_000_000
DISORDER_SPREAD_NS = 1_000_000
DISORDER_HEAD_ROWS = 20_000


def disordered_streams(state: pl.DataFrame) -> dict[int, tuple[int, int]]:
    """Streams whose two directions' packets are offset in time against each other: stream ->
    (events, median lead in ns). Wherever a tap sits, data passes it before the ACK that covers it,
    and an ACK that opens a window passes it before the data sent into that window. An ACK seen
    before the segment it acknowledges, that segment shown after it, is two capture points merged
    with clocks apart (or a capture that stamps one direction late); so is new data past every
    window edge the peer had advertised (scales known), the ACK that opened it shown after it, each
    by about the same time. Where those leads vary (ACKs the capture dropped, a sender that overran
    the window) it is not read so: acked_unseen and the sampled capture's rule take those."""
    cols = state.select("stream", "dir", "ts_ns", "payload_len", "seq_end", "new_data", "acked_unseen", "ack_rel",
                        "win_scaled", "wscale_known", "flag_ack", "flag_syn", "flag_fin", "flag_rst", "acks_new",
                        "usable_window")
    events: list[pl.DataFrame] = []
    early = cols.filter(pl.col("acked_unseen") & pl.col("flag_ack")).select(
        "stream", sender=(1 - pl.col("dir").cast(pl.Int64)), ack="ack_rel", t="ts_ns")
    if early.height:
        # The segment that ends at the ACK, shown later: not merely later data past it (the ACKed
        # data itself never shown is the capture's loss, acked_unseen's case).
        shown = (cols.filter((pl.col("payload_len") > 0) | pl.col("flag_syn") | pl.col("flag_fin"))
                 .group_by(["stream", "dir", "seq_end"]).agg(pl.col("ts_ns").min().alias("shown"))
                 .select("stream", "shown", ack="seq_end", sender=pl.col("dir").cast(pl.Int64)))
        events.append(early.join(shown, on=["stream", "sender", "ack"], how="inner")
                      .select("stream", lead=pl.col("shown") - pl.col("t"), acked_first=pl.lit(True)))
    # New data past the latest window (the tap's usable_window below zero) is checked against every
    # edge advertised before it: a receiver that shrank its window leaves the earlier edge standing.
    over = cols.filter(pl.col("new_data") & (pl.col("usable_window") < -1) & pl.col("wscale_known")
                       & ~pl.col("flag_syn"))["stream"].unique()
    advanced_head = None
    if over.len():
        # A connection's first DISORDER_HEAD_ROWS rows tell (a window overrun on every packet of a
        # long one, the bench's synthetic sender, would otherwise cost joins over all of them).
        part = cols.filter(pl.col("stream").is_in(over.implode())).group_by("stream", maintain_order=True).head(
            DISORDER_HEAD_ROWS)
        advanced_head = part.group_by("stream").agg(pl.col("acks_new").sum().alias("advanced_head"))
        edges = (part.filter(pl.col("flag_ack") & ~pl.col("flag_rst") & pl.col("win_scaled").is_not_null())
                 .select("stream", "ts_ns", "ack_rel", sender=(1 - pl.col("dir").cast(pl.Int64)),
                         edge=pl.col("ack_rel") + pl.col("win_scaled").cast(pl.Int64))
                 .sort("ts_ns").with_columns(edge=pl.col("edge").cum_max().over(["stream", "sender"])))
        data = (part.filter(pl.col("new_data") & (pl.col("payload_len") > 0) & pl.col("wscale_known"))
                .select("stream", "ts_ns", "seq_end", start=pl.col("seq_end") - pl.col("payload_len").cast(pl.Int64),
                        sender=pl.col("dir").cast(pl.Int64)).sort("ts_ns"))
        past = (data.join_asof(edges.select("stream", "sender", "ts_ns", "edge"), on="ts_ns", by=["stream", "sender"],
                               strategy="backward", allow_exact_matches=False, check_sortedness=False)
                .filter(pl.col("edge").is_not_null() & (pl.col("seq_end") > pl.col("edge") + 1))
                .select("stream", "sender", "ts_ns", "seq_end", "start"))
        # The first edge to reach the data (edges only grow, so the smallest that reaches it), from
        # an ACK of what came before the data: one that acknowledges the data itself was no window
        # the sender waited for (a sender that ignored the window, as the bench's synthetic one does).
        opened = edges.sort(["edge", "ts_ns"]).select("stream", "sender", "edge", opened="ts_ns", opener_ack="ack_rel")
        events.append(past.sort("seq_end").join_asof(opened, left_on="seq_end", right_on="edge",
                                                     by=["stream", "sender"], strategy="forward",
                                                     check_sortedness=False)
                      .filter(pl.col("opener_ack") <= pl.col("start"))
                      .select("stream", lead=pl.col("opened") - pl.col("ts_ns"), acked_first=pl.lit(False)))
    if not events:
        return {}
    led = pl.concat(events).filter((pl.col("lead") > 0) & (pl.col("lead") <= DISORDER_LEAD_NS))
    overrun = ~pl.col("acked_first")
    counted = (led.group_by("stream").agg(
        pl.len().alias("n"), pl.col("lead").median().alias("lead"), pl.col("acked_first").sum().alias("n_acked"),
        overrun.sum().alias("n_over"), pl.col("lead").filter(overrun).median().alias("over_lead"),
        (pl.col("lead").filter(overrun).quantile(0.9) - pl.col("lead").filter(overrun).quantile(0.1)).alias("spread"))
               .join(_advancing_acks(cols, led["stream"].unique()), on="stream"))
    if advanced_head is not None:
        counted = counted.join(advanced_head, on="stream", how="left")
    else:
        counted = counted.with_columns(advanced_head=pl.lit(0, pl.UInt32))

    def enough(n: str, of: str) -> pl.Expr:
        return (pl.col(n) >= DISORDER_MIN) & (pl.col(n) >= DISORDER_SHARE * pl.col(of))

    # A segment shown after its own ACK has no other reading (the capture's loss would never show
    # it); an overrun also has the dropped ACK's, the careless sender's and a window scale misread
    # (a Windows client 72 ms away, its server's flight a window past the unscaled edge, opened a
    # round trip later each time: Zeek's 206_example_b.pcap): its leads must agree, and the
    # handshake itself must be out of order (the clocks' offset shows there first).
    shaken_apart = _handshake_out_of_order(cols) if counted["n_over"].sum() else []
    counted = counted.filter(enough("n_acked", "advanced") | (
        enough("n_over", "advanced_head") & pl.col("stream").is_in(shaken_apart)
        & (pl.col("spread") <= pl.max_horizontal(pl.lit(DISORDER_SPREAD_NS), pl.col("over_lead") / 4))))
    return {int(r["stream"]): (int(r["n"]), int(r["lead"])) for r in counted.iter_rows(named=True)}


def _advancing_acks(cols: pl.DataFrame, streams: pl.Series) -> pl.DataFrame:
    """(stream, advanced): how many ACKs advanced in each of `streams` (only theirs are counted)."""
    return (cols.filter(pl.col("stream").is_in(streams.implode())).group_by("stream")
            .agg(pl.col("acks_new").sum().alias("advanced")))


def _handshake_out_of_order(cols: pl.DataFrame) -> list[int]:
    """Streams whose SYN/ACK shows before the SYN it answers, or whose initiator acknowledged the
    SYN/ACK before it shows: no single tap sees a handshake so."""
    syn = cols.filter(pl.col("flag_syn") & ~pl.col("flag_ack") & (pl.col("dir") == 0)).group_by("stream").agg(
        pl.col("ts_ns").min().alias("syn"))
    synack = cols.filter(pl.col("flag_syn") & pl.col("flag_ack") & (pl.col("dir") == 1)).group_by("stream").agg(
        pl.col("ts_ns").min().alias("synack"))
    acked = cols.filter(~pl.col("flag_syn") & pl.col("flag_ack") & (pl.col("dir") == 0)
                        & (pl.col("ack_rel") >= 1)).group_by("stream").agg(pl.col("ts_ns").min().alias("acked"))
    hs = synack.join(syn, on="stream", how="left").join(acked, on="stream", how="left")
    return hs.filter((pl.col("synack") < pl.col("syn")) | (pl.col("acked") < pl.col("synack")))["stream"].to_list()


def unseen_notes(state: pl.DataFrame) -> dict[int, list[Note]]:
    """ACKs covering data the capture never showed: the capture dropped it, the network did not."""
    out: dict[int, list[Note]] = {}
    un = state.filter(pl.col("acked_unseen"))
    for s, g in un.group_by("stream", maintain_order=True):
        out[int(s[0])] = [Note("acked_unseen", f"{g.height} ACKs cover data the capture never showed: the capture "
                               "missed packets (or started mid-flight); this is not counted as loss",
                               g.height, _examples(g))]
    return out


# Decoder anomalies that say something about the capture rather than the network, with what they
# mean for the analysis (superframe and payload_truncated get their own notes from the packets).
_DECODE_ANOMALIES = {
    "ts_invalid": ("timestamps_invalid", "packets carry a sub-second timestamp field out of range (kept as read): "
                   "times around them are unreliable"),
    "caplen_gt_len": ("record_lengths_odd", "records claim more captured bytes than the packet had"),
    "caplen_gt_snaplen": ("record_lengths_odd", "records hold more bytes than the capture's snaplen"),
    "bad_option": ("tcp_options_damaged", "packets carry a malformed TCP option (the options before it are kept)"),
    "options_truncated": ("tcp_options_damaged", "packets had their TCP options cut by the snaplen (the options "
                          "before the cut are kept)"),
    "wscale_clamped": ("window_scale_clamped", "SYNs offer a window scale above 14, used as 14 (RFC 7323)"),
    "ip_length_mismatch": ("ip_length_mismatch", "packets claim a longer IP datagram than the frame carried"),
}


def decode_notes(summary: Any) -> list[Note]:
    """File notes from the decoder's accounting (a DecodeSummary): records that could not be
    decoded, by reason; decoder anomalies; the capture's own drop counters. None for a clean file."""
    if summary is None:
        return []
    out: list[Note] = []
    bad = {k: v for k, v in (summary.not_decoded or {}).items() if v}
    if bad:
        n = sum(bad.values())
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(bad.items()))
        out.append(Note("not_decoded", f"{n} records could not be decoded ({reasons}): any TCP in them is missing "
                        "from the analysis", n))
    merged: dict[str, tuple[str, int]] = {}
    for name, count in sorted((summary.anomalies or {}).items()):
        if name in _DECODE_ANOMALIES and count:
            kind, text = _DECODE_ANOMALIES[name]
            prev = merged.get(kind)
            merged[kind] = (text if prev is None else f"{prev[0]}; {text}", count + (prev[1] if prev else 0))
    for kind, (text, count) in merged.items():
        out.append(Note(kind, f"{count} {text}", count))
    container = getattr(summary, "container", None) or {}
    drops = {k: container.get(k) or 0 for k in ("if_drop", "os_drop", "epb_dropcount")}
    if any(drops.values()):
        total = sum(drops.values())
        out.append(Note("capture_drops", f"the capture reports {total} packets it dropped itself "
                        f"({', '.join(f'{k} {v}' for k, v in drops.items() if v)}): data ACKed but never seen is "
                        "the capture's loss, not the network's", total))
    return out
