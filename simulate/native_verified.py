"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "a6f069001560c7e1cefa459b9c4c10058c0bfbc1be4f1e6eec87494eabb5828f"
