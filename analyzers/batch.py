"""Batch analysis: many captures in, one set of tables out (docs/batch.md).

    paths = expand_paths(["captures/", "more/*.pcap.gz"])        # sorted list of capture files
    result = run_batch(paths, jobs=2, cache_dir=default_cache_dir())
    result.tables["stalls"]                                      # a Polars DataFrame
    result.write_parquet("out/")                                 # files/connections/stalls/findings.parquet

The pieces are pure functions, so the CLI (`stallscope analyze DIR --jobs N`), `stallscope check`
and a notebook share them:

- `expand_paths(args)`: directories (recursively, capture files by name), globs and files, to one
  sorted list without duplicates; an argument that names nothing raises BatchInputError.
- `analyze_capture(path)`: one capture to its four tables (`files` one row, `connections`,
  `stalls`, `findings`), keyed by path, content digest and stream. It never raises for a bad
  capture: a damaged, rejected or unreadable file is a `files` row with its status and error, and
  an internal error in the analyzer a row with status `failed`.
- `gather(parts)`: per-capture tables to the batch's tables, sorted by their keys.
- `run_batch(paths, jobs=, cache_dir=, dask=)`: the above over a local process pool or a
  dask.distributed cluster (one task per capture), with a cache keyed by the file's SHA-256 and
  the analyzer's fingerprint, so an unchanged capture is not analysed twice.

Every table's columns are declared once in COLUMNS (name, Polars type, meaning); docs/batch.md
lists them and tests/test_batch_schema.py holds the two together.

Polars and the analyzer are imported inside the functions: a worker process sets its Polars
thread count before the first import (two workers on two cores, one thread each).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

# The tables' layout. A column added, removed or changed in meaning is a new version; the version is
# part of the cache key, so a cache written by another layout is never read.
BATCH_SCHEMA = "stallscope.batch/1"
TABLES = ("files", "connections", "stalls", "findings")

# Capture files a directory contributes, by name: .pcap, .pcapng, .cap, a rotated set's numbered
# files (cap.pcap0, cap.pcap1 ...), each optionally gzipped. A file named on the command line or
# matched by a glob is taken whatever its name.
CAPTURE_NAME = re.compile(r"\.(pcap|pcapng|cap)\d*(\.gz)?$", re.IGNORECASE)
GLOB_CHARS = re.compile(r"[*?\[]")

# Statuses of a capture in `files`: the analysis's own three, and `failed` for an internal error.
STATUSES = ("ok", "damaged", "rejected", "failed")

_KEY = [
    ("path", "String", "the capture's path: as named, under the directory named, or as the glob matched it"),
    ("sha256", "String", "SHA-256 of the file's bytes (of the compressed file for .gz), hex; null when the file could not be read"),
]
_CONN_KEY = _KEY + [("stream", "UInt32", "connection index in the capture (tshark's `tcp.stream`, `analyze --stream N`)")]

# table -> [(column, Polars type, meaning)], in column order.
COLUMNS: dict[str, list[tuple[str, str, str]]] = {
    "files": _KEY + [
        ("size_bytes", "Int64", "the file's size in bytes; null when it could not be read"),
        ("status", "String", "`ok`; `damaged` (read up to `error_offset`, the tables cover what was read: exit 3); "
                             "`rejected` (nothing could be read: not a capture, unsupported, unreadable: exit 4); "
                             "`failed` (an internal error of the analyzer, `error_message` says which: exit 70)"),
        ("error_kind", "String", "null when `ok`; the reader's stable name (`truncated`, `not_a_capture`, `io`, ...; "
                                 "`internal_error` when `failed`)"),
        ("error_offset", "Int64", "byte offset of the damage; null when unknown or `ok`"),
        ("error_message", "String", "the reader's message (the exception's for `failed`); null when `ok`"),
        ("format", "String", "`pcap` or `pcapng`; null when rejected"),
        ("records", "Int64", "packet records read; null when rejected"),
        ("tcp_packets", "Int64", "records decoded as TCP; null when rejected"),
        ("connections", "UInt32", "rows of this capture in connections.parquet"),
        ("stalls", "UInt32", "rows of this capture in stalls.parquet"),
        ("findings", "UInt32", "rows of this capture in findings.parquet"),
        ("time_lost_ns", "Int64", "sum of the connections' `time_lost_ns`"),
        ("top_cause", "String", "the cause with the most time lost over the capture's stalls (`application_idle` "
                                "excluded); null when none"),
        ("notes", "List(String)", "kinds of the capture's file notes, in order (docs/analysis-json.md, Notes)"),
    ],
    "connections": _CONN_KEY + [
        ("initiator", "String", "`address:port` of the side that opened the connection (IPv6 as `[address]:port`)"),
        ("responder", "String", "the other side"),
        ("initiator_addr", "String", "the initiator's address"),
        ("initiator_port", "UInt16", "the initiator's port"),
        ("responder_addr", "String", "the responder's address"),
        ("responder_port", "UInt16", "the responder's port"),
        ("start_captured", "Boolean", "the initiator's SYN is in the capture"),
        ("first_frame", "Int64", "first frame of the connection"),
        ("last_frame", "Int64", "last frame of the connection"),
        ("duration_ns", "Int64", "last packet's time less the first's"),
        ("time_lost_ns", "Int64", "time lost over the stalls, `application_idle` excluded"),
        ("top_cause", "String", "as `top_cause` in the analysis JSON; null when none"),
        ("stalls", "UInt32", "rows of this connection in stalls.parquet"),
        ("findings", "UInt32", "rows of this connection in findings.parquet"),
        ("data_dir", "UInt8", "the direction that sent the data (0 initiator -> responder, 1 the reverse); the "
                              "columns below are that direction's; null when no direction was seen"),
        ("goodput_bps", "Float64", "new bytes x 8 / time from the first to the last data packet, bit/s; null with "
                                   "fewer than two data packets"),
        ("bytes", "Int64", "new payload bytes (retransmissions not counted)"),
        ("packets", "Int64", "packets sent"),
        ("data_packets", "Int64", "packets with payload"),
        ("retransmitted_packets", "Int64", "packets carrying only sequence numbers sent before"),
        ("retransmitted_bytes", "Int64", "their payload bytes"),
        ("timeouts", "Int64", "retransmissions after a timeout"),
        ("fast_retransmissions", "Int64", "retransmissions after a duplicate ACK or SACK"),
        ("path_rtt_ns", "Int64", "the path's round trip seen from that direction's sender; null when unknown"),
        ("vantage", "String", "where the tap sat for that direction: `sender`, `receiver`, `middle`, `unknown`"),
        ("nagle", "String", "`on`, `off` or `unknown` (the profile's `nagle`)"),
        ("stack", "String", "guessed TCP stack: `linux`, `bsd` or `unknown`"),
        ("path_cause", "String", "the direction's path finding (`pmtu_blackhole`, `mss_mismatch`, "
                                 "`jumbo_slot_exhaustion`) or null"),
        ("notes", "List(String)", "kinds of the connection's notes, in order"),
    ],
    "stalls": _CONN_KEY + [
        ("index", "UInt32", "the stall's position in the connection's `stalls` array of the analysis JSON (0-based)"),
        ("dir", "UInt8", "the direction whose sender stalled"),
        ("direction", "String", "`sender -> receiver` as `address:port` pairs"),
        ("start_ns", "Int64", "start, ns since the epoch"),
        ("end_ns", "Int64", "end, ns since the epoch"),
        ("start_frame", "Int64", "the frame that starts it"),
        ("end_frame", "Int64", "the frame that ends it"),
        ("duration_ns", "Int64", "`end_ns - start_ns`"),
        ("time_lost_ns", "Int64", "duration less one path RTT (never negative)"),
        ("cause", "String", "the cause (docs/analysis-json.md, Causes and details), or `undetermined`"),
        ("detail", "String", "the cause's variant, or null"),
        ("confidence", "Float64", "0..1, rounded to 3 decimals"),
        ("evidence", "String", "the evidence object as compact JSON text (keys as in the analysis JSON)"),
        ("alternatives", "String", "the alternatives as a JSON array of `{cause, detail, confidence, why}`"),
    ],
    "findings": _CONN_KEY + [
        ("index", "UInt32", "the finding's position in the connection's `findings` array (0-based)"),
        ("dir", "UInt8", "the direction it concerns"),
        ("direction", "String", "`sender -> receiver` as `address:port` pairs"),
        ("cause", "String", "`mss_mismatch`, `pmtu_blackhole`, `jumbo_slot_exhaustion` or `send_buffer_limited`"),
        ("detail", "String", "null today"),
        ("confidence", "Float64", "0..1, rounded to 3 decimals"),
        ("evidence", "String", "the evidence object as compact JSON text"),
    ],
}
# Rows are ordered by these columns (paths are unique, so the order is total).
SORT_KEYS = {"files": ["path"], "connections": ["path", "stream"], "stalls": ["path", "stream", "index"],
             "findings": ["path", "stream", "index"]}


class BatchInputError(Exception):
    """An argument that names no capture: a missing path, a glob that matches nothing, a directory
    without capture files."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path, self.problem = path, problem


