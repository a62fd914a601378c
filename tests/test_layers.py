"""The house is laid out by stage, without import cycles (lint-style tests, no build needed).

Rust (native/src): every file is a module; a path `crate::a::b::c` depends on the longest module
that exists. No cycle among modules, and no stage imports a later one: containers -> wire ->
tracking -> tables -> decode -> bindings, with analysis and sim beside them.

Python: no cycle among the packages the distribution is assembled from (analyzers, packets,
capture, simulate, the CLI, and the core module files); reading captures (packets) never imports
the code that makes them (capture) or anything later.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "native" / "src"

# Stage order: a module may use its own stage and earlier ones.
STAGES = {"containers": 0, "wire": 1, "tracking": 2, "tables": 3, "analysis": 1, "sim": 2, "decode": 4,
          "bindings": 5}
_PATH = re.compile(r"\bcrate::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)")


def _rust_modules() -> dict[tuple[str, ...], Path]:
    out = {}
    for f in SRC.rglob("*.rs"):
        parts = f.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "mod":
            parts = parts[:-1]
        if parts == ("lib",):
            parts = ()
        out[parts] = f
    return out


def _code(text: str) -> str:
    """The text without comments (doc comments cite paths they do not import)."""
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def _rust_edges() -> dict[tuple[str, ...], set[tuple[str, ...]]]:
    modules = _rust_modules()
    edges: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
    for mod, f in modules.items():
        for m in _PATH.finditer(_code(f.read_text())):
            parts = tuple(m.group(1).split("::"))
            target = next((parts[:k] for k in range(len(parts), 0, -1) if parts[:k] in modules), None)
            # A module's own children (mod.rs declaring them) are not dependencies back up.
            if target is not None and target != mod and target[: len(mod)] != mod:
                edges[mod].add(target)
    return edges


def _cycle(edges: dict) -> list | None:
    color: dict = {}
    stack: list = []

    def visit(n) -> list | None:
        color[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if color.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in color:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        color[n] = 2
        return None

    for n in sorted(edges):
        if n not in color:
            found = visit(n)
            if found:
                return found
    return None


def test_no_cycle_among_rust_modules() -> None:
    cycle = _cycle(_rust_edges())
    assert cycle is None, "import cycle: " + " -> ".join("::".join(m) for m in cycle)


def test_no_rust_stage_imports_a_later_one() -> None:
    bad = []
    for mod, targets in _rust_edges().items():
        if not mod:
            continue
        for t in targets:
            if t and mod[0] in STAGES and t[0] in STAGES and STAGES[t[0]] > STAGES[mod[0]]:
                bad.append(f"{'::'.join(mod)} uses {'::'.join(t)}")
    assert not bad, bad


def test_the_checker_finds_a_cycle() -> None:
    """The cycle finder itself can fail: a two-module loop is reported."""
    assert _cycle({("a",): {("b",)}, ("b",): {("a",)}}) is not None
    assert _cycle({("a",): {("b",)}, ("b",): set()}) is None


PY_PACKAGES = {"analyzers": REPO / "analyzers", "packets": REPO / "packets", "capture": REPO / "capture",
               "simulate": REPO / "simulate", "cli": REPO / "stallscope" / "cli"}
_CORE = {"_native", "exit_codes", "output"}


def _py_package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "stallscope":
        return None
    if len(parts) == 1 or parts[1] in _CORE:
        return "core"
    return parts[1] if parts[1] in PY_PACKAGES else None


def _py_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    sources = [(name, f) for name, d in PY_PACKAGES.items() for f in d.rglob("*.py")]
    # (`python -m stallscope` is the command's entry point: the CLI's, not the core's.)
    sources += [("cli" if f.name == "__main__.py" else "core", f) for f in (REPO / "stallscope").glob("*.py")]
    for name, f in sources:
        for node in ast.walk(ast.parse(f.read_text())):
            mods = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            for m in mods:
                target = _py_package(m)
                if target and target != name:
                    edges[name].add(target)
    return edges


def test_no_cycle_among_python_packages() -> None:
    edges = _py_edges()
    cycle = _cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
    # Reading captures stands below making them and below every analysis.
    assert edges["packets"] <= {"core"}, edges["packets"]
    # The analyzers and the simulator never reach up to the command line.
    assert "cli" not in edges["analyzers"] and "cli" not in edges["simulate"] and "cli" not in edges["capture"]


def test_the_vocabulary_depends_on_nothing() -> None:
    """Causes and details are named in one module at the bottom that every stage imports."""
    tree = ast.parse((REPO / "stallscope" / "vocabulary.py").read_text())
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m and m.startswith("stallscope")]
    for package in ("analyzers", "capture", "simulate"):
        for f in PY_PACKAGES[package].rglob("*.py"):
            text = f.read_text()
            assert "class Cause(" not in text and "UNDETERMINED = " not in text, f"{f}: a second vocabulary"
