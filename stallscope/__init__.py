"""stallscope: why a TCP connection was slow, from its packet capture."""

__version__ = "0.1.0"