# --- paths -----------------------------------------------------------------------------------


def is_capture_name(name: str) -> bool:
    """A file a directory contributes to a batch: .pcap, .pcapng, .cap (numbered: a rotated set's
    files), optionally .gz."""
    return CAPTURE_NAME.search(name) is not None


def _walk(top: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(top):
        dirs.sort()
        out.extend(os.path.join(root, f) for f in sorted(files) if is_capture_name(f))
    return out


def expand_paths(args: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The capture files named by `args`, sorted, each once: a directory gives the capture files
    under it (recursively, by name: `is_capture_name`), a glob (`*`, `?`, `[`; `**` crosses
    directories) its matches (directories among them walked as above), a file itself whatever its
    name. Raises BatchInputError for an argument that gives no file."""
    found: set[str] = set()
    for arg in args:
        text = os.fspath(arg)
        if text == "-":
            raise BatchInputError(text, "standard input cannot be part of a batch")
        if os.path.isdir(text):
            files = _walk(text)
            if not files:
                raise BatchInputError(text, "no capture file (.pcap, .pcapng, .cap, optionally .gz) in the directory")
        elif os.path.lexists(text):
            files = [text]
        elif GLOB_CHARS.search(text):
            files = []
            for match in sorted(glob.glob(text, recursive=True)):
                files.extend(_walk(match) if os.path.isdir(match) else [match])
            if not files:
                raise BatchInputError(text, "no file matches the pattern")
        else:
            raise BatchInputError(text, "no such file")
        found.update(os.path.normpath(f) for f in files)
    return sorted(found)


# --- the cache key -------------------------------------------------------------------------------


def file_digest(path: str | os.PathLike[str]) -> tuple[str, int]:
    """SHA-256 of the file's bytes (hex) and its size. Raises OSError."""
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256")
        return digest.hexdigest(), f.tell()


@lru_cache(maxsize=1)
def analyzer_fingerprint() -> str:
    """What the results depend on besides the capture: the table layout, the package version, the
    Python source of the analyzer and the packet reader, and the native core's bytes. Any change
    to them gives new cache keys (entries of the old code are never read)."""
    import importlib.util

    import stallscope

    h = hashlib.sha256(f"{BATCH_SCHEMA}\0{stallscope.__version__}\0".encode())
    roots = [Path(__file__).resolve().parent]
    packets = importlib.util.find_spec("stallscope.packets")
    if packets is not None and packets.origin:
        roots.append(Path(packets.origin).resolve().parent)
    files = [p for root in roots for p in sorted(root.rglob("*.py"))]
    files.append(Path(stallscope.__file__).resolve().parent / "vocabulary.py")
    native = importlib.util.find_spec("stallscope._native")
    if native is not None and native.origin:
        files.append(Path(native.origin))
    for p in files:
        try:
            data = p.read_bytes()
        except OSError:
            continue
        h.update(f"{p.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:20]


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/stallscope, or ~/.cache/stallscope."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "stallscope"


class Cache:
    """Per-capture result tables on disk, keyed by content: ROOT/batch-FINGERPRINT/SHA[:2]/SHA/
    TABLE.parquet, without the path (the same bytes under another name are a hit). An entry is
    written to a temporary directory and renamed into place, so a reader sees all of it or none;
    an entry that cannot be read is a miss. Deleting the directory at any time is safe."""

    def __init__(self, root: str | os.PathLike[str], fingerprint: str | None = None) -> None:
        self.root = Path(root) / f"batch-{fingerprint or analyzer_fingerprint()}"
        self.write_error: OSError | None = None  # the first failed write; writing stops after it

    def _entry(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def get(self, digest: str) -> dict[str, pl.DataFrame] | None:
        import polars as pl

        entry = self._entry(digest)
        if not entry.is_dir():
            return None
        try:
            tables = {name: pl.read_parquet(entry / f"{name}.parquet") for name in TABLES}
        except Exception:  # a damaged entry: analyse again (and overwrite it)
            return None
        schema = _content_schema()
        if any(dict(tables[n].schema) != schema[n] for n in TABLES):
            return None
        return tables

    def put(self, digest: str, tables: dict[str, pl.DataFrame]) -> None:
        if self.write_error is not None:
            return
        entry = self._entry(digest)
        tmp = entry.parent / f".{digest}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        try:
            tmp.mkdir(parents=True)
            for name in TABLES:
                tables[name].write_parquet(tmp / f"{name}.parquet")
            if entry.exists():
                shutil.rmtree(entry, ignore_errors=True)
            os.rename(tmp, entry)
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            if entry.is_dir():  # another process wrote the same entry first
                return
            self.write_error = e


# --- one capture ---------------------------------------------------------------------------------


def _dtype(name: str) -> Any:
    import polars as pl

    if name.startswith("List(") and name.endswith(")"):
        return pl.List(_dtype(name[5:-1]))
    return getattr(pl, name)


def schema(table: str) -> dict[str, Any]:
    """The Polars schema of one of the batch's tables (with its key columns)."""
    return {name: _dtype(t) for name, t, _ in COLUMNS[table]}


def _content_schema() -> dict[str, dict[str, Any]]:
    """The tables without `path` and `sha256`: what a worker returns and the cache keeps."""
    return {t: {k: v for k, v in schema(t).items() if k not in ("path", "sha256")} for t in TABLES}


def _json(value: Any) -> str:
    from stallscope.output import _jsonable

    return json.dumps(_jsonable(value), ensure_ascii=False, separators=(",", ":"))


def _split_endpoint(text: str) -> tuple[str | None, int | None]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        return text or None, None
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host, int(port)


def _top_cause(stalls: Iterable[Any]) -> str | None:
    lost: dict[str, int] = {}
    for s in stalls:
        if s.cause != "application_idle":
            lost[s.cause] = lost.get(s.cause, 0) + s.time_lost_ns
    return max(sorted(lost), key=lambda c: lost[c]) if lost else None


def _rows(result: Any) -> dict[str, dict[str, list[Any]]]:
    """One FileAnalysis as column lists of the four tables, without the key's path and digest."""
    cols = {t: {name: [] for name in _content_schema()[t]} for t in TABLES}

    def add(table: str, **values: Any) -> None:
        for name, column in cols[table].items():
            column.append(values.get(name))

    for c in result.connections:
        d = c.data_direction
        prof = d.profile if d is not None else {}
        vant = c.vantage.get(str(d.dir), {}) if d is not None else {}
        init_addr, init_port = _split_endpoint(c.initiator)
        resp_addr, resp_port = _split_endpoint(c.responder)
        add("connections", stream=c.stream, initiator=c.initiator, responder=c.responder,
            initiator_addr=init_addr, initiator_port=init_port, responder_addr=resp_addr, responder_port=resp_port,
            start_captured=c.start_captured, first_frame=c.first_frame, last_frame=c.last_frame,
            duration_ns=c.duration_ns, time_lost_ns=c.time_lost_ns, top_cause=c.top_cause(), stalls=len(c.stalls),
            findings=len(c.findings), data_dir=None if d is None else d.dir,
            goodput_bps=None if d is None or d.goodput_bps is None else round(d.goodput_bps, 1),
            bytes=prof.get("bytes"), packets=prof.get("packets"), data_packets=prof.get("data_packets"),
            retransmitted_packets=prof.get("retransmitted_packets"),
            retransmitted_bytes=prof.get("retransmitted_bytes"), timeouts=prof.get("timeouts"),
            fast_retransmissions=prof.get("fast_retransmissions"), path_rtt_ns=vant.get("path_rtt_ns"),
            vantage=vant.get("vantage"), nagle=prof.get("nagle"), stack=(prof.get("stack") or {}).get("guess"),
            path_cause=prof.get("path_cause"), notes=[n.kind for n in c.notes])
        for i, s in enumerate(c.stalls):
            add("stalls", stream=c.stream, index=i, dir=s.dir, direction=s.direction, start_ns=s.start_ns,
                end_ns=s.end_ns, start_frame=s.start_frame, end_frame=s.end_frame, duration_ns=s.duration_ns,
                time_lost_ns=s.time_lost_ns, cause=s.cause, detail=s.detail, confidence=round(s.confidence, 3),
                evidence=_json(s.evidence), alternatives=_json([a.to_json() for a in s.alternatives]))
        for i, f in enumerate(c.findings):
            add("findings", stream=c.stream, index=i, dir=f.dir, direction=f.direction, cause=f.cause,
                detail=f.detail, confidence=round(f.confidence, 3), evidence=_json(f.evidence))
    err = result.error or {}
    decode = result.decode or {}
    add("files", status=result.status, error_kind=err.get("kind"), error_offset=err.get("offset"),
        error_message=err.get("message"), format=decode.get("format"), records=decode.get("records"),
        tcp_packets=decode.get("tcp_packets"), connections=len(result.connections),
        stalls=sum(len(c.stalls) for c in result.connections),
        findings=sum(len(c.findings) for c in result.connections),
        time_lost_ns=sum(c.time_lost_ns for c in result.connections),
        top_cause=_top_cause(s for c in result.connections for s in c.stalls), notes=[n.kind for n in result.notes])
    return cols


def _frames(cols: dict[str, dict[str, list[Any]]]) -> dict[str, pl.DataFrame]:
    import polars as pl

    content = _content_schema()
    return {t: pl.DataFrame(cols[t], schema=content[t]) for t in TABLES}


def _problem_tables(status: str, kind: str, message: str) -> dict[str, pl.DataFrame]:
    """The tables of a capture that gave no analysis: one `files` row with its error."""
    cols = {t: {name: [] for name in _content_schema()[t]} for t in TABLES}
    for name, column in cols["files"].items():
        column.append({"status": status, "error_kind": kind, "error_message": message, "connections": 0,
                       "stalls": 0, "findings": 0, "time_lost_ns": 0, "notes": []}.get(name))
    return _frames(cols)


def analyze_content(path: str | os.PathLike[str]) -> dict[str, pl.DataFrame]:
    """Analyse one capture file: its four tables without the key's `path` and `sha256` (what a
    worker returns and the cache keeps; they depend on the file's bytes only). Never raises for
    the capture: damage and rejection are in the `files` row, an error of the analyzer itself is
    status `failed`."""
    from stallscope.analyzers.analyze import analyze_one

    try:
        return _frames(_rows(analyze_one(path)))
    except Exception as e:  # a bug, told in the table; the batch goes on
        return _problem_tables("failed", "internal_error", f"{type(e).__name__}: {e}")


def with_keys(tables: dict[str, pl.DataFrame], path: str, digest: str | None,
              size: int | None = None) -> dict[str, pl.DataFrame]:
    """Per-capture content tables with their key columns (`path`, `sha256`) and the file's size."""
    import polars as pl

    out = {}
    for t in TABLES:
        df = tables[t]
        keys = [pl.Series("path", [path] * df.height, pl.String), pl.Series("sha256", [digest] * df.height, pl.String)]
        if t == "files":
            keys.append(pl.Series("size_bytes", [size] * df.height, pl.Int64))
        # Plain Series, no query: this runs once per capture of the batch (cache hits included).
        out[t] = pl.DataFrame(keys + [c for c in df.get_columns() if c.name not in ("path", "sha256", "size_bytes")])
    return out


def analyze_capture(path: str | os.PathLike[str]) -> dict[str, pl.DataFrame]:
    """One capture to its four tables, keyed by `path` (as given), `sha256` and `stream`."""
    text = os.fspath(path)
    try:
        digest, size = file_digest(text)
    except OSError as e:
        return with_keys(_problem_tables("rejected", "io", f"read error: {e.strerror or e}"), text, None)
    return with_keys(analyze_content(text), text, digest, size)


def gather(parts: Sequence[dict[str, pl.DataFrame]]) -> dict[str, pl.DataFrame]:
    """Per-capture tables (with keys) to the batch's four tables, rows sorted by SORT_KEYS."""
    import polars as pl

    out = {}
    for t in TABLES:
        frames = [p[t] for p in parts if p[t].height]
        df = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=schema(t))
        out[t] = df.sort(SORT_KEYS[t], maintain_order=True)
    return out


# --- the batch -----------------------------------------------------------------------------------


@dataclass
class BatchResult:
    tables: dict[str, pl.DataFrame]
    analysed: int  # analyses run (files with the same bytes in one batch are analysed once)
    cached: int  # captures whose tables came from the cache
    seconds: float
    cache_write_error: str | None = None  # why the cache could not be written (the run went on)
    engine: str = "local"

    @property
    def captures(self) -> int:
        return self.tables["files"].height

    def statuses(self) -> dict[str, int]:
        counts = dict(self.tables["files"].group_by("status").len().iter_rows())
        return {s: counts.get(s, 0) for s in STATUSES}

    def exit_code(self) -> int:
        """The CLI's status for the batch: 70 if the analyzer failed on a capture, 4 if one was
        rejected (or unreadable), 3 if one was damaged, else 0."""
        from stallscope.exit_codes import ExitCode

        st = self.statuses()
        if st["failed"]:
            return int(ExitCode.INTERNAL)
        if st["rejected"]:
            return int(ExitCode.INPUT_REJECTED)
        if st["damaged"]:
            return int(ExitCode.INPUT_DAMAGED)
        return int(ExitCode.OK)

    def problems(self) -> list[str]:
        """One line per capture that was not analysed in full or holds no TCP connection, in path
        order (as `analyze` tells them)."""
        out = []
        for r in self.tables["files"].iter_rows(named=True):
            if r["status"] == "rejected":
                out.append(f"{r['path']}: rejected: {r['error_message']}")
            elif r["status"] == "damaged":
                out.append(f"{r['path']}: damaged at byte {r['error_offset']}: {r['error_message']}")
            elif r["status"] == "failed":
                out.append(f"{r['path']}: internal error: {r['error_message']}")
            elif r["connections"] == 0:
                out.append(f"{r['path']}: no TCP connection to analyze")
        return out

    def write_parquet(self, directory: str | os.PathLike[str]) -> list[Path]:
        """TABLE.parquet for each table in `directory` (created). Raises OSError naming the file."""
        from stallscope.output import write_parquet

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        written = []
        for t in TABLES:
            path = d / f"{t}.parquet"
            write_parquet(self.tables[t], path)
            written.append(path)
        return written


@dataclass
class _Job:
    """One analysis: a file to read, and every place in the batch that has its bytes (the same
    capture under two names is analysed once)."""

    index: int
    path: str
    digest: str
    size: int
    also: list[tuple[int, str]] = field(default_factory=list)  # (index, path) of copies


def _worker_init(polars_threads: int) -> None:
    """A local worker process: Polars' thread pool sized to its share of the cores (set before
    Polars is first imported in the process)."""
    os.environ.setdefault("POLARS_MAX_THREADS", str(polars_threads))


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_jobs() -> int:
    return _cpus()


def _run_local(todo: list[_Job], jobs: int, done: Callable[[_Job, dict[str, Any]], None]) -> None:
    if jobs <= 1 or len(todo) <= 1:
        for job in todo:
            done(job, analyze_content(job.path))
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn, not fork: this process has Polars' and the native core's threads running.
    with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=multiprocessing.get_context("spawn"),
                             initializer=_worker_init, initargs=(max(1, _cpus() // jobs),)) as pool:
        futures = {pool.submit(analyze_content, job.path): job for job in todo}
        try:
            for fut in as_completed(futures):
                job = futures[fut]
                try:
                    tables = fut.result()
                except Exception as e:  # the worker died (out of memory, killed)
                    tables = _problem_tables("failed", "internal_error", f"worker lost: {type(e).__name__}: {e}")
                done(job, tables)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def connect_dask(address: str, timeout: float = 10.0) -> Any:
    """A distributed.Client for the scheduler at `address` (tcp://host:8786). Raises ImportError
    without dask.distributed, OSError (or TimeoutError) when the scheduler cannot be reached."""
    from distributed import Client

    return Client(address, timeout=timeout, set_as_default=False)


def _run_dask(todo: list[_Job], dask: Any, done: Callable[[_Job, dict[str, Any]], None]) -> None:
    """One task per capture on the cluster; the workers read the files at their absolute paths
    (a shared file system, docs/batch.md)."""
    from distributed import as_completed

    client = connect_dask(dask) if isinstance(dask, str) else dask
    try:
        token = uuid.uuid4().hex[:12]
        futures = {client.submit(analyze_content, os.path.abspath(job.path), key=f"stallscope-{token}-{job.index}",
                                 pure=False): job for job in todo}
        for fut in as_completed(futures, loop=client.loop):
            job = futures[fut]
            try:
                tables = fut.result()
            except Exception as e:  # the task failed on every worker it was tried on
                tables = _problem_tables("failed", "internal_error", f"dask task failed: {type(e).__name__}: {e}")
            done(job, tables)
            fut.release()
    finally:
        if isinstance(dask, str):
            client.close()


def run_batch(paths: Sequence[str | os.PathLike[str]], *, jobs: int = 1, cache_dir: str | os.PathLike[str] | None = None,
              dask: Any = None, progress: Callable[[str], None] | None = None) -> BatchResult:
    """Analyse every capture in `paths` (files, as `expand_paths` gives them) and gather the tables.

    `jobs` worker processes on this machine (1: in this process), or `dask` (a scheduler address
    or a distributed.Client): one task per capture on that cluster. With `cache_dir`, a capture
    whose bytes (and the analyzer) were seen before is read from the cache, and every capture
    analysed is stored there. `progress(path)` is called as each capture is done, in no set order.
    The tables do not depend on the engine, the number of jobs or the cache."""
    t0 = time.perf_counter()
    cache = Cache(cache_dir) if cache_dir is not None else None
    parts: list[dict[str, Any] | None] = [None] * len(paths)
    todo: list[_Job] = []
    by_digest: dict[str, _Job] = {}
    cached = 0
    for i, p in enumerate(paths):
        text = os.fspath(p)
        try:
            digest, size = file_digest(text)
        except OSError as e:
            parts[i] = with_keys(_problem_tables("rejected", "io", f"read error: {e.strerror or e}"), text, None)
            if progress:
                progress(text)
            continue
        hit = cache.get(digest) if cache is not None else None
        if hit is not None:
            parts[i] = with_keys(hit, text, digest, size)
            cached += 1
            if progress:
                progress(text)
            continue
        if digest in by_digest:
            by_digest[digest].also.append((i, text))
            continue
        by_digest[digest] = _Job(i, text, digest, size)
        todo.append(by_digest[digest])

    def done(job: _Job, tables: dict[str, Any]) -> None:
        failed = tables["files"]["status"][0] == "failed"
        if cache is not None and not failed:
            cache.put(job.digest, tables)
        for index, path in [(job.index, job.path), *job.also]:
            parts[index] = with_keys(tables, path, job.digest, job.size)
            if progress:
                progress(path)

    if todo:
        if dask is not None:
            _run_dask(todo, dask, done)
        else:
            _run_local(todo, jobs, done)
    tables = gather([p for p in parts if p is not None])
    write_error = None
    if cache is not None and cache.write_error is not None:
        e = cache.write_error
        write_error = f"{e.filename or cache.root}: {e.strerror or e}"
    return BatchResult(tables, analysed=len(todo), cached=cached, seconds=time.perf_counter() - t0,
                       cache_write_error=write_error, engine="dask" if dask is not None else "local")
