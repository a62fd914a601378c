"""Artifacts of how the capture was taken, kept apart from what the network did: frames captured
twice (two capture points merged), timestamps that go backwards, TSO/GRO super-frames (one send seen
as one large datagram), payload cut by the snaplen, ACKs of data the capture never showed (a capture
drop, never called loss). Each becomes a note; duplicated frames are removed before the sender state
is computed, so that none can look like a retransmission.
"""

from __future__ import annotations

import polars as pl

from stallscope.analyzers.findings import Note

# Two copies of one frame: same direction, sequence, ACK, IP id, length and flags this close in time.
DUPLICATE_WINDOW_NS = 1_000_000
_IDENTITY = ["stream", "dir", "seq_rel", "ack_rel", "ip_id", "payload_len", "flags_key", "win_scaled"]


def _examples(df: pl.DataFrame) -> tuple[int, ...]:
    return tuple(int(f) for f in df["frame"].head(5).to_list())


def clean(packets: pl.DataFrame) -> tuple[pl.DataFrame, list[Note], dict[int, list[Note]]]:
    """(packets without duplicated frames, file notes, notes per stream)."""
    file_notes: list[Note] = []
    conn_notes: dict[int, list[Note]] = {}
    back = packets.sort("frame").filter(pl.col("ts_ns") < pl.col("ts_ns").shift(1))
    if back.height:
        file_notes.append(Note("timestamps_backwards", f"{back.height} packets carry a timestamp earlier than the "
                               "packet before them in the file; the analysis orders packets by time",
                               back.height, _examples(back)))
    keyed = packets.sort(["stream", "ts_ns", "frame"]).with_columns(
        flags_key=pl.col("flag_syn").cast(pl.UInt8) * 1 + pl.col("flag_fin").cast(pl.UInt8) * 2
        + pl.col("flag_rst").cast(pl.UInt8) * 4 + pl.col("flag_ack").cast(pl.UInt8) * 8)
    prev_ts = pl.col("ts_ns").shift(1).over(_IDENTITY)
    # An IPv4 id repeats across a real retransmission only by chance; IPv6 has none, so there a copy
    # must also be within the window of its twin.
    dup = pl.col("ip_id").is_not_null() & (pl.col("ts_ns") - prev_ts <= DUPLICATE_WINDOW_NS)
    keyed = keyed.with_columns(_dup=dup.fill_null(False))
    dups = keyed.filter(pl.col("_dup"))
    if dups.height:
        for s, g in dups.group_by("stream", maintain_order=True):
            conn_notes.setdefault(int(s[0]), []).append(Note(
                "duplicate_frames", f"{g.height} frames appear twice (same IP id and header within 1 ms): two "
                "capture points merged or a mirror port; the copies are ignored", g.height, _examples(g)))
    cleaned = keyed.filter(~pl.col("_dup")).drop("_dup", "flags_key")
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
    return cleaned, file_notes, conn_notes


def unseen_notes(state: pl.DataFrame) -> dict[int, list[Note]]:
    """ACKs covering data the capture never showed: the capture dropped it, the network did not."""
    out: dict[int, list[Note]] = {}
    un = state.filter(pl.col("acked_unseen"))
    for s, g in un.group_by("stream", maintain_order=True):
        out[int(s[0])] = [Note("acked_unseen", f"{g.height} ACKs cover data the capture never showed: the capture "
                               "missed packets (or started mid-flight); this is not counted as loss",
                               g.height, _examples(g))]
    return out
