"""Every command's JSON, produced by the installed console script, against its JSON Schema under
docs/schemas/, and the shared shape (docs/cli-json.md): an object whose first key is `schema`,
naming the document and its version as "stallscope.NAME/N", with a table's rows under `rows`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "docs" / "schemas"
FIX = REPO / "fixtures"
CLEAN = str(FIX / "clean_bulk.pcap")
NAGLE = str(FIX / "nagle_4k_jumbo.pcap")

# schema file -> the command lines whose -f json output it describes
COMMANDS: dict[str, list[list[str]]] = {
    "analysis": [["analyze", "-f", "json", CLEAN, NAGLE]],
    "flows": [["flows", "-f", "json", CLEAN, NAGLE]],
    "check": [["check", "-f", "json", "--forbid", "nagle_delayed_ack", CLEAN]],
    "packets": [["decode", "-f", "json", CLEAN], ["decode", "-f", "json", "-c", "frame,ts_ns,sack_left", NAGLE]],
    "simulation": [["simulate", "bulk", "--bytes", "200000", "-f", "json"],
                   ["simulate", "bulk", "--bytes", "200000", "--loss", "0.02", "--personality", "linux", "-f", "json"],
                   ["simulate", "bulk", "--preset", "kung-morris-epd", "--bytes", "300000", "-f", "json"]],
    "naglemark": [["simulate", "naglemark", "--responses", "30", "-f", "json"]],
    "reproductions": [["reproduce", "--list", "-f", "json"]],
    "reproduction": [["reproduce", "moldeklev-appendix-a", "-f", "json"]],
    "scenarios": [["capture", "list", "-f", "json"]],
    "score": [["score", "-f", "json", NAGLE, str(FIX / "nagle_4k_jumbo.json")]],
    "presets": [["simulate", "bulk", "--preset", "list", "-f", "json"]],
}
# Written by commands that need root and network namespaces; their documents are checked from the
# files those commands wrote into fixtures/ (capture scenario) or from a constructed summary.
NEEDS_ROOT = {"capture_truth", "live_capture"}


@lru_cache(maxsize=None)
def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def run_json(args: list[str]) -> dict:
    exe = shutil.which("stallscope")
    assert exe, "the stallscope console script is not on PATH"
    r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_every_schema_file_is_exercised() -> None:
    files = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    assert files == set(COMMANDS) | NEEDS_ROOT


def check_shape(doc: dict, name: str) -> None:
    assert next(iter(doc)) == "schema"
    assert re.fullmatch(r"stallscope\.[a-z_]+/\d+", doc["schema"]), doc["schema"]
    assert validator(name).schema["properties"]["schema"]["const"] == doc["schema"]
    lists = [k for k, v in doc.items() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)]
    # A document that is a table keeps it under "rows"; the others hold named parts (files, stalls).
    assert not {"reproductions", "scenarios", "items", "entries"} & set(lists)


@pytest.mark.parametrize("name,args", [(n, a) for n, cmds in COMMANDS.items() for a in cmds],
                         ids=lambda v: v if isinstance(v, str) else " ".join(v[:3]))
def test_command_json_is_valid_against_its_schema(name: str, args: list[str]) -> None:
    doc = run_json(args)
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    check_shape(doc, name)


def test_capture_truth_documents_written_by_capture_scenario_are_valid() -> None:
    truths = [p for p in FIX.glob("*.json") if json.loads(p.read_text()).get("schema") == "stallscope.capture_truth/1"]
    assert truths
    for p in truths:
        doc = json.loads(p.read_text())
        assert not list(validator("capture_truth").iter_errors(doc)), p
        check_shape(doc, "capture_truth")


def test_live_capture_document_shape() -> None:
    from stallscope.capture.live import LiveSummary

    summary = LiveSummary(interface="lo", netns=None, files=["cap.pcap0", "cap.pcap1"], packets=10,
                          dropped_by_kernel=0, dropped_by_interface=0)
    doc = {"schema": "stallscope.live_capture/1", **summary.to_json()}
    assert not list(validator("live_capture").iter_errors(doc))


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_schemas_reject_a_document_without_its_schema_key(name: str) -> None:
    doc = run_json(COMMANDS[name][0])
    doc.pop("schema")
    assert list(validator(name).iter_errors(doc))
