"""What every command shares at its edges: the error and exit wrapper, input path checks, the
console a table is printed on, and the progress display.

`guarded(name, fn)` wraps each command's function (stallscope.cli.app applies it to every command,
so no command carries its own copy):

- a reader that closes the output pipe early (`stallscope flows -f json x.pcap | head`) ends the
  command quietly with status 141 (128 + SIGPIPE, what a shell reports for `yes | head`);
- a write that fails on a real file (`-o /dev/full`, a directory that does not exist) is an
  environment error (5) naming the path;
- a missing, directory or unreadable input path is told as such, with the path, before any byte of
  any input is read (4, the status of an input that cannot be used);
- anything else is an internal error (70) with one line on stderr, unless `--debug` (or
  STALLSCOPE_DEBUG=1) is given, which re-raises it with its traceback.
"""

from __future__ import annotations

import errno
import functools
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import typer

from stallscope.exit_codes import ExitCode
from stallscope.output import PIPE_WIDTH, table_console as console, write_parquet  # noqa: F401  (re-exported)

# Parameters holding input paths that must exist and be readable before the command starts.
INPUT_PARAMETERS = ("files", "file", "source", "truth")


class InputPathError(Exception):
    """An input path that cannot be read at all: missing, a directory, no permission."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path, self.problem = str(path), problem


def say(command: str, message: str) -> None:
    """One line on standard error, prefixed with the command's name."""
    try:
        print(f"stallscope {command}: {message}" if command else f"stallscope: {message}", file=sys.stderr,
              flush=True)
    except OSError:  # stderr gone too: nothing left to tell
        pass


def check_input(path: Path | str) -> None:
    """Raise InputPathError unless `path` is '-' (standard input) or a readable non-directory."""
    p = Path(path)
    if str(path) == "-":
        return
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputPathError(path, "no such file") from None
    except NotADirectoryError:
        raise InputPathError(path, "no such file (a parent is not a directory)") from None
    except PermissionError:
        raise InputPathError(path, "permission denied") from None
    except OSError as e:
        raise InputPathError(path, e.strerror or str(e)) from None
    import stat

    if stat.S_ISDIR(st.st_mode):
        raise InputPathError(path, "is a directory, not a capture file")
    if not os.access(p, os.R_OK):
        raise InputPathError(path, "permission denied")


