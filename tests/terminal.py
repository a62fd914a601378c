"""Running a command with its standard error on a pseudo-terminal, for the tests of what the CLI shows
a person (progress bars, spinners) and keeps off a pipe."""

from __future__ import annotations

import os
import pty
import select
import subprocess
from pathlib import Path


def stderr_on_a_terminal(argv: list[str], cwd: Path | None = None) -> tuple[int, bytes]:
    """Run `argv` with standard error on a pseudo-terminal (standard output discarded): its exit
    status and what it showed."""
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120")
    env.pop("STALLSCOPE_QUIET", None)
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=slave, cwd=cwd, env=env)
    os.close(slave)
    shown = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            shown += chunk
        elif p.poll() is not None:
            break
    os.close(master)
    return p.wait(timeout=300), shown
