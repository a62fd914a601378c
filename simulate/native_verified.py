"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "6457afeb4a553fd22919f160e97d9a672ffd25826fa4afcf71d527b1f416e60a"
