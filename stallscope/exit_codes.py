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
    # A file was rejected outright: not a capture, unsupported version, unreadable.
    INPUT_REJECTED = 4
    # The environment cannot run the command (needs root, namespaces, a missing tool).
    ENVIRONMENT = 5
    # A bug in stallscope; rerun with --debug for the traceback.
    INTERNAL = 70
