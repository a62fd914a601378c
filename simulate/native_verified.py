"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "fff769daeda967e4c7a3567dd61896dd6a462ebd5578384a0a3e5c2248da9fc4"
