"""Every citation in the code and docs points inside the repository.

The TCP behaviour rules the code relies on are written in docs/tcp-rules.md and cited by anchor
(`docs/tcp-rules.md#delayed-ack-timers`); nothing may cite the notes folder beside the checkout
("notes 1.3", shared/notes, notes/tcp-behaviour.md) or an absolute path of this machine. And every
`docs/NAME.md#anchor` cited anywhere, and every relative link between the docs, must name a doc
that exists and a heading in it (the anchor GitHub makes from the heading).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve().relative_to(REPO).as_posix()

# Source and doc files, by suffix (plus Makefiles).
SUFFIXES = {".py", ".pyi", ".rs", ".md", ".sh", ".toml", ".txt", ".cfg", ".yml", ".yaml"}

# Citations that point outside the repository. Built from pieces so this file does not match itself.
OUTSIDE = {
    "a rule cited by its section in the notes beside the checkout": re.compile(r"\bnotes\s+\d+(\.\d+)*\b"),
    "the notes or seeds folder beside the checkout": re.compile("shared/" + r"(notes|seeds)\b"),
    "a notes file by name": re.compile(r"\b(tcp-behaviour|bad-inputs)" + r"\.md\b"),
    "an absolute path of this machine": re.compile(r"(?<![\w./-])" + "/wo" + r"rk/"),
}

# Files not yet changed, with the citations they still hold and where each should point; once a
# file is fixed, its entry must go (the test fails on an entry whose file no longer has any of
# these citations). None is left.
PENDING: dict[str, dict[str, str]] = {}


def _files() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=REPO, capture_output=True, check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    names = []
    for name in out.decode().split("\0"):
        p = Path(name)
        if not name or name == THIS or name.startswith(("build/", "native/target/")):
            continue
        if (p.suffix in SUFFIXES or p.name == "Makefile") and (REPO / p).is_file():
            names.append(name)
    return sorted(names)


def _text(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8", errors="replace")


def _outside(text: str) -> list[tuple[int, str, str]]:
    """(line number, what, the line) of every citation pointing outside the repository."""
    hits = []
    for n, line in enumerate(text.splitlines(), 1):
        for what, rx in OUTSIDE.items():
            if rx.search(line):
                hits.append((n, what, line.strip()))
    return hits


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: link targets dropped, lower case, punctuation other
    than '-' and '_' removed, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    """Every heading anchor of a Markdown file (code blocks skipped; repeats numbered as GitHub does)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            k = seen.get(base, 0)
            seen[base] = k + 1
            out.add(base if k == 0 else f"{base}-{k}")
    return out


def test_slug_matches_github():
    assert slug("Linux 2.0 partial segment") == "linux-20-partial-segment"
    assert slug("Linux Nagle: Minshall, CORK and NODELAY") == "linux-nagle-minshall-cork-and-nodelay"
    assert slug("`stallscope reproduce NAME`") == "stallscope-reproduce-name"
    assert slug("Delayed-ACK profile (`peer_delayed_ack`, `own_delayed_ack`)") == (
        "delayed-ack-profile-peer_delayed_ack-own_delayed_ack")


def test_no_citation_points_outside_the_repository():
    bad = []
    for name in _files():
        if name in PENDING:
            continue
        bad += [f"{name}:{n}: {what}: {line}" for n, what, line in _outside(_text(name))]
    assert not bad, "cite docs/ instead (docs/tcp-rules.md#...):\n" + "\n".join(bad)


@pytest.mark.parametrize("name", sorted(PENDING))
def test_pending_files_are_still_pending(name):
    """An entry of PENDING stays only while its file still cites outside the repository, and only
    with the citations listed (so the list says exactly what is left)."""
    path = REPO / name
    assert path.is_file(), f"{name} is gone: remove it from PENDING"
    hits = _outside(_text(name))
    assert hits, f"{name} no longer cites outside the repository: remove it from PENDING"
    for n, what, line in hits:
        assert any(c in line for c in PENDING[name]), f"{name}:{n}: {what} not listed in PENDING: {line}"
    for target in PENDING[name].values():
        doc, anchor = target.split("#")
        assert anchor in anchors(REPO / doc), f"PENDING points {name} at {target}, which does not exist"


# docs/NAME.md#anchor anywhere; in the docs also relative links (NAME.md#anchor) and
# (NAME.md).
CITED = re.compile(r"\bdocs/([\w.-]+\.md)(?:#([\w-]+))?")
LINK = re.compile(r"\]\(([\w.-]+\.md)?(?:#([\w-]+))?\)")


def test_every_cited_doc_and_anchor_exists():
    cache: dict[Path, set[str]] = {}
    bad = []
    for name in _files():
        text = _text(name)
        found = [(REPO / "docs" / doc, anchor, m.start()) for m in CITED.finditer(text)
                 for doc, anchor in [m.groups()]]
        if name.startswith("docs/") and name.endswith(".md"):
            here = REPO / name
            found += [(here.parent / doc if doc else here, anchor, m.start()) for m in LINK.finditer(text)
                      for doc, anchor in [m.groups()] if doc or anchor]
        for doc, anchor, at in found:
            line = text.count("\n", 0, at) + 1
            if not doc.is_file():
                bad.append(f"{name}:{line}: {doc.relative_to(REPO)} does not exist")
            elif anchor:
                if doc not in cache:
                    cache[doc] = anchors(doc)
                if anchor not in cache[doc]:
                    bad.append(f"{name}:{line}: no heading #{anchor} in {doc.relative_to(REPO)}")
    assert not bad, "\n".join(bad)


def test_the_rules_doc_has_the_sections_the_code_cites():
    """docs/tcp-rules.md is cited from the simulator (Python and Rust) and its tests."""
    cited = set()
    for name in _files():
        if name.startswith(("simulate/", "native/src/sim/", "tests/")):
            cited |= {a for d, a in CITED.findall(_text(name)) if d == "tcp-rules.md" and a}
    assert len(cited) >= 15, sorted(cited)
    assert cited <= anchors(REPO / "docs" / "tcp-rules.md")
