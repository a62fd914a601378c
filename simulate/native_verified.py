"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "41d9f4d0386fcd4431cda7a28439ad595d53aa9bc5c5e21e578ed0c175b45d34"
