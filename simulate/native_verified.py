"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "2682660311d22837c69e69dd88a998f4556db234110c3e75cda7eac84127c2d8"
