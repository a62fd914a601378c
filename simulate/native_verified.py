"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "2103a0027a1e5dff840c3a6976c7a8b7b599975a0e9f9d85f1686044164a7a1c"
