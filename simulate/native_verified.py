"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "deb12640819111d79e33a5db9035fd285a7d15286ac6fb0d5e2000ead74d2fb9"
