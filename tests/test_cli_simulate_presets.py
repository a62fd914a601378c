"""`stallscope simulate bulk --preset NAME` and the path options in a person's units, run through the
installed console script: each paper's preset produces its pathology, options given beside a
preset override it, and the unit options agree with the older ones they stand beside."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from stallscope.exit_codes import ExitCode
from stallscope.simulate.presets import PRESETS

REPO = Path(__file__).resolve().parents[1]


def sim(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("stallscope")
    assert exe, "the stallscope console script is not on PATH"
    return subprocess.run([exe, "simulate", "bulk", *args], capture_output=True, text=True, timeout=300, cwd=REPO)


def sim_json(*args: str) -> dict:
    r = sim(*args, "-f", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_preset_list_names_every_preset_with_its_settings() -> None:
    r = sim("--preset", "list")
    assert r.returncode == 0 and r.stderr == ""
    for name in PRESETS:
        assert name in r.stdout
    rows = sim_json("--preset", "list")["rows"]
    assert [row["name"] for row in rows] == list(PRESETS)
    assert {"gigatcp-ti", "kung-morris-none", "kung-morris-ppd", "kung-morris-epd"} <= set(PRESETS)
    ti = next(row for row in rows if row["name"] == "gigatcp-ti")
    assert "--jumbo-slots 384" in ti["settings"] and "--mtu 8940" in ti["settings"]


def test_unknown_preset_is_a_usage_error() -> None:
    r = sim("--preset", "no-such-paper")
    assert r.returncode == ExitCode.USAGE
    assert "unknown preset 'no-such-paper'" in r.stderr and "gigatcp-ti" in r.stderr


def test_gigatcp_preset_drops_jumbo_frames_while_standard_frames_pass() -> None:
    ti = sim_json("--preset", "gigatcp-ti")
    assert ti["preset"] == "gigatcp-ti"
    assert ti["drops"].get("jumbo_slot_exhaustion", 0) >= 100
    assert not ti["completed"] and ti["timeouts"] >= 7  # the back-off ladder, then the sender gives up
    assert {s["cause"] for s in ti["stalls"]} == {"jumbo_slot_exhaustion"}
    assert ti["parameters"]["impairments"]["jumbo_slots"] == 384
    # The same path with standard 1500-byte frames: the pool is never asked, the one loss is repaired.
    small = sim_json("--preset", "gigatcp-ti", "--mtu", "1500")
    assert small["parameters"]["mtu"] == 1500  # the option beside the preset wins
    assert small["drops"].get("jumbo_slot_exhaustion", 0) == 0 and small["completed"]
    # And the negative control: 8192 slots.
    big = sim_json("--preset", "gigatcp-8192")
    assert big["completed"] and big["drops"].get("jumbo_slot_exhaustion", 0) == 0 and big["goodput_mbit_s"] > 900


def test_gigatcp_slow_slot_return_is_reachable_from_the_command_line() -> None:
    preset = sim_json("--preset", "gigatcp-ti-slow-return")
    flags = sim_json("--personality", "freebsd4", "--link", "gige", "--mtu", "8940", "--sndbuf", "4194304",
                     "--rcvbuf", "4194304", "--write", "65536", "--read", "65536", "--bytes", "25165824",
                     "--jumbo-slots", "384", "--jumbo-release", "timer", "--jumbo-replenish-us", "30000")
    assert preset["drops"]["jumbo_slot_exhaustion"] > 0 and preset["timeouts"] > 0
    assert {k: flags[k] for k in ("drops", "timeouts", "goodput_mbit_s", "packets")} == {
        k: preset[k] for k in ("drops", "timeouts", "goodput_mbit_s", "packets")}


def test_kung_morris_epd_beats_no_discard() -> None:
    none = sim_json("--preset", "kung-morris-none")
    ppd = sim_json("--preset", "kung-morris-ppd")
    epd = sim_json("--preset", "kung-morris-epd")
    assert {s["cause"] for s in none["stalls"]} == {"burst_loss_timeout"}
    assert none["timeouts"] > 10 * max(epd["timeouts"], 1)
    assert epd["goodput_mbit_s"] > 5 * none["goodput_mbit_s"]
    assert ppd["goodput_mbit_s"] < 0.5 * epd["goodput_mbit_s"]  # PPD barely helps


def test_atm_buffer_in_cells_is_the_bytes_option_over_48() -> None:
    base = ["--preset", "kung-morris-none", "--bytes", "2000000"]
    cells = sim_json(*base, "--atm-buffer-cells", "600")
    payload_bytes = sim_json(*base, "--atm-switch-buffer", str(600 * 48))
    assert cells["drops"] == payload_bytes["drops"] and cells["packets"] == payload_bytes["packets"]
    both = sim(*base, "--atm-buffer-cells", "600", "--atm-switch-buffer", "28800")
    assert both.returncode == ExitCode.USAGE and "once" in both.stderr


def test_atm_policy_overrides_the_preset() -> None:
    overridden = sim_json("--preset", "kung-morris-none", "--atm-policy", "epd")
    epd = sim_json("--preset", "kung-morris-epd")
    assert overridden["goodput_mbit_s"] == epd["goodput_mbit_s"]


def test_delay_in_milliseconds_equals_nanoseconds() -> None:
    ms = sim_json("--bytes", "200000", "--delay-ms", "2.5")
    ns = sim_json("--bytes", "200000", "--delay", "2500000")
    assert ms["duration_s"] == ns["duration_s"] and ms["parameters"]["delay_ns"] == 2_500_000


@pytest.mark.parametrize("args,needs", [
    (["--jumbo-replenish-us", "100"], "need --jumbo-slots"),
    (["--jumbo-slots", "10", "--jumbo-release", "timer"], "needs --jumbo-replenish-us"),
    (["--atm-policy", "epd"], "need an ATM switch port"),
])
def test_knobs_without_what_they_tune_are_usage_errors(args: list[str], needs: str) -> None:
    r = sim("--bytes", "1000", *args)
    assert r.returncode == ExitCode.USAGE and needs in r.stderr
