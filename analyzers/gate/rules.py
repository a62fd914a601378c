"""The gate's verdicts: a pure function from one analysed capture, a policy and (optionally) a
baseline to rule results. Nothing here reads files or prints.

    verdict = evaluate(file_analysis, policy, baseline)    # CaptureVerdict
    verdict.results                                         # RuleResult per connection and rule

Each connection gets one result per rule of every rule set that covers it (`[rules]`, and each
`[[scope]]` whose filter matches it); each capture one `capture` result (read in full, damaged,
rejected, or holding no TCP) and, with a baseline, `baseline.stall_time` and
`baseline.cause_count`. A result that fails carries the stalls and findings behind it, with their
frame numbers (docs/check.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from stallscope.analyzers.analysis_text import _evidence_line, _ms, rate
from stallscope.exit_codes import ExitCode

from .baseline import Baseline, CaptureSummary, summarize
from .policy import BaselineRule, Policy, RuleSet, parse_endpoint

# Stalls and findings listed per result (largest time lost first); the count says how many there were.
MAX_EVIDENCE = 20

PASS, FAIL, SKIP, ERROR = "pass", "fail", "skip", "error"

# The hook for `min_goodput_of_prediction`: the goodput (bit/s) the reference simulator predicts
# for a connection's path, or None when it has no prediction (stallscope check: the comparison's fitted run).
Predictor = Callable[[Any, Any], "float | None"]


@dataclass(frozen=True)
class Evidence:
    """One stall or connection finding behind a result."""

    kind: str  # "stall" or "finding"
    cause: str
    detail: str | None
    direction: str
    start_frame: int | None
    end_frame: int | None
    time_lost_ns: int | None
    frames: tuple[int, ...]
    text: str  # what the analyzer saw, one line

    def describe(self) -> str:
        label = self.cause + (f"/{self.detail}" if self.detail else "")
        if self.kind == "stall":
            where = f"frames {self.start_frame}-{self.end_frame}, {_ms(self.time_lost_ns or 0)} lost"
        else:
            where = "connection finding" + (f", frames {', '.join(map(str, self.frames))}" if self.frames else "")
        return f"{label} ({self.direction}; {where})" + (f": {self.text}" if self.text else "")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "cause": self.cause, "detail": self.detail, "direction": self.direction,
                "start_frame": self.start_frame, "end_frame": self.end_frame, "time_lost_ns": self.time_lost_ns,
                "frames": list(self.frames), "text": self.text}


@dataclass(frozen=True)
class RuleResult:
    rule: str  # forbid_causes, max_stalled_share, max_time_lost_ms.CAUSE, ..., capture, baseline.*
    scope: str | None  # "rules", a [[scope]]'s name, or None for a capture's own results
    stream: int | None
    connection: str | None  # "initiator -> responder"
    status: str  # pass, fail, skip, error
    message: str
    observed: float | int | None = None
    limit: float | int | None = None
    evidence: tuple[Evidence, ...] = ()
    evidence_count: int = 0

    @property
    def name(self) -> str:
        """The JUnit testcase name: the connection, then the rule (with its scope)."""
        rule = self.rule if self.scope in (None, "rules") else f"{self.scope}: {self.rule}"
        if self.stream is None:
            return rule
        return f"stream {self.stream} ({self.connection}): {rule}"

    def failure_text(self, limit: int | None = None) -> str:
        """The message, then one line per stall or finding with its frames (at most `limit`)."""
        shown = self.evidence if limit is None else self.evidence[:limit]
        lines = [self.message] + ["  " + e.describe() for e in shown]
        if self.evidence_count > len(shown):
            lines.append(f"  ... and {self.evidence_count - len(shown)} more")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "scope": self.scope, "stream": self.stream, "connection": self.connection,
                "status": self.status, "message": self.message, "observed": self.observed, "limit": self.limit,
                "evidence_count": self.evidence_count, "evidence": [e.to_json() for e in self.evidence]}


@dataclass
class CaptureVerdict:
    path: str
    status: str  # ok, damaged, rejected (as the analysis)
    error: dict[str, Any] | None
    summary: CaptureSummary | None  # None when rejected
    results: list[RuleResult] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.status != "ok":
            return ERROR
        return FAIL if any(r.status == FAIL for r in self.results) else PASS

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)


def exit_status(verdicts: Iterable[CaptureVerdict]) -> ExitCode:
    """4 if a capture was rejected, else 3 if one was damaged, else 1 if a rule failed, else 0:
    an input problem wins over a rule's verdict (docs/check.md)."""
    vs = list(verdicts)
    if any(v.status == "rejected" for v in vs):
        return ExitCode.INPUT_REJECTED
    if any(v.status == "damaged" for v in vs):
        return ExitCode.INPUT_DAMAGED
    if any(r.status == FAIL for v in vs for r in v.results):
        return ExitCode.VERDICT_FAILED
    return ExitCode.OK


