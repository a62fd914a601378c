"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "2843789a32f058321a20e70d49436cbabc38409ad1b57ccf027960a1b7a9b255"
