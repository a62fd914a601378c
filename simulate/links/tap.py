"""A capture point: records every segment that passes and forwards it unchanged. Segments are
frozen, so the record shares the object: nothing downstream can rewrite history."""

from __future__ import annotations

from ..segment import Receiver, Segment


class Tap:
    __slots__ = ("name", "sink", "records")

    def __init__(self, name: str, sink: Receiver | None = None) -> None:
        self.name = name
        self.sink = sink
        self.records: list[tuple[int, Segment]] = []

    def connect(self, sink: Receiver) -> None:
        self.sink = sink

    def receive(self, now: int, segment: Segment) -> None:
        self.records.append((now, segment))
        if self.sink is not None:
            self.sink.receive(now, segment)
