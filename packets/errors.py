"""Typed errors of capture reading. Both name the file, the byte offset (in the decompressed
input) and the reason; the CLI turns them into INPUT_REJECTED / INPUT_DAMAGED exit codes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl


class CaptureError(Exception):
    """A capture could not be fully read. `kind` is the native error's stable name
    (not_a_capture, unsupported_version, truncated, bad_block_length, ...)."""

    def __init__(self, path: str, offset: int, kind: str, reason: str) -> None:
        super().__init__(f"{path}: byte {offset}: {reason}")
        self.path = path
        self.offset = offset
        self.kind = kind
        self.reason = reason


class CaptureRejected(CaptureError):
    """Refused before any packet: not a capture, unsupported version, reserved bits, unreadable."""


class CaptureDamaged(CaptureError):
    """The capture started but was damaged or cut at `offset`. Every whole packet before the damage
    was decoded: `packets_decoded` counts them, `packets` holds them when the caller asked for a
    whole table (read_packets), and `summary` is the accounting up to the damage."""

    def __init__(
        self,
        path: str,
        offset: int,
        kind: str,
        reason: str,
        *,
        packets_decoded: int,
        packets: pl.DataFrame | None = None,
        summary: Any = None,
    ) -> None:
        super().__init__(path, offset, kind, reason)
        self.packets_decoded = packets_decoded
        self.packets = packets
        self.summary = summary
