"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "7e0cf9161246916f81098d5034e43417f9e27b088e4af3e85d2f34a95b110f72"
