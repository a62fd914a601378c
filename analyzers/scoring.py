"""Scores an analysis (`stallscope.analysis/1`) against ground truth; docs/scoring.md.

Two truth schemas:

- `stallscope.ground_truth/1` (the simulator's, `<pcap>.truth.json`): timed stalls. A reported
  stall matches a true one when their intervals overlap by at least half of the shorter one, the
  causes agree, and the directions agree when both give one. Each true and each reported stall is
  used at most once. A pair that overlaps enough but names another cause is a misattribution: it
  lands off the diagonal of the confusion matrix (true cause x reported cause). A true stall left
  over is `missed`, a reported one left over `spurious`. `undetermined` is its own column and never
  a match.
- `stallscope.capture_truth/1` (fixtures/NAME.json): no times. The set of causes reported for the
  data sender (stalls and connection findings) against `expected_causes`; an empty list is a
  negative control on which nothing may be reported.

The simulator writes its pcap with timestamps equal to its own clock (run_bulk's write_pcap uses
epoch 0), the clock of the truth's `start_ns`/`end_ns`: reported times are compared as they are.
For a capture written with another epoch, pass `offset_ns` (subtracted from every reported time).
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stallscope.vocabulary import UNDETERMINED

GROUND_TRUTH_SCHEMA = "stallscope.ground_truth/1"
CAPTURE_TRUTH_SCHEMA = "stallscope.capture_truth/1"
ANALYSIS_SCHEMA = "stallscope.analysis/1"
SCORE_SCHEMA = "stallscope.score/1"

MISSED = "missed"  # column: a true stall nothing reported covers
SPURIOUS = "spurious"  # row: a reported stall no true stall covers
MIN_OVERLAP = 0.5  # of the shorter interval
# The data sender's address in fixtures/ (capture/netns.py SENDER_IP; kept literal so scoring does
# not import the capture package).
CAPTURE_SENDER_IP = "10.77.0.1"

Analyzer = Callable[[Path], dict[str, Any]]


APPLICATION_IDLE = "application_idle"


class ScoreError(ValueError):
    """The inputs cannot be scored (unknown schema, no matching file in the analysis...)."""


@dataclass(frozen=True, slots=True)
class Interval:
    """One stall, true or reported, in integer ns."""

    start_ns: int
    end_ns: int
    cause: str
    direction: str = ""
    detail: str | None = None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


def overlap_ns(a: Interval, b: Interval) -> int:
    return max(0, min(a.end_ns, b.end_ns) - max(a.start_ns, b.start_ns))


def overlaps_enough(a: Interval, b: Interval, min_overlap: float = MIN_OVERLAP) -> bool:
    """Do `a` and `b` overlap by at least `min_overlap` of the shorter one? A zero-length interval
    needs to lie inside (or on the edge of) the other."""
    shorter = min(a.duration_ns, b.duration_ns)
    if shorter <= 0:
        return max(a.start_ns, b.start_ns) <= min(a.end_ns, b.end_ns)
    # Integer arithmetic for the usual 0.5: 2 * overlap >= shorter.
    if min_overlap == MIN_OVERLAP:
        return 2 * overlap_ns(a, b) >= shorter
    return overlap_ns(a, b) >= min_overlap * shorter


def same_direction(a: Interval, b: Interval) -> bool:
    return not a.direction or not b.direction or a.direction == b.direction


def matches(true: Interval, reported: Interval, min_overlap: float = MIN_OVERLAP) -> bool:
    """The matching rule: enough overlap, the same cause (never `undetermined`), the same direction
    when both give one."""
    return (true.cause == reported.cause and reported.cause != UNDETERMINED
            and same_direction(true, reported) and overlaps_enough(true, reported, min_overlap))


# --- reading the documents ---------------------------------------------------------------------------


def load_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ScoreError(f"{path}: cannot read JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ScoreError(f"{path}: not a JSON object")
    return doc


def truth_intervals(truth: Mapping[str, Any]) -> list[Interval]:
    if truth.get("schema") != GROUND_TRUTH_SCHEMA:
        raise ScoreError(f"expected schema {GROUND_TRUTH_SCHEMA}, got {truth.get('schema')!r}")
    return sorted(
        (Interval(int(s["start_ns"]), int(s["end_ns"]), str(s["cause"]), s.get("direction") or "", s.get("detail"))
         for s in truth.get("stalls", [])),
        key=lambda i: (i.start_ns, i.end_ns, i.cause, i.direction),
    )


def select_files(analysis: Mapping[str, Any], capture_name: str | None = None) -> list[dict[str, Any]]:
    """The analysis's file entries to score: all of them, or the one whose path has `capture_name`
    as its file name when the analysis covers several."""
    if analysis.get("schema") != ANALYSIS_SCHEMA:
        raise ScoreError(f"expected schema {ANALYSIS_SCHEMA}, got {analysis.get('schema')!r}")
    files = list(analysis.get("files", []))
    if len(files) <= 1 or capture_name is None:
        return files
    chosen = [f for f in files if Path(str(f.get("path", ""))).name == capture_name]
    if not chosen:
        raise ScoreError(f"the analysis covers {len(files)} files and none is named {capture_name}")
    return chosen


def reported_intervals(analysis: Mapping[str, Any], capture_name: str | None = None,
                       offset_ns: int = 0) -> list[Interval]:
    out = []
    for f in select_files(analysis, capture_name):
        for conn in f.get("connections", []):
            for s in conn.get("stalls", []):
                out.append(Interval(int(s["start_ns"]) - offset_ns, int(s["end_ns"]) - offset_ns, str(s["cause"]),
                                    s.get("direction") or "", s.get("detail")))
    return sorted(out, key=lambda i: (i.start_ns, i.end_ns, i.cause, i.direction))


def reported_causes(analysis: Mapping[str, Any], sender_ip: str = CAPTURE_SENDER_IP,
                    capture_name: str | None = None) -> tuple[set[str], int]:
    """(causes reported for the data sender's direction by stalls and findings, number of
    undetermined stalls in that direction). A stall or finding without a direction counts."""
    prefix = f"{sender_ip}:"
    causes: set[str] = set()
    undetermined = 0
    for f in select_files(analysis, capture_name):
        for conn in f.get("connections", []):
            for item in [*conn.get("stalls", []), *conn.get("findings", [])]:
                direction = item.get("direction") or ""
                if direction and not direction.startswith(prefix):
                    continue
                if item["cause"] == UNDETERMINED:
                    undetermined += 1
                else:
                    causes.add(str(item["cause"]))
    return causes, undetermined


# --- timed truth ------------------------------------------------------------------------------------


@dataclass
class Confusion:
    """Counts per (true cause or `spurious`) x (reported cause, `undetermined` or `missed`)."""

    cells: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, row: str, col: str, n: int = 1) -> None:
        self.cells[(row, col)] = self.cells.get((row, col), 0) + n

    def merge(self, other: Confusion) -> None:
        for (r, c), n in other.cells.items():
            self.add(r, c, n)

    def get(self, row: str, col: str) -> int:
        return self.cells.get((row, col), 0)

    def rows(self) -> list[str]:
        named = sorted({r for r, _ in self.cells} - {SPURIOUS})
        return named + ([SPURIOUS] if any(r == SPURIOUS for r, _ in self.cells) else [])

    def columns(self) -> list[str]:
        named = sorted({c for _, c in self.cells} - {UNDETERMINED, MISSED})
        tail = [c for c in (UNDETERMINED, MISSED) if any(cc == c for _, cc in self.cells)]
        return named + tail

    def causes(self) -> list[str]:
        return sorted(({r for r, _ in self.cells} | {c for _, c in self.cells}) - {SPURIOUS, MISSED, UNDETERMINED})

    def true_count(self, cause: str) -> int:
        return sum(n for (r, _), n in self.cells.items() if r == cause)

    def reported_count(self, cause: str) -> int:
        return sum(n for (_, c), n in self.cells.items() if c == cause)

    def to_json(self) -> dict[str, Any]:
        rows, cols = self.rows(), self.columns()
        return {"rows": rows, "columns": cols,
                "matrix": {r: {c: self.get(r, c) for c in cols} for r in rows}}


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


@dataclass
class TimedScore:
    """The score of one or more traces against `stallscope.ground_truth/1`."""

    confusion: Confusion = field(default_factory=Confusion)
    traces: list[dict[str, Any]] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)  # one trace: every true stall's fate

    def merge(self, other: TimedScore) -> None:
        self.confusion.merge(other.confusion)
        self.traces.extend(other.traces)

    def per_cause(self) -> dict[str, dict[str, Any]]:
        out = {}
        for cause in self.confusion.causes():
            tp = self.confusion.get(cause, cause)
            true, reported = self.confusion.true_count(cause), self.confusion.reported_count(cause)
            out[cause] = {"true": true, "reported": reported, "matched": tp,
                          "precision": _ratio(tp, reported), "recall": _ratio(tp, true)}
        return out

    def totals(self) -> dict[str, Any]:
        c = self.confusion
        true = sum(n for (r, _), n in c.cells.items() if r != SPURIOUS)
        reported = sum(n for (_, col), n in c.cells.items() if col != MISSED)
        matched = sum(n for (r, col), n in c.cells.items() if r == col)
        named_reported = reported - sum(n for (_, col), n in c.cells.items() if col == UNDETERMINED)
        return {
            "true": true, "reported": reported, "matched": matched,
            "misattributed": sum(n for (r, col), n in c.cells.items()
                                 if r != col and r != SPURIOUS and col not in (MISSED, UNDETERMINED)),
            "undetermined": sum(n for (_, col), n in c.cells.items() if col == UNDETERMINED),
            "missed": sum(n for (_, col), n in c.cells.items() if col == MISSED),
            "spurious": sum(n for (r, _), n in c.cells.items() if r == SPURIOUS),
            "precision": _ratio(matched, named_reported), "recall": _ratio(matched, true),
        }

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"causes": self.per_cause(), "confusion": self.confusion.to_json(),
                               "totals": self.totals(), "traces": self.traces}
        if self.pairs:
            doc["stalls"] = self.pairs
        return doc


def _greedy(true: list[Interval], reported: list[Interval], free_t: set[int], free_r: set[int],
            accept: Callable[[Interval, Interval], bool]) -> list[tuple[int, int]]:
    """One-to-one pairs among the free indices, largest overlap first (ties: earliest true stall,
    then earliest report), so the result does not depend on the order of the inputs' lists."""
    candidates = []
    rs = sorted(free_r, key=lambda j: reported[j].start_ns)
    starts = [reported[j].start_ns for j in rs]
    longest = max((reported[j].duration_ns for j in rs), default=0)
    for i in sorted(free_t):
        t = true[i]
        # Only reports that start before t ends and late enough to reach it can overlap it.
        for k in range(bisect_left(starts, t.start_ns - longest), bisect_right(starts, t.end_ns)):
            j = rs[k]
            if accept(t, reported[j]):
                candidates.append((-overlap_ns(t, reported[j]), i, j))
    pairs = []
    for _, i, j in sorted(candidates):
        if i in free_t and j in free_r:
            free_t.discard(i)
            free_r.discard(j)
            pairs.append((i, j))
    return pairs


