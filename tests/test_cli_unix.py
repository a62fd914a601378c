"""The command line as a Unix tool (issue 19), run through the installed console script: a closed
output pipe, a full disk, help text, piped tables, input paths, progress on a terminal only, and
dependencies that match imports. The JSON documents are in test_cli_json_schemas.py."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from stallscope.exit_codes import ExitCode
from terminal import stderr_on_a_terminal

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "fixtures"
CLEAN = FIX / "clean_bulk.pcap"
NAGLE = FIX / "nagle_4k_jumbo.pcap"
NAGLE_TRUTH = FIX / "nagle_4k_jumbo.json"
EXE = shutil.which("stallscope")


def _exe() -> str:
    assert EXE, "the stallscope console script is not on PATH (make setup installs it)"
    return EXE


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([_exe(), *args], capture_output=True, text=True, timeout=300, cwd=REPO, **kw)


def run_into_closed_pipe(*args: str) -> subprocess.CompletedProcess:
    """Standard output is a pipe whose reader has already gone (`| head` that has finished)."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([_exe(), *args], stdout=w, stderr=subprocess.PIPE, text=True, timeout=300, cwd=REPO)
    finally:
        os.close(w)


# Every command that writes to standard output, in each of its formats.
OUTPUTS = [
    ["--help"],
    ["--version"],
    ["analyze", "--help"],
    *[["analyze", "-f", f, str(CLEAN)] for f in ("table", "json", "csv", "markdown")],
    *[["flows", "-f", f, str(CLEAN)] for f in ("table", "json", "csv")],
    *[["decode", "-f", f, str(CLEAN)] for f in ("table", "json", "csv")],
    *[["simulate", "bulk", "--bytes", "100000", "-f", f] for f in ("table", "json")],
    *[["simulate", "naglemark", "--responses", "20", "-f", f] for f in ("table", "json")],
    *[["reproduce", "--list", "-f", f] for f in ("table", "json")],
    *[["capture", "list", "-f", f] for f in ("table", "json", "csv")],
    *[["score", "-f", f, str(NAGLE), str(NAGLE_TRUTH)] for f in ("table", "json")],
    ["report", str(CLEAN), "-o", "/dev/null"],
]


@pytest.mark.parametrize("args", OUTPUTS, ids=" ".join)
def test_closed_pipe_ends_quietly_with_141(args: list[str]) -> None:
    r = run_into_closed_pipe(*args)
    assert r.returncode == ExitCode.BROKEN_PIPE == 141
    assert r.stderr == ""


