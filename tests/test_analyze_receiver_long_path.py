"""At a receiver 72 ms from its server (tests/data/http_receiver_long_path.pcap: the first 960
packets of Zeek's public http/206_example_b.pcap, a Windows client fetching from a server bursting
at about 10 Mbit/s, cut to 96 bytes), the sender's flight is rebuilt from the tap's times and can
run a window ahead of what any sender had out (134 KB against a 64 KB window). That is the
rebuilt view's limit, not a hole in the capture: the turnaround after the last response segment
stays the client's turn, and no stall is put down to missed packets."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers.analyze import analyze_one

CAPTURE = Path(__file__).resolve().parent / "data" / "http_receiver_long_path.pcap"


def test_a_rebuilt_flight_beyond_the_window_is_not_read_as_a_capture_gap() -> None:
    conn = analyze_one(CAPTURE).connections[0]
    assert conn.vantage["1"]["vantage"] == "receiver"
    stalls = [s for s in conn.stalls if s.dir == 1]
    assert stalls
    assert not any("capture missed packets" in s.evidence.get("reason", "") for s in stalls)
    assert {s.cause for s in stalls} == {"application_idle"}
