"""A scenario: topology MTUs, host knobs, link behaviour, workload, and the causes it should produce."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from stallscope.capture.emulator.config import LinkConfig
from stallscope.capture.knobs import HostKnobs
from stallscope.vocabulary import DETAILS, Cause

Workload = Literal["bulk", "reqresp", "pausing"]
# Which namespace runs the workload's server: the data sender answers requests, the receiver
# accepts bulk transfers.
SERVER_SIDE: dict[str, str] = {"bulk": "receiver", "pausing": "receiver", "reqresp": "sender"}


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    workload: Workload
    workload_spec: dict[str, Any] = field(default_factory=dict)
    sender: HostKnobs = field(default_factory=HostKnobs)
    receiver: HostKnobs = field(default_factory=HostKnobs)
    sender_mtu: int = 1500
    receiver_mtu: int = 1500
    link: LinkConfig = field(default_factory=LinkConfig)
    # Empty: a negative control, which must show none of the faults.
    expected: tuple[Cause, ...] = ()
    detail: str | None = None
    seconds: float = 3.0

    def __post_init__(self) -> None:
        if self.workload not in SERVER_SIDE:
            raise ValueError(f"scenario {self.name}: unknown workload {self.workload!r}")
        if self.detail is not None and not any(self.detail in DETAILS.get(c, ()) for c in self.expected):
            raise ValueError(f"scenario {self.name}: detail {self.detail!r} fits none of its causes")

    @property
    def negative_control(self) -> bool:
        return not self.expected

    def parameters(self, seconds: float) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "workload_spec": self.workload_spec,
            "seconds": seconds,
            "sender_mtu": self.sender_mtu,
            "receiver_mtu": self.receiver_mtu,
            "sender": self.sender.to_json(),
            "receiver": self.receiver.to_json(),
            "link": self.link.to_json(),
        }
