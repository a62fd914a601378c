"""Workloads run inside the namespaces as subprocesses: `python -m stallscope.capture.workloads.NAME ROLE SPEC_JSON`.

Servers print "ready" once listening; every role prints its result as one JSON line at the end.
"""
