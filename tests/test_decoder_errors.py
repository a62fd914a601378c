"""Bad inputs give the right typed exception through the API and the right exit code and one-line
message through `stallscope decode`; gzip and stdin give the same table as the plain file."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from stallscope.packets.decoder import read_packets
from stallscope.packets.errors import CaptureDamaged, CaptureRejected
from stallscope.cli.app import app
from stallscope.exit_codes import ExitCode
from shared_material import PUBLIC, requires_public

FIXTURES = PUBLIC

pytestmark = requires_public
GOOD = FIXTURES / "zeek" / "tcp_retransmit-fast009.pcap"

# libpcap's own expected messages (fixtures/public/PROVENANCE.md).
REJECTED = [
    ("libpcap/pcap-invalid-version-1.pcap", "unsupported pcap savefile version 1.4"),
    ("libpcap/pcap-invalid-version-2.pcap", "unsupported pcap savefile version 2.5"),
    ("libpcap/pcapng-invalid-vers-1.pcapng", "unsupported pcapng savefile version 0.1"),
    ("libpcap/pcapng-invalid-vers-2.pcapng", "unsupported pcapng savefile version 1.1"),
    ("libpcap/linktype-reserved-field-not-zero.pcap", "0x00300000"),
]


@pytest.mark.parametrize("name,message", REJECTED)
def test_rejected_files_raise_capture_rejected(name: str, message: str):
    with pytest.raises(CaptureRejected) as info:
        read_packets(FIXTURES / name)
    assert message in info.value.reason
    assert str(FIXTURES / name) in str(info.value)


def test_not_a_capture_and_missing_file_are_rejected(tmp_path: Path):
    junk = tmp_path / "notes.txt"
    junk.write_bytes(b"hello, this is not a capture at all")
    with pytest.raises(CaptureRejected) as info:
        read_packets(junk)
    assert info.value.kind == "not_a_capture" and info.value.offset == 0
    with pytest.raises(CaptureRejected):
        read_packets(tmp_path / "missing.pcap")
    with pytest.raises(CaptureRejected):
        read_packets(b"\xd4\xc3\xb2")  # shorter than a file header


def test_a_compressed_capture_is_named_with_how_to_read_it(tmp_path: Path):
    """zstd, lz4, xz and bzip2 are not read through (gzip is): the rejection names the compression
    and the pipe that reads it, which `-` (stdin) takes."""
    cases = {"x.pcapng.zst": (b"\x28\xb5\x2f\xfd", "zstd"), "x.pcap.lz4": (b"\x04\x22\x4d\x18", "lz4"),
             "x.pcap.xz": (b"\xfd7zXZ\x00", "xz"), "x.pcap.bz2": (b"BZh91AY", "bzip2")}
    for name, (head, tool) in cases.items():
        path = tmp_path / name
        path.write_bytes(head + bytes(64))
        with pytest.raises(CaptureRejected) as info:
            read_packets(path)
        assert info.value.kind == "not_a_capture", name
        assert f"({tool}-compressed" in info.value.reason and f"`{tool} -dc FILE | stallscope analyze -`" in info.value.reason
    junk = tmp_path / "junk"
    junk.write_bytes(b"junk" + bytes(64))
    with pytest.raises(CaptureRejected) as info:
        read_packets(junk)
    assert "compressed" not in info.value.reason


def test_truncated_file_is_damaged_and_keeps_the_packets_before():
    data = GOOD.read_bytes()
    whole, _ = read_packets(data)
    with pytest.raises(CaptureDamaged) as info:
        read_packets(data[:-10])
    e = info.value
    assert e.kind == "truncated"
    assert e.packets.height == e.packets_decoded == whole.height - 1
    assert e.packets.equals(whole.head(whole.height - 1))
    assert 24 < e.offset < len(data) - 10
    assert e.summary.error["offset"] == e.offset and not e.summary.complete


def test_gzip_and_bytes_give_the_same_table(tmp_path: Path):
    gz = tmp_path / "trace.pcap.gz"
    gz.write_bytes(gzip.compress(GOOD.read_bytes()))
    plain, s1 = read_packets(GOOD)
    assert read_packets(gz)[0].equals(plain)
    assert read_packets(GOOD.read_bytes())[0].equals(plain)
    assert s1.tcp_packets == plain.height


def _cli(*args: str):
    return CliRunner().invoke(app, ["decode", *args])


def test_cli_writes_parquet_with_summary_on_stderr(tmp_path: Path):
    out = tmp_path / "p.parquet"
    r = _cli(str(GOOD), "-o", str(out))
    assert r.exit_code == ExitCode.OK, r.output
    df = pl.read_parquet(out)
    assert df.equals(read_packets(GOOD)[0])
    assert f"{df.height} TCP packets" in r.stderr


def test_cli_columns_and_csv(tmp_path: Path):
    out = tmp_path / "p.csv"
    r = _cli(str(FIXTURES / "zeek" / "tcp_option-sack.pcap"), "-o", str(out), "--columns", "frame,sack_left,flags")
    assert r.exit_code == ExitCode.OK
    assert out.read_text().splitlines()[0] == "frame,sack_left,flags"
    assert _cli(str(GOOD), "--columns", "frame,bogus").exit_code == ExitCode.USAGE


def test_cli_json_carries_rows_and_accounting():
    import json

    r = _cli(str(FIXTURES / "zeek" / "q-in-q.pcap"), "-f", "json", "-c", "frame")
    assert r.exit_code == ExitCode.OK
    doc = json.loads(r.stdout)
    assert doc["rows"] == [] and doc["summary"]["records"] == 5
    assert doc["summary"]["not_tcp"] == {"arp": 1, "udp": 4}


def test_cli_rejected_file_exit_code_and_one_line_message():
    path = FIXTURES / "libpcap" / "pcap-invalid-version-1.pcap"
    r = _cli(str(path), "-f", "json")
    assert r.exit_code == ExitCode.INPUT_REJECTED
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert str(path) in lines[0] and "byte 4" in lines[0] and "version 1.4" in lines[0]


def test_cli_damaged_file_writes_what_was_read(tmp_path: Path):
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(GOOD.read_bytes()[:-10])
    out = tmp_path / "cut.parquet"
    r = _cli(str(cut), "-o", str(out))
    assert r.exit_code == ExitCode.INPUT_DAMAGED
    assert pl.read_parquet(out).height == read_packets(GOOD)[0].height - 1
    assert str(cut) in r.stderr and "truncated" in r.stderr


def test_cli_reads_stdin():
    """`-` reads standard input (run as a process: CliRunner cannot hand a binary fd)."""
    r = subprocess.run(
        [sys.executable, "-c", "from stallscope.cli.app import main; main()", "decode", "-", "-f", "csv", "-c", "frame"],
        input=GOOD.read_bytes(), capture_output=True, timeout=60,
    )
    assert r.returncode == 0, r.stderr
    frames = [int(x) for x in r.stdout.decode().split()[1:]]
    assert frames == read_packets(GOOD)[0]["frame"].to_list()
