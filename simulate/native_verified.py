"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "c800cc23857f4f4c7fb01b664cdc9ab013f2db2dc6fbc1fcc6765f0795385fa1"
