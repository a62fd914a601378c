"""`stallscope flows`: the JSON document against docs/flows-json.md, the other formats, and the
documented exit codes for whole, damaged and rejected files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from stallscope.analyzers.connection_schema import table_schema
from stallscope.exit_codes import ExitCode
from shared_material import PUBLIC

DOC = Path(__file__).resolve().parent.parent / "docs" / "flows-json.md"
GOOD = PUBLIC / "zeek" / "tcp_retransmit-fast009.pcap"
IPV6 = PUBLIC / "zeek" / "communityid_ipv6.pcap"
REJECTED = PUBLIC / "libpcap" / "pcap-invalid-version-1.pcap"

pytestmark = pytest.mark.skipif(not GOOD.exists(), reason=f"public fixtures missing under {PUBLIC}")


def run(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("stallscope")
    assert exe, "stallscope is not installed"
    return subprocess.run([exe, "flows", *args], capture_output=True, text=True, timeout=120)


def documented_fields(section: str) -> list[str]:
    """Field names from the first column of the table under `## section` / `### section`."""
    text = DOC.read_text()
    m = re.search(rf"^#+ {re.escape(section)}\n(.*?)(?=^#)", text, re.S | re.M)
    assert m, f"no section {section!r} in {DOC}"
    names: list[str] = []
    for line in m.group(1).splitlines():
        if not line.startswith("| `"):
            continue
        for name in re.findall(r"`([a-z_0-9]+)`", line.split("|")[1]):
            names.append(name)
    return names


def test_json_document_has_exactly_the_documented_fields_in_order() -> None:
    r = run(str(GOOD), str(IPV6), "-f", "json")
    assert r.returncode == ExitCode.OK, r.stderr
    doc = json.loads(r.stdout)
    assert list(doc) == documented_fields("Top level")
    assert list(doc) == ["schema", "files"] and doc["schema"] == "stallscope.flows/2"
    assert [f["path"] for f in doc["files"]] == [str(GOOD), str(IPV6)]
    for f in doc["files"]:
        assert list(f) == documented_fields("`files[]`")
        assert list(f["accounting"]) == documented_fields("`accounting`")
        assert f["status"] == "ok" and f["error"] is None
        for c in f["connections"]:
            assert list(c) == documented_fields("`connections[]`")
            assert list(c["orig"]) == list(c["resp"]) == documented_fields("`orig` / `resp`")
    # The documented accounting identity.
    for f in doc["files"]:
        a = f["accounting"]
        assert a["records"] == a["tcp_packets"] + sum(a["not_tcp"].values()) + sum(a["not_decoded"].values())
        assert sum(c["packets"] for c in f["connections"]) == a["tcp_packets"]
    assert doc["files"][1]["connections"][0]["ip_version"] == 6


def test_json_is_deterministic_and_matches_gzip_input(tmp_path: Path) -> None:
    import gzip

    gz = tmp_path / "trace.pcap.gz"
    gz.write_bytes(gzip.compress(GOOD.read_bytes()))
    a, b, c = run(str(GOOD), "-f", "json"), run(str(GOOD), "-f", "json"), run(str(gz), "-f", "json")
    assert a.stdout == b.stdout
    plain, zipped = json.loads(a.stdout)["files"][0], json.loads(c.stdout)["files"][0]
    assert plain["connections"] == zipped["connections"]


def test_csv_and_parquet_carry_the_flat_schema(tmp_path: Path) -> None:
    r = run(str(GOOD), str(IPV6), "-f", "csv")
    assert r.returncode == 0, r.stderr
    header = r.stdout.splitlines()[0].split(",")
    assert header == ["file", *table_schema()]
    assert len(r.stdout.splitlines()) == 3
    out = tmp_path / "flows.parquet"
    r = run(str(GOOD), "-f", "parquet", "-o", str(out))
    assert r.returncode == 0, r.stderr
    df = pl.read_parquet(out)
    assert dict(df.schema) == {"file": pl.String(), **table_schema()}
    assert df["resp_retrans_packets"].to_list() == [3]


def test_table_mode_names_each_connection(tmp_path: Path) -> None:
    out = tmp_path / "t.txt"
    r = run(str(GOOD), str(IPV6), "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "10.0.88.85:50368" in text and "192.168.0.27:80" in text
    assert "[2607:f8b0:400c:c03::1a]:25" in text


def test_damaged_file_prints_what_was_read_and_exits_input_damaged(tmp_path: Path) -> None:
    cut = tmp_path / "cut.pcap"
    data = GOOD.read_bytes()
    cut.write_bytes(data[: len(data) - 10])  # inside the last record's data
    r = run(str(cut), "-f", "json")
    assert r.returncode == ExitCode.INPUT_DAMAGED
    f = json.loads(r.stdout)["files"][0]
    assert f["status"] == "damaged" and f["error"]["kind"] == "truncated" and not f["error"]["rejected"]
    whole = json.loads(run(str(GOOD), "-f", "json").stdout)["files"][0]
    assert f["accounting"]["tcp_packets"] == whole["accounting"]["tcp_packets"] - 1
    assert f["accounting"]["truncation"]["trailing_offset"] == f["error"]["offset"]
    assert "cut.pcap" in r.stderr and "truncated" in r.stderr


def test_rejected_file_exits_input_rejected_with_one_line(tmp_path: Path) -> None:
    r = run(str(REJECTED), str(GOOD), "-f", "json")
    assert r.returncode == ExitCode.INPUT_REJECTED
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "unsupported pcap savefile version 1.4" in lines[0]
    files = json.loads(r.stdout)["files"]
    assert files[0]["status"] == "rejected" and files[0]["connections"] == [] and files[0]["accounting"] is None
    assert files[1]["status"] == "ok" and len(files[1]["connections"]) == 1
    missing = run(str(tmp_path / "nope.pcap"))
    assert missing.returncode == ExitCode.INPUT_REJECTED and "nope.pcap" in missing.stderr


def test_rejected_outranks_damaged(tmp_path: Path) -> None:
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(GOOD.read_bytes()[:-10])
    assert run(str(cut), str(REJECTED)).returncode == ExitCode.INPUT_REJECTED


def test_parquet_without_output_is_a_usage_error() -> None:
    r = run(str(GOOD), "-f", "parquet")
    assert r.returncode == ExitCode.USAGE and "-o" in r.stderr


def test_standard_input_gives_the_same_connections() -> None:
    exe = shutil.which("stallscope")
    piped = subprocess.run([exe, "flows", "-", "-f", "json"], input=GOOD.read_bytes(), capture_output=True, timeout=120)
    assert piped.returncode == 0
    from_stdin = json.loads(piped.stdout)["files"][0]
    from_file = json.loads(run(str(GOOD), "-f", "json").stdout)["files"][0]
    assert from_stdin["path"] == "-" and from_stdin["connections"] == from_file["connections"]


def test_many_connections_print_as_aligned_text(tmp_path: Path, monkeypatch) -> None:
    """Above RICH_MAX_ROWS the table is plain aligned columns: one header line, one per row."""
    from typer.testing import CliRunner

    from stallscope.cli import flows as flows_cli
    from stallscope.cli.app import app

    monkeypatch.setattr(flows_cli, "RICH_MAX_ROWS", 0)
    out = tmp_path / "t.txt"
    r = CliRunner().invoke(app, ["flows", str(GOOD), str(IPV6), "-o", str(out)])
    assert r.exit_code == 0, r.output
    lines = out.read_text().splitlines()
    assert lines[0].split()[:3] == ["file", "stream", "initiator"]
    assert len(lines) == 3 and "10.0.88.85:50368" in lines[1]
    # Columns line up: every row has the responder at the header's offset.
    col = lines[0].index("responder")
    assert lines[1][col:].startswith("192.168.0.27:80")


IMPORT_PROBE = """
import sys
from stallscope.cli.app import main
sys.argv = ["stallscope", "flows", "-f", "json", "-o", sys.argv[1], sys.argv[2]]
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
print(sorted(m for m in ("polars", "rich", "pyarrow") if m in sys.modules))
"""


def test_json_output_never_imports_polars_or_rich(tmp_path: Path) -> None:
    """`flows -f json` is timed against tcptrace -l (bench/run.py): Polars' import alone was ~85 ms of a
    0.4 s run, so the JSON path writes from the native column lists. This holds it to that."""
    import sys

    out = tmp_path / "flows.json"
    r = subprocess.run([sys.executable, "-c", IMPORT_PROBE, str(out), str(GOOD)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
    assert json.loads(out.read_text())["files"][0]["connections"], "no connections written"


def test_a_long_packet_listing_is_plain_text_and_quick() -> None:
    """`decode -f table` of 2,469 packets: Rich took 21 s to measure every cell; above
    RICH_TABLE_MAX_ROWS rows the listing is aligned text, one line per packet under the header."""
    import time

    clean = Path(__file__).resolve().parents[1] / "fixtures" / "clean_bulk.pcap"
    t0 = time.monotonic()
    r = subprocess.run([shutil.which("stallscope"), "decode", "-f", "table", str(clean)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["frame", "ts_ns", "ts_valid"] and len(lines) == 1 + 2469
    assert lines[1].split()[0] == "1" and lines[-1].split()[0] == "2469"
    assert time.monotonic() - t0 < 60  # a guard against the 21 s Rich rendering, not a benchmark


def test_plain_tables_escape_control_characters() -> None:
    """A capture's text (a file name, a comment) cannot drive the terminal from a plain table."""
    import polars as pl

    from stallscope.output import plain_table

    text = plain_table(pl.DataFrame({"file": ["evil\x1b]0;owned\x07.pcap", None], "n": [1, 22]}), "T")
    assert "\x1b" not in text and "\x07" not in text and "evil\\x1b]0;owned\\x07.pcap" in text
    lines = text.splitlines()
    assert lines[0] == "T" and lines[2].rindex("1") == lines[1].index("n") and lines[3].strip() == "22"


