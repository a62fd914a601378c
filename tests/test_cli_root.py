"""The root of the CLI: version and help."""

from typer.testing import CliRunner

from stallscope import __version__
from stallscope.cli.app import app


def test_version_prints_package_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"stallscope {__version__}"


def test_help_lists_every_command_and_an_unknown_one_is_a_usage_error():
    runner = CliRunner()
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in ("flows", "decode", "simulate", "reproduce", "capture"):
        assert name in result.output
    assert runner.invoke(app, ["no-such-command"]).exit_code == 2


def test_a_command_is_imported_only_when_invoked():
    """`stallscope flows` must not pay for the parquet writer or the simulator (start-up time)."""
    import subprocess
    import sys

    code = (
        "import sys; from stallscope.cli.app import load_command; load_command('flows'); "
        "print(sorted(m for m in ('pyarrow', 'stallscope.simulate.run_bulk', 'stallscope.capture.emulator') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]"


def test_python_m_stallscope_is_the_command(tmp_path):
    """`python -m stallscope` runs the same CLI (run from elsewhere than the checkout, so the
    installed package is the one imported)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "stallscope", "--version"], cwd=tmp_path, capture_output=True,
                         text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"stallscope {__version__}"
