"""Fingerprint of the Python simulator sources the native core was last held identical to
(written by `python -m stallscope.simulate.native_core verify`; see native_core.py)."""

FINGERPRINT = "fb2edae4ad8f028fb9cabdd31c1e26ca76ea4a4e3b16e42116a9851309bafb91"