def test_rich_tables_show_a_file_name_as_text() -> None:
    """A short table goes through Rich, which reads "[red]" as markup and passes ESC to the
    terminal: each cell is written as text, control characters escaped (two captures listed
    together name their files in a column)."""
    import io

    import polars as pl
    from rich.console import Console

    from stallscope.output import OutputFormat, render_frame

    buf = io.StringIO()
    df = pl.DataFrame({"file": ["[red]y.pcap", "[bold]x\x1b[31m.pcap"], "stream": [0, 0]})
    render_frame(df, OutputFormat.table, title="T", console=Console(file=buf, width=200, color_system=None))
    text = buf.getvalue()
    assert "[red]y.pcap" in text and "[bold]x\\x1b[31m.pcap" in text and "\x1b" not in text


def test_every_text_output_escapes_the_same_control_characters() -> None:
    """A capture's text reaches the terminal (plain and Rich tables, the analysis summary), Markdown
    and the gate's outputs through one escaping (stallscope/untrusted_text.py): C1 controls too,
    which 8-bit terminals read as escape sequences (U+009B is CSI, so "\\x9b31m" turned text red),
    and a newline is named, not written."""
    import io

    import polars as pl
    from rich.console import Console

    from stallscope.analyzers.analysis_text import _md
    from stallscope.analyzers.gate.text import markdown
    from stallscope.output import OutputFormat, plain_table, render_frame

    name = "a\x9b31m\x85b\nc\x1b.pcap"
    raw = ("\x9b", "\x85", "\x1b")
    plain = plain_table(pl.DataFrame({"file": [name]}))
    buf = io.StringIO()
    render_frame(pl.DataFrame({"file": [name]}), OutputFormat.table, console=Console(file=buf, width=200, color_system=None))
    for text in (plain, buf.getvalue()):
        assert not any(ch in text for ch in raw) and "a\\x9b31m\\x85b\\nc\\x1b.pcap" in text
    for md in (_md(name), markdown(name)):
        assert not any(ch in md for ch in raw) and "\n" not in md and "&#92;x9b31m" in md