def score_intervals(true: list[Interval], reported: list[Interval], *,
                    min_overlap: float = MIN_OVERLAP) -> TimedScore:
    """Match reported stalls to true ones: first pairs the matching rule accepts (same cause), then,
    among what is left, pairs that overlap enough but disagree on the cause (misattributions and
    `undetermined`); the rest is missed or spurious."""
    free_t, free_r = set(range(len(true))), set(range(len(reported)))
    score = TimedScore()
    c = score.confusion
    fate: dict[int, tuple[str, int | None]] = {}
    for i, j in _greedy(true, reported, free_t, free_r, lambda t, r: matches(t, r, min_overlap)):
        c.add(true[i].cause, reported[j].cause)
        fate[i] = ("matched", j)
    overlap_only = lambda t, r: same_direction(t, r) and overlaps_enough(t, r, min_overlap)  # noqa: E731
    for i, j in _greedy(true, reported, free_t, free_r, overlap_only):
        c.add(true[i].cause, reported[j].cause)
        fate[i] = ("undetermined" if reported[j].cause == UNDETERMINED else "misattributed", j)
    for i in sorted(free_t):
        c.add(true[i].cause, MISSED)
        fate[i] = ("missed", None)
    for j in sorted(free_r):
        c.add(SPURIOUS, reported[j].cause)
    for i, t in enumerate(true):
        verdict, j = fate[i]
        score.pairs.append({
            "start_ns": t.start_ns, "end_ns": t.end_ns, "cause": t.cause, "direction": t.direction,
            "verdict": verdict, "reported": None if j is None else {
                "start_ns": reported[j].start_ns, "end_ns": reported[j].end_ns, "cause": reported[j].cause},
        })
    for j in sorted(free_r):
        r = reported[j]
        score.pairs.append({"start_ns": r.start_ns, "end_ns": r.end_ns, "cause": None, "direction": r.direction,
                            "verdict": "spurious", "reported": {"start_ns": r.start_ns, "end_ns": r.end_ns,
                                                                "cause": r.cause}})
    return score


