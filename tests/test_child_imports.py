"""A child process started by stallscope imports the installed package, never a `stallscope/`
folder in the working directory (a checkout's holds only the CLI: with a regular install the
emulator's child used to import it and fail from the repository root)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from stallscope.capture.scenarios.runner import child_argv

SHADOW = 'raise ImportError("imported the stallscope/ folder of the working directory")\n'


def _shadowed(tmp_path: Path) -> Path:
    (tmp_path / "stallscope").mkdir()
    (tmp_path / "stallscope" / "__init__.py").write_text(SHADOW)
    return tmp_path


def test_child_ignores_a_stallscope_folder_in_its_working_directory(tmp_path: Path) -> None:
    cwd = _shadowed(tmp_path)
    done = subprocess.run(child_argv("stallscope.exit_codes"), cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_without_the_guard_the_folder_would_win(tmp_path: Path) -> None:
    """The check above can fail: the same child without -P imports the shadowing folder."""
    cwd = _shadowed(tmp_path)
    argv = [a for a in child_argv("stallscope.exit_codes") if a != "-P"]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "working directory" in done.stderr