# --- evaluation -----------------------------------------------------------------------------------


def evaluate(fa: Any, policy: Policy, baseline: Baseline | None = None, *,
             baseline_rule: BaselineRule | None = None, predictor: Predictor | None = None) -> CaptureVerdict:
    """The verdict on one analysed capture (stallscope.analyzers.analyze.FileAnalysis).

    `baseline` is the previous run's results, compared with the margins of `baseline_rule`
    (default: the policy's [baseline], else the documented defaults). `predictor` is the hook for
    `min_goodput_of_prediction`; without it that rule is skipped."""
    if fa.status == "rejected":
        err = fa.error or {}
        return CaptureVerdict(fa.path, fa.status, fa.error, None, [
            RuleResult("capture", None, None, None, ERROR, f"rejected: {err.get('message', 'not a capture')}")])
    summary = summarize(fa)
    verdict = CaptureVerdict(fa.path, fa.status, fa.error, summary)
    verdict.results.append(_capture_result(fa))
    for conn in fa.connections:
        endpoints = [parse_endpoint(conn.initiator), parse_endpoint(conn.responder)]
        for rs in policy.rule_sets:
            if rs.where is None or rs.where.matches(endpoints):
                verdict.results.extend(_connection_results(fa, conn, rs, predictor))
    if baseline is not None:
        rule = baseline_rule or policy.baseline or BaselineRule()
        verdict.results.extend(_baseline_results(fa, summary, baseline, rule))
    return verdict


def _capture_result(fa: Any) -> RuleResult:
    if fa.status == "damaged":
        err = fa.error or {}
        return RuleResult("capture", None, None, None, ERROR,
                          f"damaged at byte {err.get('offset')}: {err.get('message')}; the rules were checked on "
                          "the packets before the damage")
    n = len(fa.connections)
    if n == 0:
        return RuleResult("capture", None, None, None, SKIP, "no TCP connection to check")
    return RuleResult("capture", None, None, None, PASS, f"read in full: {n} TCP connection{'s' * (n != 1)}")


