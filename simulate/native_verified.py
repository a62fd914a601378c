"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "2a4f5ca7a9e4e783dda899c48eaee27f1b4c679eea31b5173bfa26d2ad7b7a7a"
