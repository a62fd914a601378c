"""`stallscope check` through the installed console script: the gate over fixtures/ (a directory),
its JSON against docs/schemas/check.schema.json, its JUnit XML against the JUnit schema
(tests/data/junit-10.xsd) and read back with junitparser, the Markdown summary, GitHub
annotations, the exit status when a capture is unreadable among others, a baseline run, and a
capture named with XML, Markdown and shell metacharacters escaped in every output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import junitparser
import pcap_edit as pe
import pytest
import xmlschema

from stallscope.exit_codes import ExitCode

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "fixtures"
SCHEMA = json.loads((REPO / "docs" / "schemas" / "check.schema.json").read_text())
JUNIT_XSD = REPO / "tests" / "data" / "junit-10.xsd"
NAGLE_FAILS = {"fixtures/nagle_4k_jumbo.pcap", "fixtures/nagle_4k_jumbo.receiver.pcap"}


def run(*args: str, cwd: Path = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("stallscope")
    assert exe, "stallscope is not installed"
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    return subprocess.run([exe, "check", *args], capture_output=True, text=True, timeout=600, cwd=cwd,
                          env={**environ, **(env or {})})


def valid_json(doc: dict) -> dict:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    errors = sorted(jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    assert next(iter(doc)) == "schema" and doc["schema"] == "stallscope.check/1"
    return doc


def valid_junit(path: Path) -> junitparser.JUnitXml:
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(str(path))
    return junitparser.JUnitXml.fromfile(str(path))


@pytest.fixture(scope="module")
def nagle_gate(tmp_path_factory) -> dict:
    """One run over fixtures/ (the directory) forbidding nagle_delayed_ack: JSON on stdout, JUnit
    and Markdown beside it, under GitHub Actions."""
    out = tmp_path_factory.mktemp("gate")
    (out / "policy.toml").write_text('[rules]\nforbid_causes = ["nagle_delayed_ack"]\n')
    r = run("fixtures", "--policy", str(out / "policy.toml"), "-f", "json", "--junit", str(out / "check.xml"),
            "--markdown", str(out / "summary.md"), env={"GITHUB_ACTIONS": "true"})
    return {"r": r, "doc": json.loads(r.stdout), "junit": out / "check.xml", "md": (out / "summary.md").read_text()}


def test_the_gate_fails_exactly_the_nagle_captures(nagle_gate: dict) -> None:
    r, doc = nagle_gate["r"], valid_json(nagle_gate["doc"])
    assert r.returncode == ExitCode.VERDICT_FAILED, r.stderr
    paths = [c["path"] for c in doc["captures"]]
    assert paths == sorted(f"fixtures/{p.name}" for p in FIX.glob("*.pcap"))  # the directory, sorted
    assert {c["path"] for c in doc["captures"] if c["verdict"] != "pass"} == NAGLE_FAILS
    assert doc["verdict"] == "fail" and doc["exit_status"] == 1
    assert doc["totals"]["failed"] == 2 and doc["totals"]["captures_failed"] == 2
    fail = next(res for c in doc["captures"] if c["path"] == "fixtures/nagle_4k_jumbo.pcap"
                for res in c["results"] if res["status"] == "fail")
    assert fail["rule"] == "forbid_causes" and fail["scope"] == "rules" and fail["evidence_count"] == 23
    assert fail["connection"] == "10.77.0.2:56868 -> 10.77.0.1:5001"
    assert all(e["cause"] == "nagle_delayed_ack" and e["frames"] for e in fail["evidence"])


def test_junit_validates_against_the_schema_and_reads_back(nagle_gate: dict) -> None:
    xml = valid_junit(nagle_gate["junit"])
    suites = {s.name: s for s in xml}
    assert set(suites) == {c["path"] for c in nagle_gate["doc"]["captures"]}
    failing = {name for name, s in suites.items() if s.failures}
    assert failing == NAGLE_FAILS
    suite = suites["fixtures/nagle_4k_jumbo.pcap"]
    cases = {c.name: c for c in suite}
    assert set(cases) == {"capture", "stream 0 (10.77.0.2:56868 -> 10.77.0.1:5001): forbid_causes"}
    case = cases["stream 0 (10.77.0.2:56868 -> 10.77.0.1:5001): forbid_causes"]
    (failure,) = case.result
    assert isinstance(failure, junitparser.Failure) and failure.type == "forbid_causes"
    assert failure.message.startswith("forbidden cause found: 23 nagle_delayed_ack stalls")
    # The finding and its frame numbers are in the failure text.
    assert "nagle_delayed_ack/buffer_tearing" in failure.text and "frames 50-52" in failure.text
    assert "released by ACK frame 51" in failure.text
    assert case.classname == "fixtures/nagle_4k_jumbo.pcap"
    assert cases["capture"].is_passed


def test_markdown_summary_and_annotations(nagle_gate: dict) -> None:
    md = nagle_gate["md"]
    assert md.startswith("## stallscope check: failed\n")
    assert "| fixtures/nagle&#95;4k&#95;jumbo.pcap | FAIL |" not in md  # an underscore inside a word stays
    assert "| fixtures/nagle_4k_jumbo.pcap | FAIL | 1 |" in md
    assert "### Failures" in md and "forbidden cause found: 23 nagle&#95;delayed&#95;ack" not in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| fixtures/nagle_4k_jumbo.pcap | stream 0"))
    assert row.endswith("| 323-325, 277-279, 160-162, 896-898, 172-174, 567-569, 586-588, 1217-1219 (+15 more) |")
    assert row.count(" | ") == 4
    notes = [ln for ln in nagle_gate["r"].stderr.splitlines() if ln.startswith("::")]
    assert len(notes) == 2
    assert notes[0].startswith("::error file=fixtures/nagle_4k_jumbo.pcap,title=stallscope check%3A forbid_causes::"
                               "stream 0 (10.77.0.2:56868 -> 10.77.0.1:5001): forbidden cause found")
    assert "%0A  nagle_delayed_ack/buffer_tearing" in notes[0]


def test_no_annotations_outside_github_actions() -> None:
    r = run("fixtures/nagle_4k_jumbo.pcap", "--forbid", "nagle_delayed_ack")
    assert r.returncode == ExitCode.VERDICT_FAILED and "::error" not in r.stdout + r.stderr
    assert "FAIL fixtures/nagle_4k_jumbo.pcap: stream 0" in r.stdout


def test_atm_policy_over_a_glob(tmp_path: Path) -> None:
    (tmp_path / "atm.toml").write_text("[rules]\nmin_goodput_bps = 30_270_000  # a quarter of 121.1 Mbit/s\n")
    r = run("fixtures/atm_*.pcap", "--policy", str(tmp_path / "atm.toml"), "-f", "json")
    doc = valid_json(json.loads(r.stdout))
    verdicts = {c["path"]: c["verdict"] for c in doc["captures"]}
    assert len(verdicts) == 8  # the sender's and the receiver's tap of four scenarios
    # The sender's taps (docs/check.md: the receiver's tap of atm_epd sits just above the line).
    assert {p: v for p, v in verdicts.items() if "receiver" not in p} == {
        "fixtures/atm_clean.pcap": "pass", "fixtures/atm_epd.pcap": "pass",
        "fixtures/atm_ppd.pcap": "fail", "fixtures/atm_small_buffer.pcap": "fail"}
    assert verdicts["fixtures/atm_small_buffer.receiver.pcap"] == "fail"
    assert r.returncode == ExitCode.VERDICT_FAILED


def _cut(tmp_path: Path) -> Path:
    data, _ = pe.cut_mid_record(pe.read(FIX / "burst_loss.pcap"), 0.8)
    (tmp_path / "cut.pcap").write_bytes(data)
    return tmp_path / "cut.pcap"


def test_an_unreadable_capture_is_reported_and_the_others_still_checked(tmp_path: Path) -> None:
    cut = _cut(tmp_path)
    junk = tmp_path / "junk.pcap"
    junk.write_text("this is not a capture\n")
    nagle = str(FIX / "nagle_4k_jumbo.pcap")
    clean = str(FIX / "clean_bulk.pcap")
    args = ["--forbid", "nagle_delayed_ack", "-f", "json", "--junit", str(tmp_path / "j.xml")]
    r = run(clean, str(junk), nagle, str(tmp_path / "missing.pcap"), str(cut), *args)
    assert r.returncode == ExitCode.INPUT_REJECTED  # 4 wins over 3 and 1
    doc = valid_json(json.loads(r.stdout))
    assert [(c["status"], c["verdict"]) for c in doc["captures"]] == [
        ("ok", "pass"), ("rejected", "error"), ("ok", "fail"), ("rejected", "error"), ("damaged", "error")]
    assert doc["captures"][3]["error"] == {"kind": "no_such_file", "offset": None, "message": "no such file"}
    assert doc["captures"][1]["error"]["kind"] == "not_a_capture"
    assert f"{junk}: rejected:" in r.stderr and f"{tmp_path / 'missing.pcap'}: no such file" in r.stderr
    # The damaged capture's rules were still checked on what was read.
    assert len(doc["captures"][4]["results"]) == 2
    xml = valid_junit(tmp_path / "j.xml")
    assert [s.errors for s in xml] == [0, 1, 0, 1, 1] and [s.failures for s in xml] == [0, 0, 1, 0, 0]
    # Damaged wins over a failed rule; a failed rule alone is 1.
    assert run(nagle, str(cut), "--forbid", "nagle_delayed_ack").returncode == ExitCode.INPUT_DAMAGED
    assert run(nagle, "--forbid", "nagle_delayed_ack").returncode == ExitCode.VERDICT_FAILED
    assert run(clean, "--forbid", "nagle_delayed_ack").returncode == ExitCode.OK
    # A pattern that matches nothing is not a pass.
    r = run(str(tmp_path / "*.pcapng"), "--forbid", "nagle_delayed_ack")
    assert r.returncode == ExitCode.INPUT_REJECTED and "no file matches" in r.stderr


def test_a_baseline_run_flags_the_capture_whose_stall_time_grew(tmp_path: Path) -> None:
    shutil.copy(FIX / "nagle_4k_jumbo_nodelay.pcap", tmp_path / "soak.pcap")
    shutil.copy(FIX / "burst_loss.pcap", tmp_path / "bulk.pcap")
    first = run("soak.pcap", "bulk.pcap", "--forbid", "mss_mismatch", "-f", "json", "-o", "base.json", cwd=tmp_path)
    assert first.returncode == ExitCode.OK, first.stderr
    # The next release: the soak test's capture now stalls on Nagle; the bulk one is unchanged.
    shutil.copy(FIX / "nagle_4k_jumbo.pcap", tmp_path / "soak.pcap")
    (tmp_path / "policy.toml").write_text('[baseline]\nfile = "base.json"\nstall_time_margin = 0.1\n')
    r = run("soak.pcap", "bulk.pcap", "--policy", "policy.toml", "-f", "json", cwd=tmp_path)
    assert r.returncode == ExitCode.VERDICT_FAILED, r.stderr
    doc = valid_json(json.loads(r.stdout))
    assert doc["baseline"] == "base.json"  # relative to the policy file, here in the working directory
    status = {(c["path"], res["rule"]): res["status"] for c in doc["captures"] for res in c["results"]}
    assert status[("soak.pcap", "baseline.stall_time")] == "fail"
    assert status[("soak.pcap", "baseline.cause_count")] == "fail"
    assert status[("bulk.pcap", "baseline.stall_time")] == status[("bulk.pcap", "baseline.cause_count")] == "pass"
    # An analyze -f json document serves as a baseline too, and --baseline overrides the policy's.
    subprocess.run([shutil.which("stallscope"), "analyze", "soak.pcap", "-f", "json", "-o", "analysis.json"],
                   cwd=tmp_path, check=True, capture_output=True)
    r = run("soak.pcap", "--policy", "policy.toml", "--baseline", "analysis.json", cwd=tmp_path)
    assert r.returncode == ExitCode.OK, r.stdout


@pytest.mark.slow
def test_outputs_are_deterministic_and_o_writes_what_stdout_would(tmp_path: Path) -> None:
    args = ["fixtures/nagle_4k_jumbo.pcap", "fixtures/burst_loss.pcap", "--forbid", "nagle_delayed_ack"]
    for fmt in ("json", "junit", "markdown", "table"):
        a = run(*args, "-f", fmt)
        b = run(*args, "-f", fmt, "-o", str(tmp_path / f"out.{fmt}"))
        assert a.returncode == b.returncode == ExitCode.VERDICT_FAILED
        assert b.stdout == "" and (tmp_path / f"out.{fmt}").read_text() == a.stdout
    r = run(*args, "--junit", "/dev/full")
    assert r.returncode == ExitCode.ENVIRONMENT and "cannot write /dev/full" in r.stderr
    r = run(*args, "--markdown", str(tmp_path / "no" / "such" / "dir.md"))
    assert r.returncode == ExitCode.ENVIRONMENT and "cannot write" in r.stderr


# --- a hostile capture name ---------------------------------------------------------------------------

HOSTILE = 'a<b>&"q\'|[bold]*x*`$(touch pwned)`;%2C,:\x1b[31m\nz.pcap'
SHOWN = 'a<b>&"q\'|[bold]*x*`$(touch pwned)`;%2C,:\\x1b[31m\\nz.pcap'  # control characters made visible


def test_a_hostile_capture_name_is_escaped_in_every_output(tmp_path: Path) -> None:
    (tmp_path / HOSTILE).write_bytes((FIX / "nagle_4k_jumbo.pcap").read_bytes())
    (tmp_path / "junk.pcap").write_bytes(b"junk")
    common = ["--forbid", "nagle_delayed_ack", "--junit", "j.xml", "--markdown", "s.md"]
    outs = {}
    for fmt in ("table", "json"):
        r = run(".", *common, "-f", fmt, cwd=tmp_path, env={"GITHUB_ACTIONS": "true"})
        assert r.returncode == ExitCode.INPUT_REJECTED, r.stderr
        outs[fmt] = r
    assert not (tmp_path / "pwned").exists()  # nothing went through a shell

    # JSON keeps the name exactly.
    doc = valid_json(json.loads(outs["json"].stdout))
    assert [c["path"] for c in doc["captures"]] == [HOSTILE, "junk.pcap"]

    # Terminal: no escape sequence, no markup read, no line broken by the name.
    table = outs["table"].stdout
    assert "\x1b" not in table and SHOWN in table
    assert f"FAIL {SHOWN}: stream 0" in table

    # JUnit: schema-valid, and the name reads back as the visible form.
    xml = valid_junit(tmp_path / "j.xml")
    raw = (tmp_path / "j.xml").read_text()
    assert "\x1b" not in raw and "<b>" not in raw and "&lt;b&gt;&amp;&quot;q" in raw
    assert [s.name for s in xml] == [SHOWN, "junk.pcap"]
    assert all(c.classname == SHOWN for c in next(iter(xml)))

    # Markdown: HTML, pipes, brackets, emphasis and backticks as character references.
    md = (tmp_path / "s.md").read_text()
    for bad in ("<b>", "[bold]", "*x*", "`$(", "\x1b", "|[", "z.pcap\n|"):
        assert bad not in md, bad
    cell = "a&lt;b&gt;&amp;&quot;q&#x27;&#124;&#91;bold&#93;&#42;x&#42;&#96;$(touch pwned)&#96;;%2C,:&#92;x1b&#91;31m&#92;nz.pcap"
    assert f"| {cell} | FAIL |" in md
    row = next(ln for ln in md.splitlines() if ln.startswith(f"| {cell} | stream 0"))
    assert row.count(" | ") == 4  # five cells: the pipe in the name does not split one

    # GitHub annotations: one line each, the property escaped (% , : CR LF), no raw control character.
    notes = [ln for ln in outs["table"].stderr.splitlines() if ln.startswith("::")]
    assert len(notes) == 2 and all("\x1b" not in n for n in notes)
    prop = "a<b>&\"q'|[bold]*x*`$(touch pwned)`;%252C%2C%3A\\x1b[31m\\nz.pcap"
    assert notes[0].startswith(f"::error file={prop},title=stallscope check%3A forbid_causes::")
    assert notes[1] == "::error file=junk.pcap,title=stallscope check%3A capture not read::" \
                       "rejected: not a pcap/pcapng file: magic 6a 75 6e 6b"


def test_jobs_gives_the_same_verdicts_in_the_same_order(tmp_path: Path) -> None:
    """`check --jobs 2` analyses the captures in worker processes: the JSON and the exit status
    are those of the run in one process, damaged and rejected captures included."""
    cut = _cut(tmp_path)
    junk = tmp_path / "junk.pcap"
    junk.write_text("this is not a capture\n")
    files = [str(FIX / "clean_bulk.pcap"), str(junk), str(FIX / "nagle_4k_jumbo.pcap"), str(cut),
             str(FIX / "burst_loss.pcap")]
    one = run(*files, "--forbid", "nagle_delayed_ack", "-f", "json")
    two = run(*files, "--forbid", "nagle_delayed_ack", "-f", "json", "--jobs", "2")
    assert one.returncode == two.returncode == ExitCode.INPUT_REJECTED
    assert one.stdout == two.stdout
    assert [c["verdict"] for c in json.loads(two.stdout)["captures"]] == ["pass", "error", "fail", "error", "pass"]
