"""A naglemark trial recorded at the server (the data sender): a pcap and its ground truth.

The network is naglemark_net's HostPairNetwork with two taps beside each server host (what it
receives, what it sends) and the server's stall tracker writing into one GroundTruth, as run_bulk
does for its sender. The taps only record: the trial's samples are exactly those of the same trial
without them (tests/test_corpus.py checks it). Python engine only (the native core records no
naglemark packets); keep the trials short (tens of responses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..engine import NS_PER_MS, Simulator
from ..ground_truth import GroundTruth
from ..links.drops import DropLog
from ..links.presets import LINK_PRESETS, make_path
from ..links.tap import Tap
from ..loss_attribution import make_loss_classifier
from ..nagle import NagleVariant
from ..segment import Segment
from . import naglemark as nm
from .naglemark import AppSocket
from .naglemark_net import (
    CLIENT_ADDR, FIRST_CLIENT_PORT, SERVER_ADDR, SERVER_PORT, HostPairNetwork, _GlobalTickHost, _Socket,
    lan_server_personality,
)


class RecordingNetwork(HostPairNetwork):
    """HostPairNetwork whose server hosts are tapped and keep ground truth."""

    def __init__(self, sim: Simulator, *, ground_truth: GroundTruth, **kwargs: Any) -> None:
        super().__init__(sim, **kwargs)
        self.gt = ground_truth
        self.drop_log = DropLog(ground_truth)
        self.classify = make_loss_classifier(self.drop_log)
        self.taps: list[Tap] = []
        preset = LINK_PRESETS[self.link]
        delay = self.path.get("delay_ns", preset.delay_ns)
        self.stall_threshold_ns = max(10 * NS_PER_MS, 4 * delay)  # run_bulk's: 10 ms or 2 x RTT

    def connect(self, established: Callable[[int, AppSocket, AppSocket], None]) -> None:
        # HostPairNetwork.connect with the taps, the drop log and the server's ground truth.
        from ..run_bulk import _mark_predictable

        sim, p = self.sim, self.personality
        mtu = self.path.get("mtu", LINK_PRESETS[self.link].mtu)
        n = self.connections
        self.connections += 1
        self._retire_previous()
        client = _GlobalTickHost(
            sim, f"client{n}", CLIENT_ADDR, FIRST_CLIENT_PORT + n, p, mtu=mtu,
            nagle=NagleVariant.NAGLE, receiver_inference=self.receiver_inference,
            tick_phase_ns=self.client_phase, uid_base=2 * n << 32,
            # Both directions get ground truth (issue 17): the client's requests stall too.
            ground_truth=self.gt, loss_classifier=self.classify, stall_threshold_ns=self.stall_threshold_ns,
        )
        server = _GlobalTickHost(
            sim, f"server{n}", SERVER_ADDR, SERVER_PORT, lan_server_personality(p), mtu=mtu, sndbuf=self.sockbuf,
            nagle=self.variant, receiver_inference=self.receiver_inference,
            tick_phase_ns=self.server_phase, uid_base=(2 * n + 1) << 32,
            ground_truth=self.gt, loss_classifier=self.classify, stall_threshold_ns=self.stall_threshold_ns,
        )
        server.on_established_hooks.append(lambda now: _mark_predictable(server, client))
        forward, reverse = make_path(sim, self.link, drop_log=self.drop_log, **self.path)
        server_in = Tap(f"server{n}-in", server)
        server_out = Tap(f"server{n}-out", reverse)
        self.taps += [server_in, server_out]
        forward.connect(server_in)
        reverse.connect(client)
        client.attach(forward)
        server.attach(server_out)
        server.listen()
        self.hosts.append((client, server))
        client.on_established = lambda now: established(now, _Socket(client), _Socket(server))
        client.connect(sim.now, SERVER_ADDR, SERVER_PORT)

    def records(self) -> list[tuple[int, Segment]]:
        """Every tapped segment in time order; at equal times what arrived before what was sent
        (the taps' order: each connection's in-tap comes before its out-tap)."""
        return sorted((r for tap in self.taps for r in tap.records), key=lambda r: r[0])


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
    think_ns: int = 0, pcap: Path | None = None, engine: str = "auto",
) -> NaglemarkCapture:
    """One naglemark trial (naglemark_net.make_network + naglemark.run_trial, the same random draws)
    with the server's side recorded; writes `pcap` and `<pcap>.truth.json` when given."""
    if link not in LINK_PRESETS or LINK_PRESETS[link].rate_bps <= 0:
        raise KeyError(f"unknown link preset {link!r} for naglemark; try ethernet10 or fddi")
    if sockbuf <= 0:
        raise ValueError(f"naglemark: sockbuf must be positive, got {sockbuf}")
    variant = NagleVariant.parse(variant) if isinstance(variant, str) else NagleVariant(variant)
    trial = nm.TrialType(trial)
    preset = LINK_PRESETS[link]
    gt = GroundTruth(parameters={
        "app": "naglemark", "personality": personality, "link": link, "nagle": variant.value,
        "sockbuf": sockbuf, "app_buf": app_buf, "trial": trial.value, "responses": len(lengths),
        "receiver_inference": receiver_inference, "seed": seed, "think_ns": think_ns, "mtu": preset.mtu,
        "rate_bps": preset.rate_bps, "delay_ns": preset.delay_ns,
        "bytes": sum(lengths), "lengths_first_last": [lengths[0], lengths[-1]] if lengths else [],
    })
    native = _native_capture(personality=personality, link=link, variant=variant, sockbuf=sockbuf, app_buf=app_buf,
                             trial=trial, lengths=lengths, seed=seed, receiver_inference=receiver_inference,
                             think_ns=think_ns, gt=gt, engine=engine)
    if native is not None:
        return _finish(native, pcap)
    sim = Simulator(seed=seed)
    tick = 200 * NS_PER_MS  # make_network's draws, in its order
    client_phase = sim.rng.randrange(tick)
    server_phase = sim.rng.randrange(tick)
    net = RecordingNetwork(
        sim, ground_truth=gt, personality=personality, link=link, variant=variant, sockbuf=sockbuf,
        receiver_inference=receiver_inference, client_tick_phase_ns=client_phase, server_tick_phase_ns=server_phase,
    )
    result = nm.run_trial(net, trial=trial, app_buf=app_buf, sockbuf=sockbuf, raw_rate_bps=preset.rate_bps,
                          lengths=lengths, think_ns=think_ns)
    return _finish(_summarized(result, gt, net.records(), net.connections, preset.rate_bps), pcap)


