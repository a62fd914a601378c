"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "9613e7aecfffdc3d4ec91ae805f74f0192fbda2d2e16c7c3e28ad12c1bea7a8b"