def score_ground_truth(analysis: Mapping[str, Any], truth: Mapping[str, Any], *, capture_name: str | None = None,
                       offset_ns: int = 0, min_overlap: float = MIN_OVERLAP, label: str | None = None) -> TimedScore:
    """Score one analysis against one `stallscope.ground_truth/1` document."""
    true = truth_intervals(truth)
    reported = reported_intervals(analysis, capture_name, offset_ns)
    score = score_intervals(true, reported, min_overlap=min_overlap)
    t = score.totals()
    score.traces.append({"trace": label or capture_name, "true": t["true"], "reported": t["reported"],
                         "matched": t["matched"], "missed": t["missed"], "spurious": t["spurious"],
                         "misattributed": t["misattributed"], "undetermined": t["undetermined"]})
    return score


# --- untimed truth (fixtures) -------------------------------------------------------------------------


@dataclass
class CaptureScore:
    """The score of captures against `stallscope.capture_truth/1`."""

    captures: list[dict[str, Any]] = field(default_factory=list)

    def merge(self, other: CaptureScore) -> None:
        self.captures.extend(other.captures)

    def per_cause(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for cap in self.captures:
            for key in ("hit", "miss", "extra"):
                for cause in cap[key]:
                    out.setdefault(cause, {"hit": 0, "miss": 0, "extra": 0})[key] += 1
        return dict(sorted(out.items()))

    def totals(self) -> dict[str, int]:
        return {"captures": len(self.captures), "ok": sum(c["ok"] for c in self.captures),
                "negative_controls": sum(c["negative_control"] for c in self.captures),
                "hit": sum(len(c["hit"]) for c in self.captures), "miss": sum(len(c["miss"]) for c in self.captures),
                "extra": sum(len(c["extra"]) for c in self.captures),
                "undetermined": sum(c["undetermined"] for c in self.captures)}

    def to_json(self) -> dict[str, Any]:
        return {"causes": self.per_cause(), "captures": self.captures, "totals": self.totals()}


def score_capture_truth(analysis: Mapping[str, Any], truth: Mapping[str, Any], *, capture_name: str | None = None,
                        sender_ip: str = CAPTURE_SENDER_IP, label: str | None = None) -> CaptureScore:
    """Causes reported for the data sender against `expected_causes`. A negative control (empty
    list) passes only when nothing at all is reported for the sender, `undetermined` included; a
    positive capture passes when every expected cause is reported and no other cause is.
    `application_idle` is a cause only where it is expected; elsewhere it is listed apart."""
    if truth.get("schema") != CAPTURE_TRUTH_SCHEMA:
        raise ScoreError(f"expected schema {CAPTURE_TRUTH_SCHEMA}, got {truth.get('schema')!r}")
    expected = set(truth.get("expected_causes", []))
    reported, undetermined = reported_causes(analysis, sender_ip, capture_name)
    idle = APPLICATION_IDLE in reported
    if APPLICATION_IDLE not in expected:
        # Application idle time is reported apart from the causes (issue 12: "separately"): the
        # application had nothing to send, which no negative control claims it never did.
        reported.discard(APPLICATION_IDLE)
    negative = not expected
    hit, miss, extra = sorted(expected & reported), sorted(expected - reported), sorted(reported - expected)
    ok = not miss and not extra and (undetermined == 0 or not negative)
    return CaptureScore([{
        "capture": label or capture_name or truth.get("scenario"), "scenario": truth.get("scenario"),
        "negative_control": negative, "expected": sorted(expected), "reported": sorted(reported),
        "hit": hit, "miss": miss, "extra": extra, "undetermined": undetermined, "ok": ok, "application_idle": idle,
    }])


# --- one pair of files, and a corpus ------------------------------------------------------------------


@dataclass
class ScoreReport:
    timed: TimedScore | None = None
    capture: CaptureScore | None = None
    errors: list[dict[str, str]] = field(default_factory=list)
    offset_ns: int = 0
    min_overlap: float = MIN_OVERLAP

    def add(self, part: TimedScore | CaptureScore) -> None:
        if isinstance(part, TimedScore):
            if self.timed is None:
                self.timed = TimedScore()
            self.timed.merge(part)
            if not self.timed.pairs and len(self.timed.traces) == 1:
                self.timed.pairs = part.pairs
            else:
                self.timed.pairs = []  # per-stall detail only for a single trace
        else:
            if self.capture is None:
                self.capture = CaptureScore()
            self.capture.merge(part)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"schema": SCORE_SCHEMA,
                               "matching": {"min_overlap": self.min_overlap, "offset_ns": self.offset_ns}}
        if self.timed is not None:
            doc["ground_truth"] = self.timed.to_json()
        if self.capture is not None:
            doc["capture_truth"] = self.capture.to_json()
        doc["errors"] = self.errors
        return doc


