"""Bulk transfer applications: a writer looping write(n) and a reader looping read(n)."""

from __future__ import annotations

from typing import Callable

from ..tcp.host import Host


class BulkWriter:
    """Writes `total` bytes in write(`write_size`) calls, then closes. `think_ns` between writes.
    With `reply_bytes`, each write is a message: the next one waits for the peer's reply."""

    def __init__(self, host: Host, total: int, write_size: int, think_ns: int = 0, reply_bytes: int = 0) -> None:
        if total <= 0 or write_size <= 0:
            raise ValueError(f"bulk writer needs positive sizes (total={total}, write={write_size})")
        self.host, self.total, self.write_size, self.think_ns = host, total, write_size, think_ns
        self.reply_bytes = reply_bytes
        self._reply_got = 0
        self.written = 0
        self.started_at: int | None = None
        self.done_at: int | None = None

    def start(self, now: int) -> None:
        self.started_at = now
        self._next(now)

    def _next(self, now: int) -> None:
        if self.written >= self.total:
            self.done_at = now
            self.host.close(now)
            return
        n = min(self.write_size, self.total - self.written)
        self.host.write(now, n, lambda t, n=n: self._wrote(t, n))

    def _wrote(self, now: int, n: int) -> None:
        self.written += n
        if self.reply_bytes and self.written < self.total:
            self._reply_got = 0
            self.host.read(now, self.reply_bytes, self._reply)
            return
        self._after_message(now)

    def _reply(self, now: int, n: int) -> None:
        self._reply_got += n
        if n and self._reply_got < self.reply_bytes:
            self.host.read(now, self.reply_bytes - self._reply_got, self._reply)
            return
        self._after_message(now)

    def _after_message(self, now: int) -> None:
        if self.think_ns and self.written < self.total:
            self.host.idle_app()
            self.host.sim.schedule(now + self.think_ns, self._next)
        else:
            self._next(now)


class BulkReader:
    """Reads with read(`read_size`) until end of stream; `on_done(now)` after the last byte."""

    def __init__(
        self, host: Host, read_size: int, expect: int, on_done: Callable[[int], None] | None = None,
        message: int = 0, reply_bytes: int = 0,
    ) -> None:
        if read_size <= 0:
            raise ValueError(f"bulk reader needs a positive read size, got {read_size}")
        self.host, self.read_size, self.expect, self.on_done = host, read_size, expect, on_done
        self.message, self.reply_bytes = message, reply_bytes
        self._in_message = 0
        self.received = 0
        self.reads = 0
        self.last_byte_at: int | None = None
        self.eof_at: int | None = None

    def start(self, now: int) -> None:
        self.host.read(now, self.read_size, self._got)

    def _got(self, now: int, n: int) -> None:
        if n == 0:
            self.eof_at = now
            self.host.close(now)
            return
        self.reads += 1
        self.received += n
        if self.reply_bytes and self.message:
            self._in_message += n
            while self._in_message >= self.message and self.received < self.expect:
                self._in_message -= self.message
                self.host.write(now, self.reply_bytes, lambda t: None)
        if self.received >= self.expect and self.last_byte_at is None:
            self.last_byte_at = now
            if self.on_done is not None:
                self.on_done(now)
        self.host.read(now, self.read_size, self._got)
