"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "0a149b35ecb31bb58e76e8bf32f424d4262554932e631edd44fd43449a4d1de8"