def default_analyzer(path: Path) -> dict[str, Any]:
    """The analyzer's Python API on one capture, as its `stallscope.analysis/1` document."""
    from stallscope.analyzers.analyze import analyze_file

    return analyze_file(path).to_json()


def load_analysis(source: Path, analyzer: Analyzer | None = None) -> dict[str, Any]:
    """An analysis JSON file as it is; anything else is a capture to analyze."""
    source = Path(source)
    if source.suffix == ".json":
        return load_json(source)
    return (analyzer or default_analyzer)(source)


def capture_name_for(truth_path: Path, truth: Mapping[str, Any]) -> str | None:
    """The capture a truth file describes: `<pcap>.truth.json` names it; a capture truth names its
    sender-side file under `files.sender`."""
    name = Path(truth_path).name
    if name.endswith(".truth.json"):
        return name[: -len(".truth.json")]
    files = truth.get("files")
    if isinstance(files, dict) and files.get("sender"):
        return str(files["sender"])
    return None


def score_pair(analysis: Mapping[str, Any], truth: Mapping[str, Any], *, capture_name: str | None = None,
               offset_ns: int = 0, min_overlap: float = MIN_OVERLAP, label: str | None = None,
               sender_ip: str = CAPTURE_SENDER_IP) -> TimedScore | CaptureScore:
    schema = truth.get("schema")
    if schema == GROUND_TRUTH_SCHEMA:
        return score_ground_truth(analysis, truth, capture_name=capture_name, offset_ns=offset_ns,
                                  min_overlap=min_overlap, label=label)
    if schema == CAPTURE_TRUTH_SCHEMA:
        return score_capture_truth(analysis, truth, capture_name=capture_name, sender_ip=sender_ip, label=label)
    raise ScoreError(f"unknown truth schema {schema!r}; expected {GROUND_TRUTH_SCHEMA} or {CAPTURE_TRUTH_SCHEMA}")


