"""A capture without the handshake leaves each window's scale unknown. Where the sender's flight ran
past the raw window, the smallest scale that holds it is a floor of the real one, and the windows
are read with it (artifacts.window_scale_floors): room they show is there (a send buffer's ceiling
well inside the window), a limit they show may not be (they stay floors: window_known false)."""

from __future__ import annotations

from pathlib import Path

import pcap_edit as pe

from stallscope.analyzers.analyze import analyze_file

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _no_syn(name: str, tmp_path: Path):
    path = pe.drop_syns(pe.read(FIXTURES / f"{name}.pcap")).write(tmp_path / f"{name}.nosyn.pcap")
    (conn,) = [c for c in analyze_file(path).files[0].connections if c.directions]
    return conn


def test_a_send_buffer_is_found_under_windows_of_unknown_scale(tmp_path: Path) -> None:
    """A 64 KB SO_SNDBUF on a 60 ms path, captured at the sender without its handshake: the
    receiver's raw windows (248) are far below the 68 KB flight; under the floor of scale 10 that
    the flight needs (Linux chose 10 here) they are 253,952 bytes, room enough to show that the
    buffer, not the window, held the flight. Before, no finding (the raw window showed no room)."""
    conn = _no_syn("small_sndbuf_long_rtt", tmp_path)
    floors = [n for n in conn.notes if n.kind == "window_scale_floor"]
    assert [n.count for n in floors] == [10], [n.message for n in conn.notes]
    assert [f.cause for f in conn.findings] == ["send_buffer_limited"], conn.findings
    sender = next(d for d in conn.directions if d.role == "data sender")
    assert sender.profile["window_known"] is False  # floors, not the real windows
    assert sender.profile["peer_receive_window_max"] >= 2 * sender.profile["send_buffer_estimate"]


def test_floored_windows_give_a_clean_transfer_no_cause(tmp_path: Path) -> None:
    """The negative control, a clean bulk transfer, without its handshake: floored, and silent."""
    conn = _no_syn("clean_bulk", tmp_path)
    assert any(n.kind == "window_scale_floor" for n in conn.notes)
    assert not conn.findings and not [s for s in conn.stalls if s.cause != "application_idle"], conn.stalls


def test_a_flight_inside_the_raw_window_gets_no_floor(tmp_path: Path) -> None:
    """burst_loss_sack's receiver offers no scaling: its flight stays inside the raw window, which
    unscaled_windows reads as unscaled; no floor is laid on it."""
    conn = _no_syn("burst_loss_sack", tmp_path)
    assert not [n for n in conn.notes if n.kind == "window_scale_floor"]
