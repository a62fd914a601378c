"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "eb641b52c9f70519abbdd1de554e71c7381765fd9362e724659e057750017885"
