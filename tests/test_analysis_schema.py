"""The `stallscope.analysis/1` document against its JSON Schema (docs/schemas/analysis.schema.json)
and its documentation (docs/analysis-json.md): every fixture's analysis validates, the schema is
strict enough to reject a document with a required field missing or misspelt, its vocabularies are
the code's (causes, details, decoder reasons), and every field it names is described in the docs.
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from pathlib import Path

import jsonschema
import pcap_edit as pe
import pytest
from shared_material import AVAILABLE, PUBLIC, requires_public

from stallscope.analyzers.analyze import SCHEMA, Analysis, analyze_one
from stallscope.packets.schema import ANOMALY_BITS, NOT_DECODED_REASONS, NOT_TCP_REASONS
from stallscope.vocabulary import DETAILS, Cause

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
SCHEMA_FILE = REPO / "docs" / "schemas" / "analysis.schema.json"
DOC = REPO / "docs" / "analysis-json.md"
CAPTURES = sorted(FIXTURES.glob("*.pcap"))
PUBLIC_FILES = sorted(p for p in PUBLIC.rglob("*") if p.suffix in (".pcap", ".pcapng")) if AVAILABLE else []


@lru_cache(maxsize=None)
def schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text())


@lru_cache(maxsize=None)
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(), format_checker=jsonschema.FormatChecker())


def document(path: Path) -> dict:
    """The analysis as a script reads it (through JSON, so tuples are lists)."""
    return json.loads(json.dumps(Analysis([analyze_one(path)]).to_json()))


@lru_cache(maxsize=None)
def nagle_doc() -> str:
    return json.dumps(document(FIXTURES / "nagle_4k_jumbo.pcap"))


def errors(doc: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator().iter_errors(doc)]


def test_schema_is_valid_draft_2020_12() -> None:
    assert schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["properties"]["schema"] == {"const": SCHEMA}


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_every_fixture_analysis_validates(path: Path) -> None:
    doc = document(path)
    assert errors(doc) == []
    assert doc["files"][0]["connections"], "a fixture with no connection tests little"


@requires_public
@pytest.mark.parametrize("path", PUBLIC_FILES, ids=lambda p: p.relative_to(PUBLIC).as_posix())
def test_every_public_capture_analysis_validates(path: Path) -> None:
    assert errors(document(path)) == []


def test_damaged_rejected_and_empty_files_validate(tmp_path: Path) -> None:
    data, _ = pe.cut_mid_record(pe.read(FIXTURES / "burst_loss.pcap"), 0.5)
    (tmp_path / "cut.pcap").write_bytes(data)
    (tmp_path / "text.pcap").write_text("not a capture at all\n")
    pe.udp_icmp_only(tmp_path / "udp.pcap")
    docs = {name: document(tmp_path / name) for name in ("cut.pcap", "text.pcap", "udp.pcap")}
    assert [d["files"][0]["status"] for d in docs.values()] == ["damaged", "rejected", "ok"]
    for name, doc in docs.items():
        assert errors(doc) == [], name


# --- strictness ---------------------------------------------------------------------------------

# (path to an object in the nagle_4k_jumbo document, a required key in it)
REQUIRED = [
    ((), "schema"),
    (("files", 0), "status"),
    (("files", 0), "decode"),
    (("files", 0, "decode"), "tcp_packets"),
    (("files", 0, "notes", 0), "kind"),
    (("files", 0, "connections", 0), "top_cause"),
    (("files", 0, "connections", 0), "start_captured"),
    (("files", 0, "connections", 0, "vantage", "1"), "path_rtt_ns"),
    (("files", 0, "connections", 0, "directions", 1), "role"),
    (("files", 0, "connections", 0, "directions", 1, "profile"), "nagle"),
    (("files", 0, "connections", 0, "directions", 1, "profile"), "max_ip_len"),
    (("files", 0, "connections", 0, "directions", 1, "profile", "peer_delayed_ack"), "timer_ns"),
    (("files", 0, "connections", 0, "directions", 1, "profile", "stack"), "guess"),
    (("files", 0, "connections", 0, "stalls", -1), "cause"),
    (("files", 0, "connections", 0, "stalls", -1), "time_lost_ns"),
    (("files", 0, "connections", 0, "stalls", -1, "evidence"), "threshold_ns"),
    (("files", 0, "connections", 0, "stalls", -1, "alternatives", 0), "why"),
]


def _at(doc: dict, path: tuple) -> dict:
    for k in path:
        doc = doc[k]
    return doc


def _nagle_stall_last(doc: dict) -> dict:
    """Put a Nagle stall last, so that the paths above find one, with an alternative (the rule's
    own when it gives one, else the one a script would read)."""
    stalls = doc["files"][0]["connections"][0]["stalls"]
    stalls.sort(key=lambda s: (s["cause"] == "nagle_delayed_ack", bool(s["alternatives"])))
    if not stalls[-1]["alternatives"]:
        stalls[-1]["alternatives"] = [{"cause": "undetermined", "detail": None, "confidence": 0.45, "why": "x"}]
    return doc


@pytest.mark.parametrize("mode", ["missing", "misspelt"])
@pytest.mark.parametrize(("path", "key"), REQUIRED, ids=[k for _, k in REQUIRED])
def test_a_required_field_missing_or_misspelt_fails(path: tuple, key: str, mode: str) -> None:
    doc = _nagle_stall_last(json.loads(nagle_doc()))
    assert errors(doc) == []
    obj = _at(doc, path)
    assert key in obj, (path, key)
    value = obj.pop(key)
    if mode == "misspelt":
        obj[key[:-1] + key[-1].upper() if key[-1].isalpha() else key + "_"] = value
    assert errors(doc), f"{mode} {'/'.join(map(str, path))}/{key} still validates"


@pytest.mark.parametrize(("path", "key", "value"), [
    (("files", 0), "status", "fine"),
    (("files", 0, "connections", 0, "stalls", -1), "cause", "nagle"),
    (("files", 0, "connections", 0, "stalls", -1), "detail", "buffer-tearing"),
    (("files", 0, "connections", 0, "stalls", -1), "confidence", 1.5),
    (("files", 0, "connections", 0, "stalls", -1), "start_ns", "1795319002520875813"),
    (("files", 0, "notes", 0), "kind", "payload_cut"),
    (("files", 0, "connections", 0, "directions", 1), "dir", 2),
    (("files", 0, "connections", 0, "vantage", "1"), "from", "syn"),
])
def test_a_value_outside_the_vocabulary_fails(path: tuple, key: str, value) -> None:
    doc = _nagle_stall_last(json.loads(nagle_doc()))
    _at(doc, path)[key] = value
    assert errors(doc)


def test_a_rejected_file_with_connections_fails() -> None:
    doc = json.loads(nagle_doc())
    f = doc["files"][0]
    f["status"], f["error"] = "rejected", {"kind": "not_a_capture", "offset": 0, "message": "x"}
    assert errors(doc)
    f.update(decode={}, notes=[], connections=[])
    assert errors(doc) == []


# --- the schema's vocabularies are the code's ---------------------------------------------------


def test_cause_and_detail_vocabularies_are_the_taxonomy() -> None:
    defs = schema()["$defs"]
    assert set(defs["cause"]["enum"]) == {c.value for c in Cause} | {"undetermined"}
    assert set(defs["detail"]["enum"]) - {None} == {d for v in DETAILS.values() for d in v}


def test_decoder_vocabularies_are_the_decoders() -> None:
    props = schema()["$defs"]["decode"]["properties"]
    assert set(props["not_tcp"]["propertyNames"]["enum"]) == set(NOT_TCP_REASONS)
    assert set(props["not_decoded"]["propertyNames"]["enum"]) == set(NOT_DECODED_REASONS)
    assert set(props["anomalies"]["propertyNames"]["enum"]) == set(ANOMALY_BITS)


# --- the documentation describes every field ----------------------------------------------------


def _property_names(node, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        for k, v in node.get("properties", {}).items():
            out.add(k)
            _property_names(v, out)
        for k, v in node.items():
            if k != "properties":
                _property_names(v, out)
    elif isinstance(node, list):
        for v in node:
            _property_names(v, out)
    return out


def _documented() -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", DOC.read_text()))


def test_every_schema_field_is_documented() -> None:
    missing = sorted(_property_names(schema(), set()) - _documented())
    assert missing == [], f"fields in the schema but not in docs/analysis-json.md: {missing}"


def test_every_cause_note_kind_and_detail_is_documented() -> None:
    defs = schema()["$defs"]
    words = (set(defs["cause"]["enum"]) | set(defs["detail"]["enum"]) | set(defs["note"]["properties"]["kind"]["enum"])) - {None}
    missing = sorted(words - _documented())
    assert missing == [], missing


@pytest.mark.parametrize("name", ["nagle_4k_jumbo.pcap", "burst_loss.receiver.pcap", "pmtu_icmp.pcap"])
def test_every_profile_field_an_analysis_gives_is_documented(name: str) -> None:
    """The profile is where the analysis grows (the schema leaves it open): a new field fails here
    until it is described on the page."""
    doc = document(FIXTURES / name)
    given = {k for c in doc["files"][0]["connections"] for d in c["directions"] for k in d["profile"]}
    missing = sorted(given - _documented() - set(schema()["$defs"]["profile"]["properties"]))
    assert missing == [], f"profile fields not in docs/analysis-json.md and the schema: {missing}"
    assert given <= _documented(), sorted(given - _documented())


def test_every_per_packet_column_is_documented() -> None:
    f = analyze_one(FIXTURES / "clean_bulk.pcap")
    doc = DOC.read_text()
    table = doc[doc.index("## The per-packet table"):]
    documented = set(re.findall(r"`([a-z_]+)`", table))
    missing = sorted((set(f.state.columns) | {"file"}) - documented)
    assert missing == [], missing
    # In the documented order (the first column of each row names the columns in table order).
    rows = [re.findall(r"`([a-z_]+)`", line.split("|")[1]) for line in table.splitlines() if line.startswith("| `")]
    assert [c for r in rows for c in r] == list(f.state.columns) + ["file"]


def test_doc_example_is_a_fragment_of_a_real_document() -> None:
    """The example's figures are the fixture's (so the page does not drift from the analyzer)."""
    doc = DOC.read_text()
    example = doc[doc.index("```json"):]
    real = json.loads(nagle_doc())
    f = real["files"][0]
    assert f'"records": {f["decode"]["records"]}' in example
    assert f'"payload_truncated": {f["decode"]["anomalies"]["payload_truncated"]}' in example
    stall = next(s for s in f["connections"][0]["stalls"] if s["cause"] == "nagle_delayed_ack")
    assert f'"releasing_ack_frame": {stall["evidence"]["releasing_ack_frame"]}' in example
    assert f'"releasing_ack_delay_ns": {stall["evidence"]["releasing_ack_delay_ns"]}' in example
    assert copy.deepcopy(real)["schema"] == SCHEMA
