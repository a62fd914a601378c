"""`stallscope analyze` through the installed console script: each format's shape (table, json,
csv, markdown), --stream, --packets, -o, the documented exit codes, and capture file names that
carry Rich markup, Markdown or HTML (shown as text, never interpreted)."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pcap_edit as pe
import polars as pl
import pytest

from stallscope.exit_codes import ExitCode

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
DOC = REPO / "docs" / "analysis-json.md"
BURST = FIXTURES / "burst_loss.pcap"  # 3 burst_loss_timeout stalls
NAGLE = FIXTURES / "nagle_4k_jumbo.pcap"  # 23 nagle_delayed_ack stalls (and application_idle ones)
CLEAN = FIXTURES / "clean_bulk.pcap"  # no stall
HOSTILE = "[bold]x|<b>*y*`z`.pcap"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("stallscope")
    assert exe, "stallscope is not installed"
    return subprocess.run([exe, "analyze", *args], capture_output=True, text=True, timeout=180, cwd=cwd)


def documented_fields(section: str) -> list[str]:
    """Field names from the first column of the table under a heading of docs/analysis-json.md."""
    text = DOC.read_text()
    m = re.search(rf"^#+ {re.escape(section)}\n(.*?)(?=^#)", text, re.S | re.M)
    assert m, f"no section {section!r}"
    return [n for line in m.group(1).splitlines() if line.startswith("| `")
            for n in re.findall(r"`([a-z_0-9]+)`", line.split("|")[1])]


@pytest.fixture(scope="module")
def two_connections(tmp_path_factory) -> Path:
    """clean_bulk then burst_loss in one file (burst_loss moved to start 1 s after clean_bulk ends):
    stream 0 has no stall, stream 1 three burst_loss_timeout stalls."""
    a, b = pe.read(CLEAN), pe.read(BURST)
    shift = a.ts(a.records[-1]) + 1_000_000_000 - b.ts(b.records[0])
    merged = a.replace_records(a.records + [b.at(r, b.ts(r) + shift) for r in b.records])
    return merged.write(tmp_path_factory.mktemp("two") / "two.pcap")


# --- formats ------------------------------------------------------------------------------------


def test_table_one_line_per_connection_then_the_findings() -> None:
    r = run(str(BURST), str(NAGLE))
    assert r.returncode == ExitCode.OK, r.stderr
    lines = r.stdout.splitlines()
    rows = [ln for ln in lines if ln.startswith("│")]
    assert len(rows) == 2
    assert str(BURST) in rows[0] and "burst_loss_timeout" in rows[0] and "Mbit/s" in rows[0]
    assert str(NAGLE) in rows[1] and "nagle_delayed_ack" in rows[1]
    table_end = max(i for i, ln in enumerate(lines) if ln.startswith("└"))
    findings = "\n".join(lines[table_end + 1:])
    assert "3 x burst_loss_timeout" in findings
    assert "23 x nagle_delayed_ack/buffer_tearing" in findings
    assert re.search(r"held \d+ B \(frame \d+\) behind \d+ B; released by ACK frame \d+ delayed [0-9.]+ ms", findings)
    assert findings.index(f"{BURST} stream 0") < findings.index(f"{NAGLE} stream 0")


def test_json_is_stallscope_analysis_1_with_the_documented_fields_in_order() -> None:
    r = run("-f", "json", str(BURST), str(NAGLE))
    assert r.returncode == ExitCode.OK, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "stallscope.analysis/1"
    assert list(doc) == documented_fields("Top level")
    assert [f["path"] for f in doc["files"]] == [str(BURST), str(NAGLE)]
    for f in doc["files"]:
        # `reference` is present only with --compare (tests/test_comparison.py).
        assert list(f) == [k for k in documented_fields("`files[]`") if k != "reference"]
        assert list(f["decode"]) == documented_fields("`decode`")
        for c in f["connections"]:
            assert list(c) == documented_fields("`connections[]`")
            assert all(list(v) == documented_fields('`vantage["0"|"1"]`') for v in c["vantage"].values())
            assert all(list(d) == documented_fields("`directions[]`") for d in c["directions"])
            assert all(list(s) == documented_fields("`stalls[]`") for s in c["stalls"])
    causes = [s["cause"] for s in doc["files"][0]["connections"][0]["stalls"]]
    assert causes == ["burst_loss_timeout"] * 3


def test_csv_header_and_one_row_per_stall() -> None:
    r = run("-f", "csv", str(BURST), str(NAGLE))
    assert r.returncode == ExitCode.OK, r.stderr
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0] == ["file", "stream", "direction", "start_ns", "end_ns", "start_frame", "end_frame", "duration_ns",
                       "time_lost_ns", "cause", "detail", "confidence"]
    doc = json.loads(run("-f", "json", str(BURST), str(NAGLE)).stdout)
    stalls = [(f["path"], s) for f in doc["files"] for c in f["connections"] for s in c["stalls"]]
    assert len(rows) - 1 == len(stalls)
    by_cause = {c: sum(1 for r in rows[1:] if r[9] == c) for c in ("burst_loss_timeout", "nagle_delayed_ack")}
    assert by_cause == {"burst_loss_timeout": 3, "nagle_delayed_ack": 23}
    for row, (path, s) in zip(rows[1:], stalls):
        assert row[0] == path and row[9] == s["cause"] and int(row[3]) == s["start_ns"]
        assert int(row[8]) == s["time_lost_ns"] and row[10] == (s["detail"] or "")


def test_csv_of_a_capture_without_stalls_is_the_header_alone() -> None:
    r = run("-f", "csv", str(CLEAN))
    assert r.returncode == ExitCode.OK and r.stdout.count("\n") == 1


def test_markdown_summary_table_then_a_section_per_connection_with_stalls() -> None:
    r = run("-f", "markdown", str(BURST), str(CLEAN))
    assert r.returncode == ExitCode.OK, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "# stallscope analysis"
    assert lines[2] == "| file | stream | connection | goodput | time lost | top cause |"
    summary = [ln for ln in lines[4:] if ln.startswith("| ")][:2]
    assert [ln.count("|") for ln in summary] == [7, 7]
    assert "burst_loss_timeout" in summary[0] and summary[1].endswith("| - |")
    assert f"## {BURST} stream 0" in lines and not any(ln.startswith(f"## {CLEAN}") for ln in lines)
    assert "| burst_loss_timeout |  | 3 |" in r.stdout


# --- options ------------------------------------------------------------------------------------


def test_stream_selects_one_connection(two_connections: Path) -> None:
    both = json.loads(run("-f", "json", str(two_connections)).stdout)["files"][0]["connections"]
    assert [(c["stream"], len(c["stalls"])) for c in both] == [(0, 0), (1, 3)]
    r = run("-f", "json", "--stream", "1", str(two_connections))
    assert r.returncode == ExitCode.OK, r.stderr
    conns = json.loads(r.stdout)["files"][0]["connections"]
    assert [c["stream"] for c in conns] == [1]
    assert conns[0]["stalls"] == both[1]["stalls"]
    csv_rows = run("-f", "csv", "--stream", "0", str(two_connections)).stdout.splitlines()
    assert len(csv_rows) == 1  # stream 0 has no stall


def test_stream_that_does_not_exist_is_an_empty_analysis(two_connections: Path) -> None:
    r = run("-f", "json", "--stream", "7", str(two_connections))
    assert r.returncode == ExitCode.OK, r.stderr
    f = json.loads(r.stdout)["files"][0]
    assert f["connections"] == [] and f["notes"][-1]["message"] == "no TCP stream 7 in the capture"
    assert "no TCP connection" in r.stderr


def test_packets_writes_the_documented_parquet_table(tmp_path: Path, two_connections: Path) -> None:
    out = tmp_path / "state.parquet"
    r = run("-f", "json", "--packets", str(out), str(two_connections), str(NAGLE))
    assert r.returncode == ExitCode.OK, r.stderr
    df = pl.read_parquet(out)
    doc = DOC.read_text()
    table = doc[doc.index("## The per-packet table"):doc.index("## Exit status")]
    documented = [n for line in table.splitlines() if line.startswith("| `")
                  for n in re.findall(r"`([a-z_]+)`", line.split("|")[1])]
    assert df.columns == documented
    files = json.loads(r.stdout)["files"]
    per_file = df.group_by("file").len()
    assert dict(per_file.iter_rows()) == {f["path"]: f["decode"]["tcp_packets"] for f in files}
    assert df.filter(pl.col("file") == str(two_connections))["stream"].unique().sort().to_list() == [0, 1]
    assert df.filter(pl.col("retransmission"))["retrans_kind"].null_count() == 0
    assert df.schema["ts_ns"] == pl.Int64 and df.schema["sack_left"] == pl.List(pl.Int64)


def test_packets_with_stream_keeps_that_stream_only(tmp_path: Path, two_connections: Path) -> None:
    out = tmp_path / "one.parquet"
    assert run("--stream", "1", "--packets", str(out), str(two_connections)).returncode == ExitCode.OK
    assert pl.read_parquet(out)["stream"].unique().to_list() == [1]


@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "csv"])
def test_output_file_holds_what_stdout_would(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"out.{fmt}"
    r = run("-f", fmt, "-o", str(out), str(BURST))
    assert r.returncode == ExitCode.OK, r.stderr
    assert r.stdout == ""
    assert out.read_text(encoding="utf-8") == run("-f", fmt, str(BURST)).stdout


# --- exit codes ---------------------------------------------------------------------------------


def _cut(tmp_path: Path) -> Path:
    data, _ = pe.cut_mid_record(pe.read(BURST), 0.8)
    (tmp_path / "cut.pcap").write_bytes(data)
    return tmp_path / "cut.pcap"


def test_exit_codes(tmp_path: Path) -> None:
    cut = _cut(tmp_path)
    junk = tmp_path / "junk.pcap"
    junk.write_text("this is not a capture\n")
    assert run(str(CLEAN)).returncode == ExitCode.OK
    r = run("-f", "json", str(CLEAN), str(cut))
    assert r.returncode == ExitCode.INPUT_DAMAGED
    assert [f["status"] for f in json.loads(r.stdout)["files"]] == ["ok", "damaged"]
    r = run("-f", "json", str(junk))
    assert r.returncode == ExitCode.INPUT_REJECTED and f"{junk}: rejected:" in r.stderr
    assert json.loads(r.stdout)["files"][0]["status"] == "rejected"
    # A rejected file wins over a damaged one, whatever the order.
    assert run(str(cut), str(junk)).returncode == run(str(junk), str(cut)).returncode == ExitCode.INPUT_REJECTED
    assert run(str(tmp_path / "missing.pcap")).returncode == ExitCode.INPUT_REJECTED
    assert run("-f", "xml", str(CLEAN)).returncode == ExitCode.USAGE
    assert run("--stream", "-1", str(CLEAN)).returncode == ExitCode.USAGE


# --- hostile file names -------------------------------------------------------------------------


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    path = tmp_path / HOSTILE
    path.write_bytes(BURST.read_bytes())
    return path


def test_table_shows_a_marked_up_file_name_as_text(hostile: Path) -> None:
    r = run(hostile.name, cwd=hostile.parent)
    assert r.returncode == ExitCode.OK, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("│")]
    assert len(rows) == 1 and HOSTILE in rows[0]  # "[bold]" kept: Rich did not read it as markup
    assert f"{HOSTILE} stream 0" in r.stdout
    assert f"note ({HOSTILE})" in r.stdout
    assert "\x1b[" not in r.stdout


def test_table_shows_an_emoji_code_in_a_file_name_as_text(tmp_path: Path) -> None:
    name = ":smile:[red]r.pcap"
    (tmp_path / name).write_bytes(BURST.read_bytes())
    r = run(name, cwd=tmp_path)
    assert r.returncode == ExitCode.OK, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("│")]
    assert name in rows[0] and f"{name} stream 0" in r.stdout
    assert "\N{SMILING FACE WITH OPEN MOUTH AND SMILING EYES}" not in r.stdout


@pytest.mark.parametrize(("name", "escaped"), [
    (HOSTILE, "&#91;bold&#93;x&#124;&lt;b&gt;&#42;y&#42;&#96;z&#96;.pcap"),
    # A backslash before a pipe would otherwise escape the reference's '&'; an underscore emphasises
    # only at a word's edge, so inside a word it stays as it is.
    ("a\\|_b_ ~c~ d_e.pcap", "a&#92;&#124;&#95;b&#95; &#126;c&#126; d_e.pcap"),
], ids=["markup", "backslash"])
def test_markdown_escapes_a_file_name_with_markup_pipes_and_html(name: str, escaped: str, tmp_path: Path) -> None:
    (tmp_path / name).write_bytes(BURST.read_bytes())
    r = run("-f", "markdown", name, cwd=tmp_path)
    assert r.returncode == ExitCode.OK, r.stderr
    out = r.stdout
    for raw in ("<b>", "[bold]", "`z`", "*y*", "\\|", "~c~", " _b_"):
        assert raw not in out, raw
    row = next(ln for ln in out.splitlines() if ln.startswith("| ") and "burst_loss_timeout" in ln)
    assert row.count("|") == 7  # six cells: the pipe in the name does not split one
    assert row.split(" | ")[0] == f"| {escaped}"
    assert f"## {escaped} stream 0" in out


def test_json_and_csv_keep_the_file_name_exactly(hostile: Path) -> None:
    doc = json.loads(run("-f", "json", hostile.name, cwd=hostile.parent).stdout)
    assert doc["files"][0]["path"] == HOSTILE
    rows = list(csv.reader(io.StringIO(run("-f", "csv", hostile.name, cwd=hostile.parent).stdout)))
    assert {r[0] for r in rows[1:]} == {HOSTILE}


def test_a_comma_and_quote_in_a_file_name_stay_one_csv_field(tmp_path: Path) -> None:
    name = 'a,"b".pcap'
    (tmp_path / name).write_bytes(BURST.read_bytes())
    rows = list(csv.reader(io.StringIO(run("-f", "csv", name, cwd=tmp_path).stdout)))
    assert len(rows) == 4 and all(len(r) == 12 and r[0] == name for r in rows[1:])


# --- README and make demo -----------------------------------------------------------------------


def test_readme_shows_analyze_first_with_an_example_that_runs_as_written() -> None:
    readme = (REPO / "README.md").read_text()
    commands = readme[readme.index("## Commands"):]
    example = re.search(r"```sh\n(.*?)```", commands, re.S).group(1).strip().splitlines()
    assert len(example) == 1 and example[0].startswith("stallscope analyze ")
    rows = [ln for ln in commands.splitlines() if ln.startswith("| `")]
    assert rows[0].startswith("| `analyze FILE...` | `stallscope analyze ") and "docs/analysis-json.md" in rows[0]
    r = subprocess.run(["bash", "-c", example[0]], cwd=REPO, capture_output=True, text=True, timeout=180)
    assert r.returncode == ExitCode.OK, r.stderr
    table = [ln for ln in r.stdout.splitlines() if ln.startswith("│")]
    assert len(table) == 2 and "nagle_delayed_ack" in table[0] and "receiver_window_limited" in table[1]


def test_make_demo_analyzes_the_bundled_captures_first() -> None:
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    r = subprocess.run(["make", "-n", "demo"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    steps = [ln for ln in r.stdout.splitlines() if ln.startswith("stallscope ")]
    assert steps[0].startswith("stallscope analyze ") and steps[1].startswith("stallscope flows ")
    demo = steps[0].split()[2:]
    assert demo == steps[1].split()[2:] and len(demo) == 6  # the same DEMO_CAPTURES as flows
    a = run(*demo, cwd=REPO)
    assert a.returncode == ExitCode.OK, a.stderr
    assert len([ln for ln in a.stdout.splitlines() if ln.startswith("│")]) == len(demo)


def test_a_long_listing_is_plain_columns_with_the_name_as_text(tmp_path: Path) -> None:
    """Past RICH_TABLE_MAX_ROWS connections the summary is written as plain aligned columns (Rich
    measured every cell: the findings and the table took 11 s for 20,000 connections), still one
    line per connection, the capture's name shown as text and its control characters escaped."""
    from stallscope.output import RICH_TABLE_MAX_ROWS

    name = "[bold]many\x1b[31m.pcap"
    subprocess.run(["python3", str(REPO / "bench" / "make_capture.py"), "--packets", str(10 * (RICH_TABLE_MAX_ROWS + 1)),
                    "--connections", str(RICH_TABLE_MAX_ROWS + 1), "-o", str(tmp_path / name)],
                   check=True, capture_output=True, timeout=120)
    r = run(name, cwd=tmp_path)
    assert r.returncode == ExitCode.OK, r.stderr
    shown = "[bold]many\\x1b[31m.pcap"
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith(shown + "  ")]
    assert len(rows) == RICH_TABLE_MAX_ROWS + 1
    assert r.stdout.splitlines()[1].split() == ["file", "stream", "connection", "goodput", "time", "lost", "top", "cause"]
    assert "│" not in r.stdout.split("\n\n")[0]
    # Nor in the findings (Rich passed control characters through to the terminal), nor Markdown.
    assert "\x1b" not in r.stdout and f"note ({shown})" in r.stdout
    md = run(name, "-f", "markdown", cwd=tmp_path)
    assert md.returncode == ExitCode.OK and "\x1b" not in md.stdout and "&#92;x1b" in md.stdout
