"""Duplicated frames (two capture points merged) against duplicate ACKs (TCP's own): a pure ACK
with neither an IPv4 id nor a TCP timestamp looks the same either way, so it is taken for a copy
only in a connection whose identifiable frames (data, an id, a timestamp) were copied too."""

from __future__ import annotations

import polars as pl

from stallscope.analyzers import artifacts
from stallscope.analyzers.sender_state import PACKET_INPUT
from stallscope.packets.schema import BY_NAME

MS = 1_000_000


def _table(rows: list[dict]) -> pl.DataFrame:
    base = {"stream": 0, "seq_rel": 1, "ack_rel": 1, "flag_syn": False, "flag_fin": False, "flag_rst": False,
            "flag_ack": True, "flag_psh": False, "win_scaled": 65535, "wscale_known": True, "payload_captured": 0,
            "opt_mss": None, "opt_ts_val": None, "opt_ts_ecr": None, "opt_sack_perm": False, "opt_wscale": None,
            "sack_left": [], "sack_right": [], "superframe": False, "ip_len": 40, "ip_id": 0,
            "src_addr": "10.0.0.1", "dst_addr": "10.0.0.2", "src_port": 1, "dst_port": 2, "anomalies": 0}
    full = [{**base, **r, "frame": i + 1} for i, r in enumerate(rows)]
    return pl.DataFrame(full).select(pl.col(c).cast(BY_NAME[c].dtype) for c in PACKET_INPUT)


def _transfer() -> list[dict]:
    """Segment 2 is lost: its two successors each draw the same pure ACK from the receiver."""
    return [
        {"ts_ns": 0, "dir": 0, "seq_rel": 1, "payload_len": 100},
        {"ts_ns": 2 * MS, "dir": 0, "seq_rel": 201, "payload_len": 100},
        {"ts_ns": 2 * MS + 300_000, "dir": 0, "seq_rel": 301, "payload_len": 100},
        {"ts_ns": 10 * MS, "dir": 1, "ack_rel": 101, "payload_len": 0},
        {"ts_ns": 12 * MS, "dir": 1, "ack_rel": 101, "payload_len": 0},
        {"ts_ns": 12 * MS + 400_000, "dir": 1, "ack_rel": 101, "payload_len": 0},
    ]


def test_duplicate_acks_without_an_identity_are_kept() -> None:
    cleaned, _, notes = artifacts.clean(_table(_transfer()))
    assert cleaned.height == 6
    assert not any(n.kind == "duplicate_frames" for ns in notes.values() for n in ns)


def test_a_merged_capture_loses_every_copy() -> None:
    rows = _transfer()
    copies = [{**r, "ts_ns": r["ts_ns"] + 50_000} for r in rows]
    table = _table(sorted(rows + copies, key=lambda r: r["ts_ns"]))
    cleaned, _, notes = artifacts.clean(table)
    assert cleaned.height == 6
    (note,) = notes[0]
    assert note.kind == "duplicate_frames" and note.count == 6
