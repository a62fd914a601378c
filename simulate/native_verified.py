"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "4c84adb0daddc229d2690feec659b85c31e6c88294f0609e8c960ed404ca10c4"
