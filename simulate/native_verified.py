"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "73e51653efae87011209de9e7e3fa6567b1b771ce2fbf2be5cbf81d5ef224947"