def _connection_results(fa: Any, conn: Any, rs: RuleSet, predictor: Predictor | None) -> list[RuleResult]:
    label = f"{conn.initiator} -> {conn.responder}"

    def result(rule: str, status: str, message: str, observed: Any = None, limit: Any = None,
               evidence: list[Evidence] | None = None) -> RuleResult:
        ev = evidence or []
        return RuleResult(rule, rs.name, conn.stream, label, status, message, observed, limit,
                          tuple(ev[:MAX_EVIDENCE]), len(ev))

    out = []
    if rs.forbid_causes:
        found = [e for e in _stall_evidence(conn) + _finding_evidence(conn) if e.cause in rs.forbid_causes]
        if found:
            parts = []
            for cause in rs.forbid_causes:
                stalls = [e for e in found if e.cause == cause and e.kind == "stall"]
                findings = [e for e in found if e.cause == cause and e.kind == "finding"]
                if stalls:
                    parts.append(f"{len(stalls)} {cause} stall{'s' * (len(stalls) != 1)} "
                                 f"({_ms(sum(e.time_lost_ns or 0 for e in stalls))} lost)")
                if findings:
                    parts.append(f"{cause} (connection finding)")
            out.append(result("forbid_causes", FAIL, "forbidden cause found: " + ", ".join(parts), len(found), 0,
                              _largest(found)))
        else:
            out.append(result("forbid_causes", PASS, "none of " + ", ".join(rs.forbid_causes), 0, 0))
    if rs.max_stalled_share is not None:
        if conn.duration_ns <= 0:
            out.append(result("max_stalled_share", SKIP, "the connection has no duration"))
        else:
            share = conn.time_lost_ns / conn.duration_ns
            ok = share <= rs.max_stalled_share
            msg = (f"{share:.1%} of the connection's {_ms(conn.duration_ns)} lost to stalls "
                   f"({_ms(conn.time_lost_ns)}); the limit is {rs.max_stalled_share:.1%}")
            out.append(result("max_stalled_share", PASS if ok else FAIL, msg, round(share, 6), rs.max_stalled_share,
                              None if ok else _largest(_counted_stalls(conn))))
    for cause, limit_ms in rs.max_time_lost_ms.items():
        stalls = [e for e in _stall_evidence(conn) if e.cause == cause]
        lost = sum(e.time_lost_ns or 0 for e in stalls)
        ok = lost <= limit_ms * 1e6
        msg = (f"{_ms(lost)} lost to {len(stalls)} {cause} stall{'s' * (len(stalls) != 1)}; "
               f"the limit is {limit_ms:g} ms")
        out.append(result(f"max_time_lost_ms.{cause}", PASS if ok else FAIL, msg, round(lost / 1e6, 3), limit_ms,
                          None if ok else _largest(stalls)))
    d = conn.data_direction
    if rs.min_goodput_bps is not None or rs.min_goodput_of_prediction is not None:
        why_not = _goodput_unjudged(d, rs)
        if rs.min_goodput_bps is not None:
            if why_not:
                out.append(result("min_goodput_bps", SKIP, why_not))
            else:
                ok = d.goodput_bps >= rs.min_goodput_bps
                msg = (f"goodput {rate(d.goodput_bps)} ({d.direction}, {d.profile['bytes']} bytes) "
                       f"{'>=' if ok else 'below'} the minimum {rate(rs.min_goodput_bps)}")
                out.append(result("min_goodput_bps", PASS if ok else FAIL, msg, round(d.goodput_bps, 1),
                                  rs.min_goodput_bps, None if ok else _largest(_counted_stalls(conn))))
        if rs.min_goodput_of_prediction is not None:
            predicted = predictor(fa, conn) if predictor is not None and not why_not else None
            if why_not or not predicted:
                out.append(result("min_goodput_of_prediction", SKIP,
                                  why_not or "no prediction from the reference simulator for this connection"))
            else:
                share = d.goodput_bps / predicted
                ok = share >= rs.min_goodput_of_prediction
                msg = (f"goodput {rate(d.goodput_bps)} is {share:.0%} of the {rate(predicted)} the reference "
                       f"simulator predicts; the minimum is {rs.min_goodput_of_prediction:.0%}")
                out.append(result("min_goodput_of_prediction", PASS if ok else FAIL, msg, round(share, 6),
                                  rs.min_goodput_of_prediction, None if ok else _largest(_counted_stalls(conn))))
    if rs.max_retransmission_rate is not None:
        if d is None or not d.profile.get("packets"):
            out.append(result("max_retransmission_rate", SKIP, "no packet sent in the data direction"))
        else:
            resent, sent = d.profile.get("retransmitted_packets") or 0, d.profile["packets"]
            share = resent / sent
            ok = share <= rs.max_retransmission_rate
            msg = (f"{resent} of {sent} packets retransmitted ({share:.2%}, {d.direction}); "
                   f"the limit is {rs.max_retransmission_rate:.2%}")
            lossy = [e for s, e in zip(conn.stalls, _stall_evidence(conn)) if "resent_frames" in s.evidence]
            out.append(result("max_retransmission_rate", PASS if ok else FAIL, msg, round(share, 6),
                              rs.max_retransmission_rate, None if ok else _largest(lossy)))
    return out


