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


def test_the_checkouts_folder_hands_over_to_an_installed_package(tmp_path: Path) -> None:
    """`python -m stallscope.analyzers.corpus` from a checkout's root with a regular install: the
    working directory's stallscope/ (the checkout's, which holds only the CLI's part) is imported
    first, and must hand the rest over to the installed package's folder."""
    import shutil
    import sys

    import stallscope

    checkout = tmp_path / "checkout"
    (checkout / "stallscope").mkdir(parents=True)
    shutil.copy(Path(stallscope.__file__).resolve().parents[1] / "stallscope" / "__init__.py",
                checkout / "stallscope" / "__init__.py")
    installed = tmp_path / "site" / "stallscope"
    (installed / "analyzers").mkdir(parents=True)
    (installed / "__init__.py").write_text("")
    (installed / "analyzers" / "__init__.py").write_text("WHERE = 'installed'\n")
    code = "import stallscope.analyzers as a; print(a.WHERE)"  # -S: no site-packages, only these folders
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "installed", done.stderr
    # Without an installed package there is nothing to hand over to: the import fails as before.
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=checkout, env={"PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "stallscope.analyzers" in done.stderr