def test_head_in_a_shell_pipeline_is_quiet() -> None:
    """The issue's own case: the reader may go before or after the last write, so 0 or 141."""
    r = subprocess.run(f"'{_exe()}' flows -f json {CLEAN} | head -c 200 >/dev/null; echo ${{PIPESTATUS[0]}}",
                       shell=True, executable="/bin/bash", capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.stderr == ""
    assert int(r.stdout.strip()) in (0, 141)


WRITERS = [
    ["analyze", str(CLEAN)], ["analyze", "-f", "json", str(CLEAN)], ["flows", "-f", "csv", str(CLEAN)],
    ["flows", "-f", "parquet", str(CLEAN)], ["decode", "-f", "json", str(CLEAN)], ["decode", "-f", "parquet", str(CLEAN)],
    ["simulate", "bulk", "--bytes", "100000"], ["simulate", "naglemark", "--responses", "20", "-f", "json"],
    ["reproduce", "--list", "-f", "json"], ["capture", "list"], ["score", str(NAGLE), str(NAGLE_TRUTH)],
    ["report", str(CLEAN)],
]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", WRITERS, ids=" ".join)
def test_output_to_a_full_device_is_an_environment_error_naming_it(args: list[str]) -> None:
    r = run(*args, "-o", "/dev/full")
    assert r.returncode == ExitCode.ENVIRONMENT
    assert r.stderr.splitlines() == [r.stderr.strip()] and "cannot write /dev/full: No space left on device" in r.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_standard_output_on_a_full_device() -> None:
    with open("/dev/full", "w") as full:
        r = subprocess.run([_exe(), "flows", "-f", "json", str(CLEAN)], stdout=full, stderr=subprocess.PIPE,
                           text=True, cwd=REPO, timeout=120)
    assert r.returncode == ExitCode.ENVIRONMENT
    assert r.stderr.strip() == "stallscope flows: cannot write standard output: No space left on device"


def _leaf_commands() -> list[list[str]]:
    from stallscope.cli.app import _COMMANDS, load_command

    leaves = []
    for name in _COMMANDS:
        command = load_command(name)
        subs = getattr(command, "commands", None)
        if subs:
            leaves += [[name, sub] for sub in subs]
        else:
            leaves.append([name])
    return leaves


LEAVES = _leaf_commands()


@pytest.mark.parametrize("args", [[]] + LEAVES, ids=lambda a: " ".join(a) or "root")
def test_help_has_no_value_metavar_on_flags_and_shows_examples(args: list[str]) -> None:
    r = run(*args, "--help")
    assert r.returncode == 0 and r.stderr == ""
    assert "<bool>" not in r.stdout
    if args:
        assert "Examples:" in r.stdout and f"stallscope {' '.join(args)}" in " ".join(r.stdout.split())


def test_group_help_has_no_bool_metavar() -> None:
    for group in ("simulate", "capture"):
        r = run(group, "--help")
        assert r.returncode == 0 and "<bool>" not in r.stdout


@pytest.mark.slow  # every example runs as its own process: make test-slow
def test_every_example_in_help_runs_as_written(tmp_path: Path) -> None:
    """The examples that need neither root nor minutes: copied to a scratch directory beside the
    fixtures, each must exit 0."""
    from stallscope.cli.app import EXAMPLES

    (tmp_path / "fixtures").symlink_to(FIX)
    quick = [line for lines in EXAMPLES.values() for line in lines
             if not line.startswith("sudo") and "reproduce kung-morris" not in line and "--preset gigatcp" not in line]
    assert len(quick) >= 10
    for line in quick:
        r = subprocess.run(line.replace("stallscope", f"'{_exe()}'", 1), shell=True, cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, (line, r.stderr)


def _table_body(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("│")]


def test_piped_capture_list_keeps_every_cell_whole() -> None:
    from stallscope.capture.scenarios.library import SCENARIOS

    r = run("capture", "list")
    assert r.returncode == 0 and r.stderr == ""
    body = _table_body(r.stdout)
    assert len(body) == len(SCENARIOS)  # one line per scenario: nothing folded onto a second line
    for line, s in zip(body, SCENARIOS.values()):
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells[0] == s.name and cells[3] == s.description


def test_piped_reproduce_list_keeps_every_cell_whole() -> None:
    from stallscope.simulate.reproductions import REPRODUCTIONS

    r = run("reproduce", "--list")
    assert r.returncode == 0 and r.stderr == ""
    body = _table_body(r.stdout)
    assert [[c.strip() for c in ln.strip("│").split("│")] for ln in body] == [
        [e.name, e.title] for e in REPRODUCTIONS.values()]


@pytest.mark.parametrize("command", [["analyze"], ["flows"], ["decode"], ["report"]], ids=" ".join)
def test_missing_path_is_told_as_such_before_anything_is_read(command: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.pcap"
    args = [*command, str(missing)] if command == ["decode"] else [*command, str(CLEAN), str(missing)]
    r = run(*args)
    assert r.returncode == ExitCode.INPUT_REJECTED
    assert r.stdout == ""  # the good file before it was not read either
    assert r.stderr.strip() == f"stallscope {command[0]}: {missing}: no such file"
    assert "byte" not in r.stderr


@pytest.mark.parametrize("command", [["analyze"], ["flows"], ["decode"]], ids=" ".join)
def test_directory_is_told_as_such(command: list[str], tmp_path: Path) -> None:
    r = run(*command, str(tmp_path))
    assert r.returncode == ExitCode.INPUT_REJECTED and r.stdout == ""
    assert r.stderr.strip() == f"stallscope {command[0]}: {tmp_path}: is a directory, not a capture file"


def test_score_missing_truth_names_it(tmp_path: Path) -> None:
    r = run("score", str(NAGLE), str(tmp_path / "truth.json"))
    assert r.returncode == ExitCode.INPUT_REJECTED
    assert r.stderr.strip() == f"stallscope score: {tmp_path / 'truth.json'}: no such file"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file: no permission error to provoke")
def test_unreadable_path_is_told_as_such(tmp_path: Path) -> None:
    locked = tmp_path / "locked.pcap"
    locked.write_bytes(CLEAN.read_bytes())
    locked.chmod(0)
    r = run("flows", str(locked))
    assert r.returncode == ExitCode.INPUT_REJECTED
    assert r.stderr.strip() == f"stallscope flows: {locked}: permission denied"


def _stderr_on_a_terminal(args: list[str], command: list[str] | None = None) -> tuple[int, bytes]:
    """Run `command` (the installed stallscope) with standard error on a pseudo-terminal (standard
    output discarded); what it showed."""
    return stderr_on_a_terminal([*(command or [_exe()]), *args], cwd=REPO)


MANY = [str(FIX / n) for n in ("atm_clean.pcap", "clean_bulk.pcap", "burst_loss.pcap", "nagle_4k_jumbo.pcap")]


def test_progress_bar_on_a_terminal_only_and_not_with_quiet() -> None:
    code, shown = _stderr_on_a_terminal(["analyze", *MANY])
    assert code == 0
    assert b"analyze" in shown and "━".encode() in shown and b"/4" in shown  # the bar, files done of 4
    code, shown = _stderr_on_a_terminal(["analyze", "--quiet", *MANY])
    assert code == 0 and shown == b""
    piped = run("analyze", *MANY)
    assert piped.returncode == 0 and piped.stderr == ""


def test_corpus_generation_shows_a_bar_on_a_terminal_only(tmp_path: Path) -> None:
    corpus = [sys.executable, "-P", "-m", "stallscope.analyzers.corpus"]
    args = [str(tmp_path / "c"), "--small", "--only", "bulk-linux-atm140", "-j", "1"]
    code, shown = _stderr_on_a_terminal(args, corpus)
    assert code == 0 and b"corpus" in shown and "━".encode() in shown
    code, shown = _stderr_on_a_terminal([*args, "--quiet"], corpus)
    assert code == 0 and "━".encode() not in shown and b"1 traces" in shown  # the closing summary only


def test_reproduction_shows_a_spinner_on_a_terminal() -> None:
    code, shown = _stderr_on_a_terminal(["reproduce", "moldeklev-appendix-a"])
    assert code == 0 and b"reproducing moldeklev-appendix-a" in shown
    assert run("reproduce", "moldeklev-appendix-a").stderr == ""


# --- dependencies -------------------------------------------------------------------------------

# Distribution name -> the import name it provides, where they differ.
IMPORT_NAMES = {"pyyaml": "yaml", "pillow": "PIL"}
SOURCES = ["stallscope", "analyzers", "packets", "capture", "simulate"]


def _declared() -> set[str]:
    """Import names of the dependencies and the optional extras (an extra such as
    "dask[distributed]" declares the package its bracket names); the test extra is not code's."""
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    reqs = list(meta["project"]["dependencies"])
    group_of = {r: "dependencies" for r in reqs}
    for group, extra in meta["project"].get("optional-dependencies", {}).items():
        if group != "test":
            reqs += extra
    names = set()
    for req in reqs:
        dist = re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].strip().lower()
        bracket = re.search(r"\[([^\]]*)\]", req) if group_of.get(req) != "dependencies" else None
        if bracket:  # "dask[distributed]": the code imports what the bracket names
            names |= {b.strip().replace("-", "_") for b in bracket.group(1).split(",")}
        else:
            names.add(IMPORT_NAMES.get(dist, dist.replace("-", "_")))
    return names


def _imported() -> set[str]:
    found = set()
    for folder in SOURCES:
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    found |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "stallscope"}


def test_declared_dependencies_are_exactly_the_imported_ones() -> None:
    declared, imported = _declared(), _imported()
    assert imported - declared == set(), "imported but not declared in pyproject.toml"
    assert declared - imported == set(), "declared in pyproject.toml but imported nowhere"


def _readme_examples() -> dict[str, str]:
    """README's command table: command (first column) -> its example (second column)."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Commands"):text.index("## Layout")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) >= 2 and cells[1].startswith("`") and "stallscope" in cells[1]:
            rows[cells[0].strip("`")] = cells[1].strip("`")
    return rows


@pytest.mark.slow  # every example runs as its own process: make test-slow
def test_readme_lists_every_command_with_an_example_that_runs_as_written(tmp_path: Path) -> None:
    from stallscope.cli.app import _COMMANDS

    examples = _readme_examples()
    for name in _COMMANDS:
        assert any(row.split()[0] == name for row in examples), f"README's command table lacks {name}"
    (tmp_path / "fixtures").symlink_to(FIX)
    for row, line in examples.items():
        assert line.startswith(("stallscope ", "sudo stallscope ")), row
        if line.startswith("sudo"):
            continue  # needs root and network namespaces (tests/test_capture_cli_scenario.py, test_capture_live.py)
        r = subprocess.run(line.replace("stallscope", f"'{_exe()}'", 1), shell=True, cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, (line, r.stderr)


def test_piped_reproduction_table_has_one_line_per_row() -> None:
    """The issue's case: `reproduce kung-morris | cat` put one short word per line in its notes."""
    import json

    table = run("reproduce", "kung-morris")
    rows = json.loads(run("reproduce", "kung-morris", "-f", "json").stdout)["rows"]
    assert table.stderr == ""
    body = _table_body(table.stdout)
    assert len(body) == len(rows)
    for line, row in zip(body, rows):
        assert [c.strip() for c in line.strip("│").split("│")][-2] == str(row["paper"])


def test_a_closed_pipe_ends_the_process_without_the_interpreters_teardown(monkeypatch) -> None:
    """After a broken pipe the console script leaves by os._exit(141): the interpreter's teardown
    could destroy Arrow's C++ thread pools under a worker still busy with the decoder's batches
    (std::terminate, SIGABRT: seen once in four fresh-clone CI runs for `decode -f csv` into a
    closed pipe; apache/arrow#34314). Other statuses leave the normal way, by SystemExit."""
    from stallscope.cli import app as app_module

    class Left(Exception):
        pass

    def leave(code):
        raise Left(code)

    monkeypatch.setattr(app_module.os, "_exit", leave)
    def command_ending(code):
        def command():
            raise SystemExit(code)  # as Typer's standalone mode ends a command
        return command

    monkeypatch.setattr(app_module, "app", command_ending(141))
    with pytest.raises(Left) as left:
        app_module.main()
    assert left.value.args == (141,)
    monkeypatch.setattr(app_module, "app", command_ending(3))
    with pytest.raises(SystemExit) as ended:
        app_module.main()
    assert ended.value.code == 3
