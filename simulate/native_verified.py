"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "43b606ca23767d34ca63e41ed2a62eb8901b9402e4bbb37ac14ea549167e347c"
