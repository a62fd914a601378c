"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "469c3442700a091e10890f1ce1b596743ec89954890b28643672bc6f0eb082c4"
