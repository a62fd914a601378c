"""A slow host's reaction to an ACK is no write (writes.event_lag_ns): Moldeklev's deadlock (SunOS,
a 4 KB send buffer under a 16 KB receive buffer over ATM) captured at the receiver, where each 4 KB
copy of the Sun IPX reaches the tap 1.2-1.4 ms after the ACK that released it while the handshake
read a reaction lag of 0.36 ms. Each send then counted as a write event, the writes' lattice came out
4096 bytes every 200 ms, that "writer" bounded the send-buffer plateau, and all 127 deadlocks were
read as Nagle's copy rule."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers.analyze import analyze_file
from stallscope.analyzers.writes import REACTION_MAX_NS, event_lag_ns
from stallscope.simulate.run_bulk import BulkConfig, run_bulk


def test_the_deadlock_seen_at_the_receiver_is_not_read_as_a_paced_writer(tmp_path: Path) -> None:
    pcap = tmp_path / "moldeklev-rx.pcap"
    run_bulk(BulkConfig(personality="sunos41", link="atm140", mtu=9244, sndbuf=4096, rcvbuf=16384, write=8192,
                        read=8192, cost="sun_ipx", bytes=128 * 1024, seed=1, tap="receiver"), pcap)
    conn = analyze_file(pcap).to_json()["files"][0]["connections"][0]
    causes = {s["cause"] for s in conn["stalls"]}
    assert causes == {"window_update_deadlock"}, causes
    assert len(conn["stalls"]) >= 30


def test_the_event_lag_takes_a_hosts_slow_reaction_but_not_an_applications_pace() -> None:
    assert event_lag_ns(360_000, 1_200_000) == 1_200_000  # a slow host's copies
    assert event_lag_ns(360_000, 5_000) == 360_000  # data in flight follows every ACK at a receiver
    assert event_lag_ns(360_000, None) == 360_000
    # A writer that writes 30 ms after each ACK paces itself: its "reaction" is no host's.
    assert event_lag_ns(360_000, 30_000_000) == 360_000
    assert REACTION_MAX_NS < 10_000_000
