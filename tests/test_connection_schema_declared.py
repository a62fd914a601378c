"""The connection table's columns are declared once, natively (native/src/bindings/flows.rs,
`_native.connection_columns()`): the table holds exactly the declared columns in the declared
order, analyzers/connection_schema.py takes its names and dtypes from the declaration, the column
tables of docs/flows-json.md are its rendering, and docs/schemas/flows.schema.json lists the same
fields with matching JSON types."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from stallscope import _native
from stallscope.analyzers import connection_schema as cs

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "flows-json.md"
JSON_SCHEMA = REPO / "docs" / "schemas" / "flows.schema.json"
FIXTURE = REPO / "fixtures" / "nagle_4k_jumbo.pcap"


def declared() -> list[tuple]:
    return _native.connection_columns()


def test_the_table_holds_exactly_the_declared_columns_in_order(tmp_path: Path) -> None:
    names = [c[0] for c in declared()]
    assert len(names) == len(set(names))
    table = _native.connection_table(str(FIXTURE))
    assert table["summary"]["error"] is None and table["summary"]["connections"] > 0
    assert list(table["columns"]) == names
    # Also when nothing could be read: the empty table has the same columns.
    rejected = _native.connection_table(str(tmp_path / "missing.pcap"))
    assert rejected["summary"]["error"]["rejected"]
    assert list(rejected["columns"]) == names and not any(rejected["columns"].values())


def test_declared_dtypes_hold_the_values() -> None:
    """Each column's values fit its declared dtype and nullability (a strict Polars build)."""
    columns = _native.connection_table(str(FIXTURE))["columns"]
    df = pl.DataFrame(columns, schema=cs.table_schema(), strict=True)
    for name, _, nullable, _, _ in declared():
        if not nullable:
            assert df[name].null_count() == 0, name


def test_per_direction_columns_are_declared_once_for_both_sides() -> None:
    cols = [cs.Column(*c) for c in declared()]
    assert cs.DIRECTIONS == ("orig", "resp")
    per_side = {s: [(c.name.removeprefix(f"{s}_"), c.dtype, c.nullable, c.meaning) for c in cols if c.side == s]
                for s in cs.DIRECTIONS}
    assert per_side["orig"] == per_side["resp"] and per_side["orig"]
    assert all(c.name.startswith(f"{c.side}_") for c in cols if c.side)
    # Connection-level columns first, then each side's block.
    sides = [c.side for c in cols]
    n = len(cs.CONNECTION_COLUMNS)
    assert sides == [None] * n + [s for s in cs.DIRECTIONS for _ in cs.DIRECTION_COLUMNS]


def test_every_column_has_a_meaning_and_a_known_dtype() -> None:
    for name, dtype, _, meaning, _ in declared():
        assert meaning.strip(), f"{name} has no meaning"
        assert "|" not in meaning and "\n" not in meaning, f"{name}: the meaning must fit a table cell"
        assert isinstance(getattr(pl, dtype)(), pl.DataType), name


def test_the_python_schema_is_the_declaration() -> None:
    assert cs.column_names() == [c[0] for c in declared()]
    assert {n: str(t) for n, t in cs.table_schema().items()} == {
        n: str(getattr(pl, d)()) for n, d, *_ in declared()
    }
    top = [(n, d) for n, d, _, _, side in declared() if side is None]
    assert list(cs.CONNECTION_COLUMNS.items()) == top
    orig = [(n.removeprefix("orig_"), d) for n, d, _, _, side in declared() if side == "orig"]
    assert list(cs.DIRECTION_COLUMNS.items()) == orig


def test_docs_column_tables_are_the_rendering_of_the_declaration() -> None:
    """A column declared natively without re-rendering docs/flows-json.md fails here."""
    page = DOC.read_text()
    assert cs.documented_tables(page) == cs.docs_tables(), (
        "docs/flows-json.md is out of date: python -m stallscope.analyzers.connection_schema docs/flows-json.md"
    )
    assert cs.render_docs(page) == page


def test_render_docs_replaces_only_the_tables() -> None:
    page = DOC.read_text()
    stale = page.replace("| `ip_version` | int | 4 or 6 |\n", "")
    assert stale != page and cs.documented_tables(stale) != cs.docs_tables()
    assert cs.render_docs(stale) == page


_JSON_TYPE = {"int": "integer", "float": "number", "bool": "boolean", "string": "string"}


@pytest.mark.parametrize("definition,side", [("connection", None), ("direction", "orig")])
def test_json_schema_lists_the_declared_fields(definition: str, side: str | None) -> None:
    schema = json.loads(JSON_SCHEMA.read_text())["$defs"][definition]
    cols = [cs.Column(*c) for c in declared() if c[4] == side]
    fields = [c.name.removeprefix(f"{side}_") if side else c.name for c in cols]
    extra = list(cs.DIRECTIONS) if side is None else []
    assert list(schema["properties"]) == fields + extra
    assert schema["required"] == fields + extra and schema["additionalProperties"] is False
    for field, c in zip(fields, cols):
        types = schema["properties"][field]["type"]
        assert _JSON_TYPE[cs.json_type(c).removesuffix(" or null")] in types, field
        if c.nullable:
            assert "null" in types, field
