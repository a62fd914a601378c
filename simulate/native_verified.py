"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "d236b2451156687ba5397043fe7b37340e59a97aecc636f50eeb486c0f9de86b"