def score_files(analysis_or_pcap: Path, truth_path: Path, *, analyzer: Analyzer | None = None,
                offset_ns: int = 0, min_overlap: float = MIN_OVERLAP) -> ScoreReport:
    """`stallscope score ANALYSIS_OR_PCAP TRUTH.json`."""
    truth = load_json(truth_path)
    source = Path(analysis_or_pcap)
    analysis = load_analysis(source, analyzer)
    # The analysis of several files is narrowed to the truth's capture; a pcap given directly is it.
    name = source.name if source.suffix != ".json" else capture_name_for(truth_path, truth)
    report = ScoreReport(offset_ns=offset_ns, min_overlap=min_overlap)
    report.add(score_pair(analysis, truth, capture_name=name, offset_ns=offset_ns, min_overlap=min_overlap,
                          label=source.name))
    return report


def corpus_pairs(directory: Path) -> list[tuple[Path, Path]]:
    """(capture, truth) pairs in `directory`, sorted by name: every `X.pcap` with `X.pcap.truth.json`
    beside it; also fixtures' `NAME.pcap` / `NAME.receiver.pcap` with a capture-truth `NAME.json`."""
    directory = Path(directory)
    out = []
    for pcap in sorted(directory.glob("*.pcap")):
        sim_truth = pcap.with_name(pcap.name + ".truth.json")
        if sim_truth.exists():
            out.append((pcap, sim_truth))
            continue
        stem = pcap.name[: -len(".pcap")]
        stem = stem[: -len(".receiver")] if stem.endswith(".receiver") else stem
        cap_truth = pcap.with_name(stem + ".json")
        if cap_truth.exists():
            out.append((pcap, cap_truth))
    return out


