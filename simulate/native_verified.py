"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "c19442b2da5e8f9e013bcec8fd10aeb2cfb804472ba35071836d9fbf2c05f1d1"
