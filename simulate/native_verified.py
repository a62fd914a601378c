"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "c8350d954a5deb611127d8a76ff058502d4c77a8ae0e3d81210e3c675f0445db"
