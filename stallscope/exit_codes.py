"""Documented process exit codes; the verdict of every command travels in these."""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    # A verdict the user asked about did not hold: a reproduction outside its tolerance,
    # a CI-gate policy violated.
    VERDICT_FAILED = 1
    # Bad command-line usage (Click's own code).
    USAGE = 2
    # A capture was damaged: every whole packet before the damage was decoded and reported,
    # but the file was not fully read.
    INPUT_DAMAGED = 3
    # An input could not be used at all: a path that does not exist, is a directory or cannot be
    # opened (told as such, with the path, before any byte of any input is read), or a file
    # rejected outright (not a capture, unsupported version).
    INPUT_REJECTED = 4
    # The environment cannot run the command (needs root, namespaces, a missing tool) or the
    # result cannot be written (disk full, no such directory); the message names the path.
    ENVIRONMENT = 5
    # A bug in stallscope; rerun with --debug for the traceback.
    INTERNAL = 70
    # Interrupted (Ctrl-C, SIGTERM): the shell's 128 + SIGINT.
    INTERRUPTED = 130
    # The reader of standard output went away (`stallscope ... | head`): the command stops quietly
    # with the status a shell reports for a process ended by SIGPIPE (128 + 13).
    BROKEN_PIPE = 141
