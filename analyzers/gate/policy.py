"""The CI gate's policy: what `stallscope check` fails a capture for, as typed dataclasses read from
TOML (docs/check.md lists every key).

    policy = load_policy("policy.toml")     # Policy, or PolicyError naming the bad key

A policy holds rule sets: `[rules]` applies to every connection, each `[[scope]]` to the
connections its port/address filter matches (in addition to `[rules]`), and `[baseline]` compares
each capture with a previous run. Every key is checked: an unknown key, a value of the wrong type
or range, an unknown cause name is a PolicyError naming the key (`scope[2].forbid_causes[0]`) and
what it allows. Nothing here reads a capture.
"""

from __future__ import annotations

import ipaddress
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from stallscope.vocabulary import UNDETERMINED, Cause

# Every cause a stall or a connection finding can have (docs/analysis-json.md), sorted.
CAUSES: tuple[str, ...] = tuple(sorted([c.value for c in Cause] + [UNDETERMINED]))

POLICY_VERSION = 1
# Goodput is judged only for a data direction that sent at least this many bytes: below it the
# handshake and slow start set the rate, not what the policy is about.
DEFAULT_MIN_GOODPUT_BYTES = 1_000_000
DEFAULT_STALL_TIME_MARGIN = 0.10
DEFAULT_STALL_TIME_FLOOR_MS = 10.0
DEFAULT_CAUSE_COUNT_MARGIN = 0

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class PolicyError(ValueError):
    """A policy that cannot be used: `key` is where (`rules.max_stalled_share`, `scope[1].ports[0]`),
    `problem` what is wrong, `allowed` what the key takes."""

    def __init__(self, key: str, problem: str, allowed: str | None = None) -> None:
        self.key, self.problem, self.allowed = key, problem, allowed
        text = f"{key}: {problem}" if key else problem
        super().__init__(text + (f"; allowed: {allowed}" if allowed else ""))


