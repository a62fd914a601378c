"""The connection table against tcptrace 6.6 (`tcptrace -l -r -n`), run in the test, on the
captures this project recorded at the sender (fixtures/*.pcap without .receiver).

Deliberate divergences:
- tcptrace counts a retransmitted FIN as one retransmitted byte (and a FIN-only resend as a
  retransmitted data packet); we count payload only. So tcptrace's rexmt bytes = ours + resent FINs.
- receiver-side captures are left out: a segment filling a hole left by loss upstream of the
  capture point is new to tcptrace ("unique") but starts below the highest sequence seen, so it is
  a retransmission here (and for tshark, see test_flows_tshark.py).
- tcptrace's "min win adv" leaves out zero windows; ours includes them (compared when none).
- tcptrace's idle time is per direction; ours is per connection; not compared.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from stallscope.analyzers.connections import connections

OWN = sorted(p for p in (Path(__file__).resolve().parent.parent / "fixtures").glob("*.pcap") if ".receiver" not in p.name)

pytestmark = [
    pytest.mark.peer,
    pytest.mark.skipif(shutil.which("tcptrace") is None, reason="tcptrace is not installed"),
    pytest.mark.skipif(not OWN, reason="no recorded captures under fixtures/"),
]

# tcptrace's two-column lines: "     name:   value [unit]     name:   value [unit]"
_PAIR = re.compile(r"^\s+(?P<k>[^:]+?):\s+(?P<a>-?[\d.]+)(?: \S+)?\s+(?P=k):\s+(?P<b>-?[\d.]+)")


def tcptrace(path: Path) -> list[dict]:
    """Per connection: 'a' = host a's address:port, and name -> (a->b value, b->a value)."""
    out = subprocess.run(["tcptrace", "-l", "-r", "-n", str(path)], capture_output=True, text=True, timeout=120).stdout
    conns = []
    for block in re.split(r"^TCP connection \d+:$", out, flags=re.M)[1:]:
        # Hosts are lettered a/b, c/d, ... per connection; the first is the one listed first.
        host = re.search(r"host [a-z]+:\s+(\S+)", block)
        assert host, block[:200]
        d: dict = {"a": host.group(1)}
        for line in block.splitlines():
            m = _PAIR.match(line)
            if m:
                d[m.group("k")] = (m.group("a"), m.group("b"))
        conns.append(d)
    return conns


@pytest.mark.parametrize("path", OWN, ids=lambda p: p.name)
def test_counts_windows_and_rtt_samples_match_tcptrace(path: Path) -> None:
    table, _ = connections(path)
    theirs = tcptrace(path)
    assert table.height == len(theirs)
    for row, t in zip(table.iter_rows(named=True), theirs):
        a_is_orig = t["a"] == f"{row['orig_addr']}:{row['orig_port']}"
        for i, side in enumerate(("orig", "resp") if a_is_orig else ("resp", "orig")):
            def their(name: str) -> int:
                return int(t[name][i])

            ours = {
                "total packets": row[f"{side}_packets"],
                "unique bytes sent": row[f"{side}_unique_bytes"],
                "pure acks sent": row[f"{side}_pure_acks"],
                "max segm size": row[f"{side}_largest_segment"],
                "zero win adv": row[f"{side}_zero_windows"],
                "RTT samples": row[f"{side}_rtt_samples"],
            }
            assert ours == {k: their(k) for k in ours}, f"{side}"
            # A side that sent only SYNs has no window here (SYN windows are unscaled); tcptrace
            # then reports the SYN's.
            if row[f"{side}_max_window"] is not None:
                assert row[f"{side}_max_window"] == their("max win adv")
            # tcptrace's minimum leaves out zero windows (counted in "zero win adv"); ours does not.
            if row[f"{side}_zero_windows"] == 0 and row[f"{side}_min_window"] is not None:
                assert row[f"{side}_min_window"] == their("min win adv")
            resent_fins = max(row[f"{side}_fin"] - 1, 0)
            assert their("rexmt data bytes") == row[f"{side}_retrans_bytes"] + resent_fins
            assert row[f"{side}_retrans_packets"] <= their("rexmt data pkts") <= row[f"{side}_retrans_packets"] + resent_fins
            if row[f"{side}_unique_bytes"] > 0:
                # Both divide unique bytes by the connection's elapsed time; tcptrace works in
                # microseconds and prints whole bytes/s: 1e-4 relative or 1 B/s.
                assert row[f"{side}_goodput_bps"] == pytest.approx(their("throughput"), rel=1e-4, abs=1)
            if row[f"{side}_rtt_min_ns"] is not None:
                # tcptrace prints milliseconds with one decimal.
                assert abs(row[f"{side}_rtt_min_ns"] / 1e6 - float(t["RTT min"][i])) <= 0.051
