"""A capture point: records every segment that passes (as a copy, so later mutation cannot
rewrite history) and forwards it unchanged."""

from __future__ import annotations

from dataclasses import replace

from ..segment import Receiver, Segment


class Tap:
    def __init__(self, name: str, sink: Receiver | None = None) -> None:
        self.name = name
        self.sink = sink
        self.records: list[tuple[int, Segment]] = []

    def connect(self, sink: Receiver) -> None:
        self.sink = sink

    def receive(self, now: int, segment: Segment) -> None:
        self.records.append((now, replace(segment)))
        if self.sink is not None:
            self.sink.receive(now, segment)
