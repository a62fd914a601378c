"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "86753c0b2690b4896291cf169cd7c6bee5e677f464157fb0b14a641c4ca8b53f"
