"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "dac4e26f97b324128d8166cf7757f2fa03d03b19cbc3ba6bb72a2f7fac3819fd"