def _score_one(args: tuple[Path, Path, Analyzer | None, int, float]) -> tuple[Any, dict[str, str] | None]:
    pcap, truth_path, analyzer, offset_ns, min_overlap = args
    try:
        truth = load_json(truth_path)
        if truth.get("schema") == CAPTURE_TRUTH_SCHEMA and not isinstance(truth.get("expected_causes"), list):
            return None, None  # another JSON beside a capture
        try:
            analysis = (analyzer or default_analyzer)(pcap)
        except ScoreError:
            raise
        except Exception as exc:  # one capture the analyzer fails on must not stop the corpus
            return None, {"trace": pcap.name, "error": f"analyzer failed: {type(exc).__name__}: {exc}"}
        return score_pair(analysis, truth, capture_name=pcap.name, offset_ns=offset_ns, min_overlap=min_overlap,
                          label=pcap.name), None
    except ScoreError as exc:
        return None, {"trace": pcap.name, "error": str(exc)}


def score_corpus(directory: Path, *, analyzer: Analyzer | None = None, jobs: int = 1, offset_ns: int = 0,
                 min_overlap: float = MIN_OVERLAP) -> ScoreReport:
    """Analyze every capture in `directory` that has a truth file beside it and aggregate the
    scores (per-cause precision and recall and one confusion matrix over all traces). Traces are
    taken in name order, so the report does not depend on `jobs`."""
    report = ScoreReport(offset_ns=offset_ns, min_overlap=min_overlap)
    tasks = [(p, t, analyzer, offset_ns, min_overlap) for p, t in corpus_pairs(directory)]
    if not tasks:
        raise ScoreError(f"{directory}: no capture with a truth file beside it")
    results: Iterable[tuple[Any, dict[str, str] | None]]
    if jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            results = pool.map(_score_one, tasks, chunksize=1)
    else:
        results = map(_score_one, tasks)
    for part, error in results:
        if error is not None:
            report.errors.append(error)
        elif part is not None:
            report.add(part)
    if report.timed is not None:
        report.timed.pairs = []
    return report
