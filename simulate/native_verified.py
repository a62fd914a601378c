"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "5f387392de77d11add30fd5cb10b2ddc16f61bf02ed9181731308be86f03aefe"
