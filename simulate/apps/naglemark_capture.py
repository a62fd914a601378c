"""A naglemark trial recorded at the server (the data sender): a pcap and its ground truth.

The simulator taps every connection's server (what it receives, what it sends) and both ends'
stall trackers write into one GroundTruth, as a bulk run's do. Recording changes nothing: the
trial's samples are exactly those of the same trial unrecorded (tests/test_corpus.py checks it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stallscope.vocabulary import Cause

from ..ground_truth import GroundTruth, Stall
from ..links.presets import LINK_PRESETS
from ..nagle import NagleVariant
from ..segment import Segment
from . import naglemark as nm

# The hosts' addresses: connection k's client port is FIRST_CLIENT_PORT + k (native/src/sim/naglemark.rs).
CLIENT_ADDR, SERVER_ADDR = "10.0.0.1", "10.0.0.2"
SERVER_PORT = 8000
FIRST_CLIENT_PORT = 20000


@dataclass
class NaglemarkCapture:
    result: nm.TrialResult
    ground_truth: GroundTruth
    records: list[tuple[int, Segment]] = field(repr=False)
    raw_rate_bps: int = 0

    def to_json(self) -> dict[str, Any]:
        truth = self.ground_truth.to_json()
        return {"score_pct": self.result.score_pct, "packets": len(self.records),
                "finished_ns": self.result.finished_ns, "stalls": truth["stalls"], "drops": truth["drops"],
                "parameters": truth["parameters"]}


def run_naglemark_capture(
    *, personality: str, link: str, variant: NagleVariant | str, sockbuf: int, app_buf: int,
    trial: nm.TrialType | str, lengths: list[int], seed: int, receiver_inference: bool = False,
    think_ns: int = 0, pcap: Path | None = None, rate_bps: int | None = None, delay_ns: int | None = None,
    mtu: int | None = None,
) -> NaglemarkCapture:
    """One naglemark trial with the server's side recorded; writes `pcap` and `<pcap>.truth.json`
    when given. `rate_bps`, `delay_ns` and `mtu` override the link preset's."""
    from ..native_core import naglemark_trial

    variant = NagleVariant.parse(variant) if isinstance(variant, str) else NagleVariant(variant)
    trial = nm.TrialType(trial)
    # naglemark_trial checks the link, the buffers and the lengths, with the errors the CLI shows.
    result, raw = naglemark_trial(personality=personality, link=link, variant=variant, sockbuf=sockbuf,
                                  receiver_inference=receiver_inference, seed=seed, trial=trial, app_buf=app_buf,
                                  lengths=lengths, think_ns=think_ns, record=True, rate_bps=rate_bps, delay_ns=delay_ns,
                                  mtu=mtu)
    preset = LINK_PRESETS[link]
    gt = GroundTruth(parameters={
        "app": "naglemark", "personality": personality, "link": link, "nagle": variant.value,
        "sockbuf": sockbuf, "app_buf": app_buf, "trial": trial.value, "responses": len(lengths),
        "receiver_inference": receiver_inference, "seed": seed, "think_ns": think_ns, "mtu": mtu or preset.mtu,
        "rate_bps": rate_bps or preset.rate_bps, "delay_ns": preset.delay_ns if delay_ns is None else delay_ns,
        "bytes": sum(lengths), "lengths_first_last": [lengths[0], lengths[-1]] if lengths else [],
    })
    for start, end, cause, detail, direction, evidence in raw["stalls"]:
        gt.add(Stall(start, end, Cause(cause), detail, direction, evidence))
    for drop in raw["drops"]:
        gt.count_drop(drop[2])
    records = raw["trace"].segments(Segment, ((CLIENT_ADDR, FIRST_CLIENT_PORT), (SERVER_ADDR, SERVER_PORT)), 1)
    delayed = sum(1 for s in result.samples if s.elapsed_ns > nm.cutoff_ns(s.length, result.raw_rate_bps))
    gt.summary = {"score_pct": round(result.score_pct, 4), "responses": len(result.samples), "delayed": delayed,
                  "finished_ns": result.finished_ns, "connections": raw["connections"], "packets": len(records)}
    if pcap is not None:
        from ..pcap_writer import personality_ttl, write_pcap
        from ..run_bulk import truth_path

        ttl = personality_ttl(personality)  # (both hosts run it)
        write_pcap(pcap, records, ttls={CLIENT_ADDR: ttl, SERVER_ADDR: ttl})
        gt.write(truth_path(Path(pcap)))
    return NaglemarkCapture(result, gt, records, result.raw_rate_bps)