def own_inputs(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a command that checks its input paths itself (`analyze` in batch mode takes directories
    and globs): `guarded` then leaves them to it."""
    fn.__stallscope_own_inputs__ = True  # type: ignore[attr-defined]
    return fn


def check_inputs(kwargs: dict[str, Any]) -> None:
    for name in INPUT_PARAMETERS:
        value = kwargs.get(name)
        if value is None:
            continue
        for path in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(path, Path):  # `files` is a count in capture live
                check_input(path)


def _quiet_stdout() -> None:
    """After a broken pipe: point standard output at /dev/null, so the interpreter's final flush
    does not raise again ("Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _stdout_is_devnull() -> bool:
    try:
        here, null = os.fstat(sys.stdout.fileno()), os.stat(os.devnull)
    except (OSError, ValueError, AttributeError):
        return False
    return (here.st_dev, here.st_ino, here.st_rdev) == (null.st_dev, null.st_ino, null.st_rdev)


def os_errno(e: BaseException) -> int | None:
    """The errno of an OSError, also from native writers that raise a bare OSError with the errno
    only in the message: Polars "(os error 32)", PyArrow "[errno 28]"."""
    if isinstance(e, OSError) and e.errno is not None:
        return e.errno
    import re

    m = re.search(r"(?:\(os error|\[errno) (\d+)", str(e))
    return int(m.group(1)) if m else None


def is_broken_pipe(e: BaseException) -> bool:
    return isinstance(e, BrokenPipeError) or (isinstance(e, OSError) and os_errno(e) == errno.EPIPE)


def broken_pipe_exit() -> typer.Exit:
    _quiet_stdout()
    return typer.Exit(int(ExitCode.BROKEN_PIPE))


def flush_stdout() -> None:
    """Flush standard output inside the command, where a failure can still be classified."""
    sys.stdout.flush()


def guarded(command: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with the shared error handling above; its signature (Typer reads it) is kept."""
    if getattr(fn, "__stallscope_guarded__", False):
        return fn

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        debug = bool(kwargs.get("debug")) or os.environ.get("STALLSCOPE_DEBUG") == "1"
        try:
            if not getattr(fn, "__stallscope_own_inputs__", False):
                check_inputs(kwargs)
            result = fn(*args, **kwargs)
            flush_stdout()
            return result
        except (typer.Exit, typer.Abort, KeyboardInterrupt, SystemExit):
            _flush_or_classify(command)
            raise
        except InputPathError as e:
            say(command, f"{e.path}: {e.problem}")
            raise typer.Exit(int(ExitCode.INPUT_REJECTED)) from None
        except OSError as e:
            if is_broken_pipe(e):
                raise broken_pipe_exit() from None
            target = _write_target(e, kwargs)
            if target is not None:
                say(command, f"cannot write {target}: {_reason(e)}")
                raise typer.Exit(int(ExitCode.ENVIRONMENT)) from None
            if debug:
                raise
            say(command, "internal error; rerun with --debug for the traceback")
            raise typer.Exit(int(ExitCode.INTERNAL)) from None
        except Exception as e:
            if _is_click_exception(e) or debug:
                raise
            say(command, "internal error; rerun with --debug for the traceback")
            raise typer.Exit(int(ExitCode.INTERNAL)) from None

    run.__stallscope_guarded__ = True  # type: ignore[attr-defined]
    return run


def _reason(e: OSError) -> str:
    """The system's words for the error ("No space left on device"), also for writers (PyArrow)
    whose message wraps them in their own."""
    code = os_errno(e)
    if code is not None:
        return os.strerror(code)
    return e.strerror or str(e)


def _is_click_exception(e: Exception) -> bool:
    """Usage errors (typer.BadParameter, ...) keep Click's own message and status 2."""
    return isinstance(e, (typer.BadParameter, typer.Exit)) or type(e).__module__.startswith(("click", "typer"))


def _flush_or_classify(command: str) -> None:
    """A command that ends by raising Exit still has buffered output: flush it here, so a closed
    pipe or a full disk is reported as such (and not as a traceback at interpreter exit)."""
    try:
        sys.stdout.flush()
    except OSError as e:
        if is_broken_pipe(e):
            raise broken_pipe_exit() from None
        say(command, f"cannot write standard output: {_reason(e)}")
        _quiet_stdout()
        raise typer.Exit(int(ExitCode.ENVIRONMENT)) from None


_OUTPUT_PARAMETERS = ("output", "packets", "pcap", "write", "out")


def _write_target(e: OSError, kwargs: dict[str, Any]) -> str | None:
    """The path a failed write went to: the error's filename when it is one of the command's
    output options, else (for errors only a write gives: disk full, read-only, I/O) that option or
    standard output. None when the error is not a failed write."""
    outputs = [str(kwargs[n]) for n in _OUTPUT_PARAMETERS if isinstance(kwargs.get(n), Path)]
    if e.filename is not None and str(e.filename) in outputs:
        return str(e.filename)
    if os_errno(e) in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO):
        return str(e.filename) if e.filename is not None else outputs[0] if outputs else "standard output"
    return None


def stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (ValueError, AttributeError):
        return False


def progress_wanted(quiet: bool) -> bool:
    """A progress display only on a terminal's standard error, and not with --quiet."""
    if quiet or os.environ.get("STALLSCOPE_QUIET") == "1":
        return False
    try:
        return sys.stderr.isatty()
    except (ValueError, AttributeError):
        return False


# An input at least this large gets a progress display of its own (its analysis takes seconds).
LARGE_INPUT = 64 << 20


def _size(label: Any) -> int:
    """Bytes of an input: a file, or a set's files joined by '+' (CaptureInput.label)."""
    total = 0
    for part in str(label).split("+"):
        try:
            total += os.stat(part).st_size
        except OSError:
            pass
    return total


@contextmanager
def spinner(message: str, quiet: bool) -> Iterator[None]:
    """A Rich status line with elapsed time on stderr while one long step runs (a reproduction, a
    capture scenario); nothing off a terminal or with --quiet."""
    if not progress_wanted(quiet):
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        bar.add_task(message, total=None)
        yield


@contextmanager
def file_progress(paths: list[Any], quiet: bool, label: str = "files",
                  one_large: bool = False) -> Iterator[Callable[[Any], None]]:
    """A bar over several input files: yields `advance(path)` to call after each. Shown only for
    two or more files; one file gets its own byte bar where the reader offers one, or with
    `one_large` a spinner when it is large (LARGE_INPUT bytes or more)."""
    if len(paths) < 2 or not progress_wanted(quiet):
        if one_large and len(paths) == 1 and progress_wanted(quiet) and _size(paths[0]) >= LARGE_INPUT:
            with spinner(f"{label}: {Path(str(paths[0]).split('+')[0]).name}", quiet):
                yield lambda _path: None
            return
        yield lambda _path: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=len(paths))

        def advance(path: Path) -> None:
            bar.update(task, advance=1, description=f"{label}: {Path(path).name}")

        yield advance


class BrokenPipeWatch:
    """Around the whole app (stallscope.cli.app.main): Click answers a closed pipe outside any
    command (help text into `| head`) by wrapping stdout and exiting 1; that, and a failure of the
    final flush, become the same statuses the commands use (141 for a closed pipe, 5 for a write
    error) with nothing on stderr for the pipe."""

    def __enter__(self) -> BrokenPipeWatch:
        self.stdout_was_devnull = _stdout_is_devnull()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> bool:
        if kind is not None and not issubclass(kind, SystemExit):
            if error is not None and is_broken_pipe(error):
                _quiet_stdout()
                raise SystemExit(int(ExitCode.BROKEN_PIPE)) from None
            return False
        code = error.code if isinstance(error, SystemExit) else 0
        # Click wraps stdout when it meets EPIPE; Rich (Console.on_broken_pipe) points stdout at
        # /dev/null and exits 1: either way the reader went away.
        if type(sys.stdout).__name__ == "PacifyFlushWrapper" or (
            code not in (0, None) and not self.stdout_was_devnull and _stdout_is_devnull()
        ):
            _quiet_stdout()
            raise SystemExit(int(ExitCode.BROKEN_PIPE))
        try:
            sys.stdout.flush()
        except OSError as e:
            _quiet_stdout()
            if is_broken_pipe(e):
                raise SystemExit(int(ExitCode.BROKEN_PIPE)) from None
            say("", f"cannot write standard output: {_reason(e)}")
            raise SystemExit(int(ExitCode.ENVIRONMENT)) from None
        if kind is None:
            return False
        raise SystemExit(code)



# --- several files that are one capture ---------------------------------------------------------


class CaptureInput:
    """One capture as the commands see it: one file, or several files that are one capture (a
    rotated set, or every file with --as-one). `label` names it in the output: the file, or the
    set's files joined by '+' in the order they were written."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.label = "+".join(str(p) for p in paths)

    def __repr__(self) -> str:
        return f"CaptureInput({self.label!r})"

    @contextmanager
    def path(self) -> Iterator[Path]:
        """A path to read: the file itself, or a temporary file holding the set as one capture
        (stallscope.packets.decoder.join_captures), removed afterwards."""
        if len(self.paths) == 1:
            yield self.paths[0]
            return
        import tempfile

        from stallscope.packets.decoder import CaptureSetError, join_captures

        with tempfile.TemporaryDirectory(prefix="stallscope-") as tmp:
            suffix = ".pcapng" if _is_pcapng(self.paths[0]) else ".pcap"
            try:
                joined = join_captures(self.paths, Path(tmp) / f"joined{suffix}")
            except CaptureSetError as e:
                raise InputPathError(self.label, str(e).split(": ", 1)[-1]) from None
            yield joined


def _is_pcapng(path: Path) -> bool:
    import gzip

    with open(path, "rb") as f:
        head = f.read(4)
    if head[:2] == b"\x1f\x8b":
        with gzip.open(path, "rb") as g:
            head = g.read(4)
    return head == b"\x0a\x0d\x0d\x0a"


def capture_inputs(files: list[Path], *, as_one: bool = False, each: bool = False) -> list[CaptureInput]:
    """The captures named on the command line: rotated sets recognised by name read as one (see
    stallscope.packets.decoder.rotation_groups), every file as one with `as_one`, each file on its
    own with `each`. Standard input ('-') is always a capture of its own."""
    if as_one and each:
        raise typer.BadParameter("--as-one and --each exclude each other", param_hint="--as-one")
    if len(files) < 2 or each:
        return [CaptureInput([f]) for f in files]
    from stallscope.packets.decoder import rotation_groups, written_order

    if as_one:
        if any(str(f) == "-" for f in files):
            raise typer.BadParameter("standard input cannot be part of --as-one", param_hint="--as-one")
        return [CaptureInput(written_order(list(dict.fromkeys(files))))]
    plain = [f for f in files if str(f) != "-"]
    member_of = {p: g for g in rotation_groups(plain) for p in g}
    out: list[CaptureInput] = []
    done: list[list[Path]] = []
    for f in files:
        if str(f) == "-":
            out.append(CaptureInput([f]))
            continue
        g = member_of[f]
        if any(g is d for d in done):
            continue
        done.append(g)
        out.append(CaptureInput(written_order(g) if len(g) > 1 else g))
    return out


def joined_container_facts(path: Path, result: Any) -> dict[str, Any]:
    """The container facts the HTML report shows (link type, snaplen, interfaces) for a joined
    set, read while its temporary file exists; the report would otherwise re-read `result.path`,
    which names the set's files."""
    if result.status == "rejected":
        return {}
    from stallscope.analyzers.report.document import capture_facts

    return capture_facts(str(path))


def _analyze_input(job: tuple[CaptureInput, int | None, bool]) -> Any:
    """One capture's analysis in a worker process (analyze_captures with jobs > 1); the per-packet
    table stays behind unless asked for, since it is most of what would cross back."""
    from stallscope.analyzers.analyze import analyze_one

    inp, stream, keep_state = job
    with inp.path() as readable:
        result = analyze_one(readable, stream=stream)
    result.path = inp.label
    if not keep_state:
        result.core_state = result.endpoints = None
    return result


def analyze_captures(command: str, files: list[Path], *, as_one: bool, each: bool, stream: int | None, quiet: bool,
                     container_facts: bool, jobs: int = 1, keep_state: bool = True
                     ) -> tuple[list[Any], list[dict[str, Any] | None], ExitCode]:
    """Analyze every capture named on the command line (`analyze`, `report`, `check`): the per-file
    analyses, the container facts of joined sets (with `container_facts`, for the HTML report) and
    the exit status; damaged, rejected and empty inputs are told on standard error as they come.
    `jobs` > 1 analyses the captures in that many spawned worker processes, in order."""
    from stallscope.analyzers.analyze import analyze_one

    code = ExitCode.OK
    results: list[Any] = []
    containers: list[dict[str, Any] | None] = []
    inputs = capture_inputs(files, as_one=as_one, each=each)
    pool = None
    if jobs > 1 and len(inputs) > 1 and not container_facts:
        import multiprocessing

        # Spawned, not forked: a fork after Polars started its thread pool can deadlock the child.
        pool = multiprocessing.get_context("spawn").Pool(min(jobs, len(inputs)))
        done = pool.imap(_analyze_input, [(inp, stream, keep_state) for inp in inputs])
    with file_progress([i.label for i in inputs], quiet, command, one_large=True) as advance:
        for inp in inputs:
            path = inp.label
            if pool is not None:
                result = next(done)
                containers.append(None)
            else:
                with inp.path() as readable:
                    result = analyze_one(readable, stream=stream)
                    # The report reads the container's facts from the file: a joined set's while it exists.
                    joined = container_facts and len(inp.paths) > 1
                    containers.append(joined_container_facts(readable, result) if joined else None)
            result.path = path
            results.append(result)
            advance(path)
            if result.status == "rejected":
                say(command, f"{path}: rejected: {result.error['message']}")
                code = ExitCode.INPUT_REJECTED
            elif result.status == "damaged":
                say(command, f"{path}: damaged at byte {result.error['offset']}: {result.error['message']}")
                if code is ExitCode.OK:
                    code = ExitCode.INPUT_DAMAGED
            elif not result.connections:
                say(command, f"{path}: no TCP connection to analyze")
    if pool is not None:
        pool.close()
        pool.join()
    return results, containers, code
