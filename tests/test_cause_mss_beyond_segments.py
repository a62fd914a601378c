"""Moldeklev's buffers with the handshake cut, so no SYN gives the MSS and SunOS's 4 KB copies
(and 4.4BSD's 2 KB clusters) look like full segments: Nagle against the window-update deadlock
turns on whether the whole send buffer reaches the receiver's update threshold, two MSS or 35 % of
its buffer. causes.nagle.mss_beyond takes the MSS from what the receiver's timer shows (it held
that much unacknowledged, so two MSS exceed it) and the likely MSS above that (RFC 1191's MTU
plateaus, BSD's cluster rounding). Scored against the simulator's truth."""

from __future__ import annotations

from pathlib import Path

import pytest

import pcap_edit as pe
from stallscope.analyzers import corpus, scoring
from stallscope.analyzers.causes.nagle import mss_beyond


def _moldeklev(p: str, s: int, r: int, io: int, seed: int = 7) -> corpus.TraceSpec:
    return corpus._bulk("moldeklev", f"{p}-S{s}-R{r}-io{io}", personality=p, link="atm140", mtu=9244, sndbuf=s,
                        rcvbuf=r, write=io, read=io, cost="sun_ipx", bytes=512 * corpus.KB, seed=seed)


@pytest.mark.parametrize("spec,cause", [
    # 12288 bytes out to the timer, 3084 held: two MSS exceed 12288, so the buffer's 15372 bytes
    # stay below both 2 x 8126 and 35 % of 52428: the deadlock (4096-byte segments read as the MSS
    # called it Nagle's).
    (_moldeklev("sunos41", 16384, 52428, 4096), "window_update_deadlock"),
    # 8192 out and 4096 held under a 12 KB buffer, 8192 sent on the ACK: the 8192-byte segments read
    # as the MSS made the held data look like a full segment (a deadlock); 12288 reaches 35 % of 32 KB.
    (_moldeklev("sunos41", 16384, 32768, 4096, seed=5461), "nagle_delayed_ack"),
    # 4.4BSD rounds ATM's 9204-byte MSS to 8192: 14336 + 2048 reach two of them, Nagle's.
    (_moldeklev("bsd44", 16384, 52428, 4096), "nagle_delayed_ack"),
], ids=["sunos-R52428", "sunos-R32768", "bsd44-R52428"])
def test_the_cause_without_the_handshake_is_the_one_with_it(tmp_path: Path, spec, cause: str) -> None:
    corpus.run_trace(spec, tmp_path)
    pcap = tmp_path / f"{spec.name}.pcap"
    cut = pe.drop_syns(pe.read(pcap)).write(tmp_path / "nosyn.pcap")
    report = scoring.score_files(cut, Path(f"{pcap}.truth.json")).to_json()["ground_truth"]
    assert report["causes"][cause]["recall"] >= 0.9, report["causes"]
    assert report["totals"]["misattributed"] <= 1, report["totals"]


class _Ctx:
    def __init__(self, peer_max: int) -> None:
        self.profile = {"peer_receive_window_max": peer_max}


def test_the_likely_mss_above_the_bounds() -> None:
    assert mss_beyond(_Ctx(52428), 4096, 12288) == 8126  # above 6144: RFC 1191's 8166-byte plateau
    assert mss_beyond(_Ctx(57344), 8192, 14336) == 8192  # 9000 or 9180 rounded to clusters
    assert mss_beyond(_Ctx(16384), 1460, 12288) == 1460  # 12288 is past 35 % of the window: no bound
    assert mss_beyond(_Ctx(0), 4096, 12288) == 4096