def _summarized(result: nm.TrialResult, gt: GroundTruth, records: list, connections: int, rate_bps: int
                ) -> NaglemarkCapture:
    delayed = sum(1 for s in result.samples if s.elapsed_ns > nm.cutoff_ns(s.length, rate_bps))
    gt.summary = {"score_pct": round(result.score_pct, 4), "responses": len(result.samples), "delayed": delayed,
                  "finished_ns": result.finished_ns, "connections": connections, "packets": len(records)}
    return NaglemarkCapture(result, gt, records, rate_bps)


def _native_capture(*, personality: str, link: str, variant: NagleVariant, sockbuf: int, app_buf: int,
                    trial: nm.TrialType, lengths: list[int], seed: int, receiver_inference: bool, think_ns: int,
                    gt: GroundTruth, engine: str) -> NaglemarkCapture | None:
    """The trial in the native core with the servers tapped and both ends' stalls recorded."""
    from ..ground_truth import Stall
    from ..native_core import naglemark_trial
    from stallscope.vocabulary import Cause

    out = naglemark_trial(personality=personality, link=link, variant=variant, sockbuf=sockbuf,
                          receiver_inference=receiver_inference, seed=seed, trial=trial, app_buf=app_buf,
                          lengths=lengths, think_ns=think_ns, record=True, engine=engine)
    if out is None:
        return None
    result, raw = out
    for start, end, cause, detail, direction, evidence in raw["stalls"]:
        gt.add(Stall(start, end, Cause(cause), detail, direction, evidence))
    for drop in raw["drops"]:
        gt.count_drop(drop[2])
    records = raw["trace"].segments(Segment, ((CLIENT_ADDR, FIRST_CLIENT_PORT), (SERVER_ADDR, SERVER_PORT)), 1)
    return _summarized(result, gt, records, raw["connections"], LINK_PRESETS[link].rate_bps)


def _finish(capture: NaglemarkCapture, pcap: Path | None) -> NaglemarkCapture:
    gt, records = capture.ground_truth, capture.records
    if pcap is not None:
        from ..pcap_writer import write_pcap
        from ..run_bulk import truth_path

        write_pcap(pcap, records)
        gt.write(truth_path(Path(pcap)))
    return capture
