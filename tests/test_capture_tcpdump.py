"""tcpdump's exit summary is parsed into drop counts; its command line asks for what the brief needs."""

from __future__ import annotations

from pathlib import Path

from stallscope.capture.tcpdump import DEFAULT_SNAPLEN, Tcpdump, parse_summary

SUMMARY = """tcpdump: listening on s0, link-type EN10MB (Ethernet), snapshot length 128 bytes
1179 packets captured
1378 packets received by filter
7 packets dropped by kernel
"""


def test_summary_counts_are_parsed():
    assert parse_summary(SUMMARY) == {"captured": 1179, "received_by_filter": 1378, "dropped_by_kernel": 7}


def test_singular_and_interface_drop_lines_are_parsed():
    text = "1 packet captured\n1 packet received by filter\n0 packets dropped by kernel\n3 packets dropped by interface\n"
    assert parse_summary(text) == {"captured": 1, "received_by_filter": 1, "dropped_by_kernel": 0,
                                   "dropped_by_interface": 3}


def test_missing_summary_gives_no_counts_rather_than_zeros():
    assert parse_summary("tcpdump: s0: No such device exists\n") == {}


def test_argv_snaplen_namespace_rotation_and_filter():
    t = Tcpdump("s0", Path("/tmp/x.pcap"), netns="ns1", bpf="tcp port 5001", rotate_mb=10, files=3)
    argv = t.argv()
    assert argv[:4] == ["ip", "netns", "exec", "ns1"]
    assert argv[argv.index("-s") + 1] == str(DEFAULT_SNAPLEN) == "128"
    assert argv[argv.index("-C") + 1] == "10" and argv[argv.index("-W") + 1] == "3"
    assert argv[-3:] == ["tcp", "port", "5001"]
    # Short runs must not lose their last second to the ring buffer's block timeout.
    assert "--immediate-mode" in argv


def test_stop_waits_for_the_output_to_stop_growing(tmp_path: Path) -> None:
    """On SIGINT tcpdump stops reading its ring, so a tcpdump still writing what it read (a loaded
    machine: a 50 ms loopback exchange was captured with no packet at all) must be left to finish:
    the settle returns only once the output has been quiet, with everything written."""
    import threading
    import time

    out = tmp_path / "cap.pcap"
    out.write_bytes(b"")
    tap = Tcpdump("lo", out)

    def writer() -> None:
        for _ in range(12):
            with out.open("ab") as f:
                f.write(b"x" * 100)
            time.sleep(0.03)

    t = threading.Thread(target=writer)
    t.start()
    tap._settle(quiet_s=0.1, timeout_s=5.0)
    assert out.stat().st_size == 1200
    t.join()
    # A file that never falls quiet is given up on after the timeout.
    start = time.monotonic()
    stop = threading.Event()

    def endless() -> None:
        while not stop.is_set():
            with out.open("ab") as f:
                f.write(b"y")
            time.sleep(0.01)

    t = threading.Thread(target=endless)
    t.start()
    tap._settle(quiet_s=0.1, timeout_s=0.3)
    stop.set()
    t.join()
    assert 0.3 <= time.monotonic() - start < 2.0
