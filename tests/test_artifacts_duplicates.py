"""Duplicated frames (two capture points merged) against duplicate ACKs and resends (TCP's own): a
pure ACK without an IPv4 id, or a segment with neither an id nor a timestamp, looks the same either
way, so it is taken for a copy only in a connection whose identifiable frames (an id; a timestamp
on data) were copied too, or whose copies are a fifth of its frames or more."""

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


def test_taps_at_both_ends_of_a_long_path_merged_are_copies_not_resends(tmp_path) -> None:
    """small_sndbuf_long_rtt's sender and receiver captures merged by time: each frame's second copy
    comes a one-way delay (50 ms) after the first. A non-zero IPv4 id with a TCP timestamp names
    the frame (no resend repeats both), so every copy is removed and the verdict is the single
    tap's: send-buffer limited, nothing resent. Within 10 ms only, every data copy was a
    retransmission and the finding was lost."""
    from pathlib import Path

    import pcap_edit as pe
    from stallscope.analyzers.analyze import analyze_file

    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    sender = pe.read(fixtures / "small_sndbuf_long_rtt.pcap")
    receiver = pe.read(fixtures / "small_sndbuf_long_rtt.receiver.pcap")
    assert (sender.nano, sender.linktype) == (receiver.nano, receiver.linktype)
    both = sorted([(sender.ts(r), 0, r) for r in sender.records] + [(receiver.ts(r), 1, r) for r in receiver.records],
                  key=lambda x: (x[0], x[1]))
    merged = sender.replace_records([r for _, _, r in both]).write(tmp_path / "merged.pcap")
    (conn,) = analyze_file(merged).files[0].connections
    (note,) = [n for n in conn.notes if n.kind == "duplicate_frames"]
    assert note.count >= 0.99 * min(len(sender.records), len(receiver.records))
    sender_dir = next(d for d in conn.directions if d.role == "data sender")
    assert sender_dir.profile["retransmitted_packets"] == 0
    assert [f.cause for f in conn.findings] == ["send_buffer_limited"] and not conn.stalls


def test_a_frame_mirrored_three_times_loses_both_copies() -> None:
    """Zeek's vlan-collisions.pcap: one HTTP connection seen untagged, on VLAN 42 and on VLANs 10/20,
    each copy 50 ms after the last, with the same IPv4 ids and timestamps. A frame named by both
    may be copied more than once (no duplicate ACK repeats an id); with one copy allowed, the
    third copies of the response read as a writer idle 100 ms."""
    from pathlib import Path

    from stallscope.analyzers.analyze import analyze_file

    (conn,) = analyze_file(Path(__file__).resolve().parent / "data" / "zeek_vlan_mirrored_three_times.pcap").files[0].connections
    (note,) = [n for n in conn.notes if n.kind == "duplicate_frames"]
    assert note.count == 26  # of 42 frames: the SYN/ACK, its id 0, is named by no id
    assert not conn.stalls and not conn.findings
    # Only the SYN/ACK's copies stay, as resent SYN/ACKs: no data was resent.
    sender = next(d for d in conn.directions if d.role == "data sender")
    assert sender.profile["retransmitted_bytes"] == 0


def test_a_fast_retransmit_on_a_fast_path_without_ids_is_no_copy() -> None:
    """A stack without IPv4 ids or timestamps (the simulator's 4.4BSD) on a sub-millisecond path:
    segment 2 of 10 is lost, three duplicate ACKs come at once, and the resend leaves 0.4 ms after
    the original, byte for byte the same. Before, the resend was taken for a copy, and with it the
    duplicate ACKs (a connection where a data frame was copied): the loss read as lost ACKs. A few
    repeats of frames without an identity, and nothing else copied, are TCP's own."""
    rows = [{"ts_ns": i * 50_000, "dir": 0, "seq_rel": 1 + 100 * i, "payload_len": 100} for i in range(10)]
    rows += [{"ts_ns": 150_000 + k * 50_000, "dir": 1, "ack_rel": 101, "payload_len": 0} for k in range(4)]
    rows += [{"ts_ns": 400_000, "dir": 0, "seq_rel": 101, "payload_len": 100},
             {"ts_ns": 700_000, "dir": 1, "ack_rel": 1001, "payload_len": 0}]
    cleaned, _, notes = artifacts.clean(_table(sorted(rows, key=lambda r: r["ts_ns"])))
    assert cleaned.height == len(rows)
    assert not any(n.kind == "duplicate_frames" for ns in notes.values() for n in ns)
