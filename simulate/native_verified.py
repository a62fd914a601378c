"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "f689e27b16be908464be2ee1c19673f31dd7a5abd3f6acde9eecd15989fa6c92"
