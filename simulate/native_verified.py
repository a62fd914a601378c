"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "87c15011819307d58139c5dca85032f760f7047f0fbd7dd497937223fba4642a"
