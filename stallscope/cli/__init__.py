"""The `stallscope` command line: one Typer app, one file per command."""