@dataclass(frozen=True)
class PortRange:
    low: int
    high: int

    def __contains__(self, port: int) -> bool:
        return self.low <= port <= self.high

    def __str__(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


@dataclass(frozen=True)
class ConnectionFilter:
    """Which connections a scope covers: either endpoint's port in `ports` and either endpoint's
    address in `addresses` (each list that is given must match; an empty list matches all)."""

    ports: tuple[PortRange, ...] = ()
    addresses: tuple[Network, ...] = ()

    def matches(self, endpoints: list[tuple[str, int]]) -> bool:
        if self.ports and not any(port in r for _, port in endpoints for r in self.ports):
            return False
        if self.addresses:
            ips = []
            for addr, _ in endpoints:
                try:
                    ips.append(ipaddress.ip_address(addr))
                except ValueError:
                    continue
            if not any(ip.version == net.version and ip in net for ip in ips for net in self.addresses):
                return False
        return True

    def describe(self) -> str:
        parts = []
        if self.ports:
            parts.append("ports " + ", ".join(str(p) for p in self.ports))
        if self.addresses:
            parts.append("addresses " + ", ".join(str(a) for a in self.addresses))
        return "; ".join(parts) or "every connection"


@dataclass(frozen=True)
class RuleSet:
    """The rules of `[rules]` (name "rules", no filter) or of one `[[scope]]`."""

    name: str
    where: ConnectionFilter | None = None
    forbid_causes: tuple[str, ...] = ()
    max_stalled_share: float | None = None
    max_time_lost_ms: Mapping[str, float] = field(default_factory=dict)
    min_goodput_bps: float | None = None
    # Hook for the comparison with the reference simulator (a later issue): the least share of the
    # goodput the simulator predicts for the connection's path. Parsed and checked here; evaluated
    # only when rules.evaluate is given a predictor (stallscope check gives the reference simulator's).
    min_goodput_of_prediction: float | None = None
    min_goodput_bytes: int = DEFAULT_MIN_GOODPUT_BYTES
    max_retransmission_rate: float | None = None

    @property
    def empty(self) -> bool:
        return not (self.forbid_causes or self.max_stalled_share is not None or self.max_time_lost_ms
                    or self.min_goodput_bps is not None or self.min_goodput_of_prediction is not None
                    or self.max_retransmission_rate is not None)


@dataclass(frozen=True)
class BaselineRule:
    """Compare each capture with a previous run's results (`file`, or --baseline): fail when its
    stall time grows by more than `stall_time_margin` (a share) and `stall_time_floor_ms`, or a
    cause's count by more than `cause_count_margin`."""

    file: Path | None = None
    stall_time_margin: float = DEFAULT_STALL_TIME_MARGIN
    stall_time_floor_ms: float = DEFAULT_STALL_TIME_FLOOR_MS
    cause_count_margin: int = DEFAULT_CAUSE_COUNT_MARGIN


@dataclass(frozen=True)
class Policy:
    rules: RuleSet = field(default_factory=lambda: RuleSet("rules"))
    scopes: tuple[RuleSet, ...] = ()
    baseline: BaselineRule | None = None
    source: str | None = None  # the file it was read from

    @property
    def rule_sets(self) -> tuple[RuleSet, ...]:
        return (self.rules, *self.scopes)

    @property
    def needs_prediction(self) -> list[str]:
        """Keys that need the reference simulator's prediction."""
        return [f"{_where(rs)}.min_goodput_of_prediction" for rs in self.rule_sets
                if rs.min_goodput_of_prediction is not None]


def _where(rs: RuleSet) -> str:
    return "rules" if rs.where is None else f"scope '{rs.name}'"


# --- reading --------------------------------------------------------------------------------------

TOP_KEYS = ("version", "rules", "scope", "baseline")
RULE_KEYS = ("forbid_causes", "max_stalled_share", "max_time_lost_ms", "min_goodput_bps",
             "min_goodput_of_prediction", "min_goodput_bytes", "max_retransmission_rate")
SCOPE_KEYS = ("name", "ports", "addresses") + RULE_KEYS
BASELINE_KEYS = ("file", "stall_time_margin", "stall_time_floor_ms", "cause_count_margin")


def load_policy(path: str | Path) -> Policy:
    """Read and check a policy file; relative paths in it (baseline.file) are relative to it."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise PolicyError("", f"cannot read the policy: {e.strerror or e}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise PolicyError("", f"not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise PolicyError("", f"not valid TOML: {e}") from None
    return parse_policy(data, base=p.parent, source=str(p))


def parse_policy(data: Mapping[str, Any], *, base: Path | None = None, source: str | None = None) -> Policy:
    """A Policy from the TOML document's tables (a dict); PolicyError names the first bad key."""
    _known(data, TOP_KEYS, "")
    version = data.get("version", POLICY_VERSION)
    if type(version) is not int or version != POLICY_VERSION:
        raise PolicyError("version", f"unsupported policy version {version!r}", str(POLICY_VERSION))
    rules = RuleSet("rules")
    if "rules" in data:
        table = _table(data["rules"], "rules")
        _known(table, RULE_KEYS, "rules")
        rules = _rule_set(table, "rules", "rules", None)
    scopes = []
    if "scope" in data:
        items = data["scope"]
        if not isinstance(items, list) or not all(isinstance(t, dict) for t in items):
            raise PolicyError("scope", f"expected an array of tables ([[scope]]), got {_kind(items)}",
                              "[[scope]] tables")
        names: set[str] = set()
        for i, table in enumerate(items):
            key = f"scope[{i}]"
            _known(table, SCOPE_KEYS, key)
            name = table.get("name", f"scope {i + 1}")
            if not isinstance(name, str) or not name.strip():
                raise PolicyError(f"{key}.name", f"expected a non-empty string, got {_kind(name)}", "a string")
            if name in names or name == "rules":
                raise PolicyError(f"{key}.name", f"the name {name!r} is used twice", "a name of its own per scope")
            names.add(name)
            where = ConnectionFilter(_ports(table.get("ports", []), f"{key}.ports"),
                                     _addresses(table.get("addresses", []), f"{key}.addresses"))
            if not where.ports and not where.addresses:
                raise PolicyError(key, "a scope needs ports or addresses (rules for every connection go in [rules])",
                                  "ports, addresses")
            rs = _rule_set(table, name, key, where)
            if rs.empty:
                raise PolicyError(key, "a scope with no rule", ", ".join(RULE_KEYS))
            scopes.append(rs)
    baseline = None
    if "baseline" in data:
        baseline = _baseline(_table(data["baseline"], "baseline"), base)
    return Policy(rules, tuple(scopes), baseline, source)


def _rule_set(table: Mapping[str, Any], name: str, key: str, where: ConnectionFilter | None) -> RuleSet:
    causes = table.get("forbid_causes", [])
    if not isinstance(causes, list):
        raise PolicyError(f"{key}.forbid_causes", f"expected an array of cause names, got {_kind(causes)}",
                          ", ".join(CAUSES))
    for i, c in enumerate(causes):
        if c not in CAUSES:
            raise PolicyError(f"{key}.forbid_causes[{i}]", f"unknown cause {c!r}", ", ".join(CAUSES))
    lost = table.get("max_time_lost_ms", {})
    lost = _table(lost, f"{key}.max_time_lost_ms", allowed="a table of cause = milliseconds")
    for c, v in lost.items():
        if c not in CAUSES:
            raise PolicyError(f"{key}.max_time_lost_ms.{c}", f"unknown cause {c!r}", ", ".join(CAUSES))
        _number(v, f"{key}.max_time_lost_ms.{c}", low=0)
    return RuleSet(
        name=name, where=where,
        forbid_causes=tuple(dict.fromkeys(causes)),
        max_stalled_share=_optional_share(table, "max_stalled_share", key),
        max_time_lost_ms={c: float(lost[c]) for c in sorted(lost)},
        min_goodput_bps=_optional_number(table, "min_goodput_bps", key, low=0),
        min_goodput_of_prediction=_optional_share(table, "min_goodput_of_prediction", key),
        min_goodput_bytes=_integer(table.get("min_goodput_bytes", DEFAULT_MIN_GOODPUT_BYTES),
                                   f"{key}.min_goodput_bytes", low=0),
        max_retransmission_rate=_optional_share(table, "max_retransmission_rate", key),
    )


def _baseline(table: Mapping[str, Any], base: Path | None) -> BaselineRule:
    _known(table, BASELINE_KEYS, "baseline")
    file = table.get("file")
    if file is not None:
        if not isinstance(file, str) or not file:
            raise PolicyError("baseline.file", f"expected a path (string), got {_kind(file)}",
                              "a path to a previous `stallscope check -f json` (or `analyze -f json`) result")
        file = Path(file) if base is None or Path(file).is_absolute() else base / file
    return BaselineRule(
        file=file,
        stall_time_margin=_number(table.get("stall_time_margin", DEFAULT_STALL_TIME_MARGIN),
                                  "baseline.stall_time_margin", low=0),
        stall_time_floor_ms=_number(table.get("stall_time_floor_ms", DEFAULT_STALL_TIME_FLOOR_MS),
                                    "baseline.stall_time_floor_ms", low=0),
        cause_count_margin=_integer(table.get("cause_count_margin", DEFAULT_CAUSE_COUNT_MARGIN),
                                    "baseline.cause_count_margin", low=0),
    )


# --- checks ---------------------------------------------------------------------------------------


def _kind(v: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
             dict: "a table"}
    return f"{names.get(type(v), type(v).__name__)} ({v!r})" if not isinstance(v, (list, dict)) else names[type(v)]


def _known(table: Mapping[str, Any], keys: tuple[str, ...], where: str) -> None:
    for k in table:
        if k not in keys:
            raise PolicyError(f"{where}.{k}" if where else k, "unknown key", ", ".join(keys))


def _table(v: Any, key: str, allowed: str = "a table") -> Mapping[str, Any]:
    if not isinstance(v, dict):
        raise PolicyError(key, f"expected a table, got {_kind(v)}", allowed)
    return v


def _number(v: Any, key: str, *, low: float | None = None, high: float | None = None) -> float:
    # TOML booleans are not numbers here, even though Python's bool is an int.
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise PolicyError(key, f"expected a number, got {_kind(v)}", _range(low, high))
    if (low is not None and v < low) or (high is not None and v > high):
        raise PolicyError(key, f"{v!r} is out of range", _range(low, high))
    return float(v)


def _integer(v: Any, key: str, *, low: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise PolicyError(key, f"expected an integer, got {_kind(v)}", _range(low, None, "an integer"))
    if low is not None and v < low:
        raise PolicyError(key, f"{v!r} is out of range", _range(low, None, "an integer"))
    return v


def _range(low: float | None, high: float | None, what: str = "a number") -> str:
    if low is not None and high is not None:
        return f"{what} from {low:g} to {high:g}"
    if low is not None:
        return f"{what} >= {low:g}"
    return what


def _optional_number(table: Mapping[str, Any], name: str, key: str, *, low: float) -> float | None:
    return None if name not in table else _number(table[name], f"{key}.{name}", low=low)


def _optional_share(table: Mapping[str, Any], name: str, key: str) -> float | None:
    return None if name not in table else _number(table[name], f"{key}.{name}", low=0, high=1)


def _ports(v: Any, key: str) -> tuple[PortRange, ...]:
    allowed = "an array of ports (0-65535) or ranges (\"8000-8999\")"
    if not isinstance(v, list):
        raise PolicyError(key, f"expected an array, got {_kind(v)}", allowed)
    out = []
    for i, p in enumerate(v):
        k = f"{key}[{i}]"
        if isinstance(p, int) and not isinstance(p, bool):
            low = high = p
        elif isinstance(p, str) and p.count("-") == 1 and all(s.strip().isdigit() for s in p.split("-")):
            low, high = (int(s) for s in p.split("-"))
        else:
            raise PolicyError(k, f"not a port or range: {_kind(p)}", allowed)
        if not (0 <= low <= high <= 65535):
            raise PolicyError(k, f"{p!r} is out of range", allowed)
        out.append(PortRange(low, high))
    return tuple(out)


def _addresses(v: Any, key: str) -> tuple[Network, ...]:
    allowed = "an array of IPv4/IPv6 addresses or networks (\"10.0.0.0/8\", \"2001:db8::/32\")"
    if not isinstance(v, list):
        raise PolicyError(key, f"expected an array, got {_kind(v)}", allowed)
    out = []
    for i, a in enumerate(v):
        try:
            if not isinstance(a, str):
                raise ValueError
            out.append(ipaddress.ip_network(a.strip(), strict=False))
        except ValueError:
            raise PolicyError(f"{key}[{i}]", f"not an address or network: {_kind(a)}", allowed) from None
    return tuple(out)


def parse_endpoint(text: str) -> tuple[str, int]:
    """`10.0.0.1:80` or `[2001:db8::1]:80` (ConnectionAnalysis.initiator) as (address, port)."""
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)
