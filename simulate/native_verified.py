"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "e759a16ba47f80ea83ebe57e8692d741744a762054d81846a630d5832df13458"