def _goodput_unjudged(d: Any, rs: RuleSet) -> str | None:
    if d is None or d.goodput_bps is None:
        return "no goodput: fewer than two data packets"
    sent = d.profile.get("bytes") or 0
    if sent < rs.min_goodput_bytes:
        return (f"{sent} bytes sent ({d.direction}), below min_goodput_bytes = {rs.min_goodput_bytes}: "
                "too short a transfer to judge its rate")
    return None


def _baseline_results(fa: Any, summary: CaptureSummary, baseline: Baseline, rule: BaselineRule) -> list[RuleResult]:
    found = baseline.lookup(fa.path)
    if found is None:
        msg = f"not in the baseline {baseline.source}"
        return [RuleResult("baseline.stall_time", None, None, None, SKIP, msg),
                RuleResult("baseline.cause_count", None, None, None, SKIP, msg)]
    as_path, old = found
    where = "" if as_path == fa.path else f" (as {as_path})"
    grew = summary.stall_time_ns - old.stall_time_ns
    allowed = max(old.stall_time_ns * rule.stall_time_margin, rule.stall_time_floor_ms * 1e6)
    ok = grew <= allowed
    msg = (f"stall time {_ms(summary.stall_time_ns)} against {_ms(old.stall_time_ns)} in the baseline{where}: "
           f"{'+' if grew >= 0 else '-'}{_ms(abs(grew))}; growth allowed: {rule.stall_time_margin:.0%}, "
           f"at least {rule.stall_time_floor_ms:g} ms")
    stalls = [e for c in fa.connections for e in _counted_stalls(c)]
    out = [RuleResult("baseline.stall_time", None, None, None, PASS if ok else FAIL, msg, summary.stall_time_ns,
                      old.stall_time_ns, () if ok else tuple(_largest(stalls)[:MAX_EVIDENCE]),
                      0 if ok else len(stalls))]
    grown = {c: (old.causes.get(c, 0), n) for c, n in summary.causes.items()
             if n - old.causes.get(c, 0) > rule.cause_count_margin}
    if grown:
        msg = ("more stalls than the baseline" + where + ": "
               + ", ".join(f"{c} {was} -> {now}" for c, (was, now) in sorted(grown.items()))
               + f" (margin {rule.cause_count_margin})")
        ev = [e for c in fa.connections for e in _stall_evidence(c) + _finding_evidence(c) if e.cause in grown]
        out.append(RuleResult("baseline.cause_count", None, None, None, FAIL, msg,
                              sum(now for _, now in grown.values()), sum(was for was, _ in grown.values()),
                              tuple(_largest(ev)[:MAX_EVIDENCE]), len(ev)))
    else:
        out.append(RuleResult("baseline.cause_count", None, None, None, PASS,
                              f"no cause grew by more than {rule.cause_count_margin} against the baseline{where}"))
    return out


# --- evidence -------------------------------------------------------------------------------------


def _frames(evidence: dict[str, Any], *extra: int | None) -> tuple[int, ...]:
    frames = {f for f in extra if isinstance(f, int)}
    for k, v in evidence.items():
        if k.endswith("_frame") and isinstance(v, int) and not isinstance(v, bool):
            frames.add(v)
        elif k == "resent_frames" and isinstance(v, list):
            frames.update(x for x in v if isinstance(x, int))
    return tuple(sorted(frames))


def _stall_evidence(conn: Any) -> list[Evidence]:
    return [Evidence("stall", s.cause, s.detail, s.direction, s.start_frame, s.end_frame, s.time_lost_ns,
                     _frames(s.evidence, s.start_frame, s.end_frame), _evidence_line(s))
            for s in conn.stalls]


def _counted_stalls(conn: Any) -> list[Evidence]:
    return [e for e in _stall_evidence(conn) if e.cause != "application_idle"]


def _finding_evidence(conn: Any) -> list[Evidence]:
    return [Evidence("finding", f.cause, f.detail, f.direction, None, None, None, _frames(f.evidence),
                     str(f.evidence.get("why", ""))) for f in conn.findings]


def _largest(evidence: list[Evidence]) -> list[Evidence]:
    """Findings first, then stalls by time lost (largest first), ties by frame: stable output."""
    return sorted(evidence, key=lambda e: (e.kind != "finding", -(e.time_lost_ns or 0), e.start_frame or 0, e.cause))
