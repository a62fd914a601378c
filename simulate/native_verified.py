"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "2df5fe8ba38a497d437b29852bbaaf4bc763458b48cd2a61c27c33f145f486db"
