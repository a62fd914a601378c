"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "24e2e2493050cc5ebd984fa2c7e6515eb2625e535c1bc4a9dee70dc02eb9cab5"
