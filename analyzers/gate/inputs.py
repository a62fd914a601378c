"""The captures a gate checks, from what was named: files, directories (the captures in them,
recursively, sorted) and glob patterns (`'captures/**/*.pcap'`, expanded here when the shell did
not). A name that gives no capture is kept as a problem, so the gate reports it beside the
captures that could be read instead of stopping before them.
"""

from __future__ import annotations

import glob
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

# Names a directory's captures carry: pcap, pcapng and cap files, gzipped or not, and tcpdump's
# rotated files (cap.pcap0, cap.pcap1 ...). Other files in a directory are not read.
CAPTURE_NAME = re.compile(r"\.(pcap\d*|pcapng|cap)(\.gz)?$", re.IGNORECASE)
GLOB_CHARS = re.compile(r"[*?[]")


@dataclass(frozen=True)
class InputProblem:
    """A name that gave no capture to read: `kind` is no_such_file, no_match (a glob),
    no_captures (a directory without any), permission_denied or not_a_file."""

    path: str
    kind: str
    message: str


def is_capture_name(name: str) -> bool:
    return CAPTURE_NAME.search(name) is not None


def expand(names: list[str]) -> list[Path | InputProblem]:
    """Files to check and problems, in the order named; a directory's and a glob's files sorted by
    path; a file named twice is checked once (where first named)."""
    out: list[Path | InputProblem] = []
    seen: set[str] = set()

    def add(p: Path) -> None:
        key = os.path.normpath(str(p))
        if key not in seen:
            seen.add(key)
            out.append(p)

    for name in names:
        p = Path(name)
        if name != "-" and not os.path.lexists(name) and GLOB_CHARS.search(name):
            matches = sorted(glob.glob(name, recursive=True))
            if not matches:
                out.append(InputProblem(name, "no_match", "no file matches this pattern"))
            for m in matches:
                if os.path.isdir(m):
                    _directory(Path(m), add, out)
                else:
                    add(Path(m))
            continue
        if name != "-" and os.path.isdir(name):
            _directory(p, add, out)
            continue
        problem = readable(name)
        if problem is not None:
            out.append(problem)
        else:
            add(p)
    return out


def _directory(d: Path, add, out: list[Path | InputProblem]) -> None:
    found = []
    for root, dirs, files in os.walk(d, onerror=None):
        dirs.sort()
        found += [Path(root) / f for f in files if is_capture_name(f)]
    found.sort(key=lambda p: str(p))
    if not found:
        out.append(InputProblem(str(d), "no_captures", "a directory with no capture file in it "
                                "(*.pcap, *.pcapng, *.cap, optionally .gz)"))
    for f in found:
        problem = readable(str(f))
        if problem is not None:
            out.append(problem)
        else:
            add(f)


def readable(name: str) -> InputProblem | None:
    """None when `name` is '-' or a file that can be opened for reading, else the problem."""
    if name == "-":
        return None
    try:
        st = os.stat(name)
    except FileNotFoundError:
        return InputProblem(name, "no_such_file", "no such file")
    except PermissionError:
        return InputProblem(name, "permission_denied", "permission denied")
    except OSError as e:
        return InputProblem(name, "no_such_file", e.strerror or str(e))
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISFIFO(st.st_mode) and not stat.S_ISCHR(st.st_mode):
        return InputProblem(name, "not_a_file", "not a regular file")
    if not stat.S_ISREG(st.st_mode):
        return None  # a pipe (<(zcat x.gz)) or a device: opening it here would block or consume it
    try:
        with open(name, "rb"):
            pass
    except PermissionError:
        return InputProblem(name, "permission_denied", "permission denied")
    except OSError as e:
        return InputProblem(name, "permission_denied", e.strerror or str(e))
    return None
