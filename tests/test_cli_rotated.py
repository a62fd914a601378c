"""Several files that are one capture (a rotated set, or --as-one) are read as one time-ordered
stream by flows, decode, analyze and report, through the installed console script: the set gives
what the uncut capture gives, whatever order the files are named in and whichever naming scheme
wrote them."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pcap_edit as pe
import pytest

from stallscope.exit_codes import ExitCode

REPO = Path(__file__).resolve().parents[1]
CLEAN = REPO / "fixtures" / "clean_bulk.pcap"
BURST = REPO / "fixtures" / "burst_loss.pcap"


def run(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("stallscope")
    assert exe, "the stallscope console script is not on PATH"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=300, cwd=REPO)


def cut(source: Path, names: list[Path]) -> list[Path]:
    """`source` cut into len(names) pieces, written in order to `names`."""
    cap = pe.read(source)
    n, k = len(cap.records), len(names)
    bounds = [i * n // k for i in range(k)] + [n]
    for i, name in enumerate(names):
        cap.replace_records(cap.records[bounds[i]:bounds[i + 1]]).write(name)
    return names


def connections(doc: dict) -> list[dict]:
    return [c for f in doc["files"] for c in f["connections"]]


@pytest.fixture(scope="module")
def whole() -> dict:
    r = run("flows", "-f", "json", str(CLEAN))
    assert r.returncode == 0
    return json.loads(r.stdout)


@pytest.mark.parametrize("scheme", [
    ["cap.pcap0", "cap.pcap1", "cap.pcap2"],  # tcpdump -C N -W 3
    ["cap.pcap", "cap.pcap1", "cap.pcap2"],  # tcpdump -C N (the first file keeps the plain name)
    ["cap-000.pcap", "cap-001.pcap", "cap-002.pcap"],  # zero-padded numbers
])
def test_rotated_set_reads_as_the_uncut_capture(tmp_path: Path, whole: dict, scheme: list[str]) -> None:
    files = cut(CLEAN, [tmp_path / n for n in scheme])
    r = run("flows", "-f", "json", *map(str, reversed(files)))  # named in any order
    assert r.returncode == 0 and r.stderr == ""
    doc = json.loads(r.stdout)
    assert len(doc["files"]) == 1
    assert doc["files"][0]["path"] == "+".join(map(str, files))  # in the order they were written
    assert connections(doc) == connections(whole)
    assert doc["files"][0]["accounting"]["records"] == whole["files"][0]["accounting"]["records"]


def test_each_reads_every_file_on_its_own(tmp_path: Path) -> None:
    files = cut(CLEAN, [tmp_path / f"cap.pcap{i}" for i in range(3)])
    doc = json.loads(run("flows", "-f", "json", "--each", *map(str, files)).stdout)
    conns = connections(doc)
    assert len(doc["files"]) == 3 and len(conns) == 3
    assert [c["start_captured"] for c in conns] == [True, False, False]


def test_ring_buffer_order_is_the_packets_not_the_names(tmp_path: Path, whole: dict) -> None:
    """tcpdump -W reuses names: after wrapping, cap.pcap1 may hold the oldest packets."""
    pieces = cut(CLEAN, [tmp_path / f"piece{i}" for i in range(3)])
    for piece, name in zip(pieces, ["cap.pcap1", "cap.pcap2", "cap.pcap0"]):
        piece.rename(tmp_path / name)
    doc = json.loads(run("flows", "-f", "json", *(str(tmp_path / f"cap.pcap{i}") for i in range(3))).stdout)
    assert doc["files"][0]["path"].split("+") == [str(tmp_path / n) for n in ("cap.pcap1", "cap.pcap2", "cap.pcap0")]
    assert connections(doc) == connections(whole)


def test_unrelated_numbered_files_stay_apart_unless_as_one(tmp_path: Path) -> None:
    a, b = cut(CLEAN, [tmp_path / "trace1.pcap", tmp_path / "trace2.pcap"])
    apart = json.loads(run("flows", "-f", "json", str(a), str(b)).stdout)
    assert len(apart["files"]) == 2
    one = json.loads(run("flows", "-f", "json", "--as-one", str(b), str(a)).stdout)
    assert len(one["files"]) == 1 and len(connections(one)) == 1 and connections(one)[0]["start_captured"]
    assert run("flows", "--as-one", "--each", str(a), str(b)).returncode == ExitCode.USAGE


def test_analyze_and_report_read_the_set_as_one(tmp_path: Path) -> None:
    files = cut(BURST, [tmp_path / f"cap.pcap{i}" for i in range(4)])
    uncut = json.loads(run("analyze", "-f", "json", str(BURST)).stdout)["files"][0]["connections"]
    r = run("analyze", "-f", "json", *map(str, files))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["files"]) == 1
    stitched = doc["files"][0]["connections"]
    assert [s["cause"] for c in stitched for s in c["stalls"]] == [s["cause"] for c in uncut for s in c["stalls"]]
    assert [(s["start_frame"], s["end_frame"]) for c in stitched for s in c["stalls"]] == [
        (s["start_frame"], s["end_frame"]) for c in uncut for s in c["stalls"]]
    out = tmp_path / "report.html"
    rep = run("report", *map(str, files), "-o", str(out))
    assert rep.returncode == 0 and out.stat().st_size > 0


def test_decode_reads_one_capture_only(tmp_path: Path) -> None:
    files = cut(CLEAN, [tmp_path / f"cap.pcap{i}" for i in range(3)])
    r = run("decode", "-f", "csv", "-c", "frame,ts_ns", *map(str, files))
    whole = run("decode", "-f", "csv", "-c", "frame,ts_ns", str(CLEAN))
    assert r.returncode == 0 and r.stdout == whole.stdout
    assert r.stderr.startswith("+".join(map(str, files)) + ": 2469 records")
    two = run("decode", str(CLEAN), str(BURST))
    assert two.returncode == ExitCode.USAGE and "decode reads one capture" in two.stderr


def test_files_of_different_formats_cannot_be_one(tmp_path: Path) -> None:
    ng = tmp_path / "cap.pcap1"
    # A pcapng file holding just its section header block.
    ng.write_bytes(struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28))
    shutil.copy(CLEAN, tmp_path / "cap.pcap0")
    r = run("flows", str(tmp_path / "cap.pcap0"), str(ng))
    assert r.returncode == ExitCode.INPUT_REJECTED and r.stdout == ""
    assert "cannot be read as one capture" in r.stderr and "pcapng beside pcap" in r.stderr
