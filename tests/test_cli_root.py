"""The root of the CLI: version and help."""

from typer.testing import CliRunner

from stallscope import __version__
from stallscope.cli.app import app


def test_version_prints_package_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"stallscope {__version__}"
