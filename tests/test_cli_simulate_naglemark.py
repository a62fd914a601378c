"""`stallscope simulate naglemark` and the Mogul entries of `stallscope reproduce`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from stallscope.cli.app import app
from stallscope.exit_codes import ExitCode
from stallscope.simulate.apps import naglemark as nm

ARGS = ["simulate", "naglemark", "--link", "ethernet10", "--app-buf", "131072", "--sockbuf", "131072",
        "--trial", "S", "--responses", "20"]


def _json(args):
    result = CliRunner().invoke(app, args + ["--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_json_carries_the_score_and_every_response():
    doc = _json(ARGS + ["--nagle", "NAGLE"])
    assert doc["parameters"]["nagle"] == "NAGLE" and doc["parameters"]["raw_rate_bps"] == 10_000_000
    lengths = [r["length"] for r in doc["rows"]]
    assert len(lengths) == 20 and all(5000 * i < n <= 5000 * (i + 1) for i, n in enumerate(lengths))
    delayed = sum(r["elapsed_ns"] > nm.cutoff_ns(r["length"], 10_000_000) for r in doc["rows"])
    assert doc["score_pct"] == 100.0 * delayed / 20
    assert doc["score_pct"] > 0  # traditional Nagle delays some of these lengths


def test_dldet_scores_zero_where_nagle_does_not_and_runs_are_reproducible():
    nagle = _json(ARGS + ["--nagle", "NAGLE", "--seed", "5"])
    dldet = _json(ARGS + ["--nagle", "dldet", "--seed", "5"])
    assert dldet["score_pct"] == 0.0 < nagle["score_pct"]
    assert _json(ARGS + ["--nagle", "NAGLE", "--seed", "5"]) == nagle


def test_think_time_is_a_parameter_outside_each_sample():
    """--think-ms: the client's time between responses. It is not measured (OFF, which never
    waits for a tick, gives the same samples) but it moves later requests in the client's 200 ms
    tick period, so NAGLE's delays change (tests/test_sim_naglemark_hosts.py holds the mechanism)."""
    off = _json(ARGS + ["--nagle", "OFF"])
    off_think = _json(ARGS + ["--nagle", "OFF", "--think-ms", "25"])
    assert off["parameters"]["think_ns"] == 0 and off_think["parameters"]["think_ns"] == 25_000_000
    assert off["rows"] == off_think["rows"]
    nagle = _json(ARGS + ["--nagle", "NAGLE"])
    assert _json(ARGS + ["--nagle", "NAGLE", "--think-ms", "25"])["rows"] != nagle["rows"]
    r = CliRunner().invoke(app, ARGS + ["--think-ms", "-1"])
    assert r.exit_code == ExitCode.USAGE


def test_bad_variant_and_trial_are_usage_errors():
    r = CliRunner().invoke(app, ARGS + ["--nagle", "NAGEL"])
    assert r.exit_code == ExitCode.USAGE and "unknown Nagle variant" in r.output
    r = CliRunner().invoke(app, ["simulate", "naglemark", "--trial", "x"])
    assert r.exit_code == ExitCode.USAGE and "--trial" in r.output


def test_reproduce_lists_the_mogul_entries():
    r = CliRunner().invoke(app, ["reproduce", "--list"])
    assert r.exit_code == 0
    for name in ("mogul-table4", "mogul-table5", "mogul-fddi-8192", "mogul-of-sfs"):
        assert name in r.output


@pytest.mark.paper
def test_reproduce_fddi_8192_shows_each_reading_with_its_mechanism():
    """Mogul §9 (paper): FDDI with an 8192-byte buffer (< 2 * MSS = 8624), traditional delayed ACK,
    21,560 bytes/s = one 4312-byte segment per 200 ms tick. A sender buffer of 8192 (kept unrounded)
    with 8192-byte writes releases one buffer (two segments: BSD's idle test is once per call) per
    tick, Nagle on or off; with 4096-byte writes Nagle holds each write behind the previous one, one
    segment per tick at the paper's rate (+-15 %); an 8192-byte BSD receive buffer alone is not
    tick-paced (the window update fires at half the buffer)."""
    r = CliRunner().invoke(app, ["reproduce", "mogul-fddi-8192", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    rows = {row["reading"]: row for row in (doc["rows"] if "rows" in doc else doc["result"]["rows"])}
    two = [rows["sender 8192, 8192-byte writes"], rows["sender 8192, 8192-byte writes, Nagle off"]]
    for row in two:
        assert row["sndbuf"] == 8192 and row["share_of_raw_pct"] < 1.0
        assert abs(row["sim_bytes_per_tick"] / 8192 - 1) <= 0.15
        assert 1.7 <= row["sim_segments_per_tick"] <= 2.3
    one = rows["sender 8192, 4096-byte writes"]
    assert abs(one["sim_segments_per_tick"] - 1) <= 0.15
    assert abs(one["sim_bytes_s"] / 21_560 - 1) <= 0.15
    assert rows["receiver 8192 (sender 32 KB)"]["share_of_raw_pct"] > 50
