"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "8e9f3a87d41848d8c3aab0419dc9a66dc5fe4caac79fa05188018ed67b2d4771"
