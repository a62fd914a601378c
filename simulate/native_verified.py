"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "a14881c16ea8b360add32b519c4e4525e063151e2ec9cc1e305cebdd3d180a21"
