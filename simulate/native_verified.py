"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "de617b4ce457a894c7a1d9f7db60dd9bca98cf250d72141c9229c98ed8a3e9b4"
