"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "7b352a0447e95bb589e13fd3d1729678cc3bb25837ee62b941dfd750e14dffa9"
