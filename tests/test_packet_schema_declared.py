"""The packet table's columns, anomaly bits and not-a-row reasons are declared once, natively;
packets/schema.py adds a dtype and a meaning to each. Every native name has a meaning, no meaning
is left for a name the native side dropped, and docs/packet-schema.md is the rendering of both."""

from __future__ import annotations

from pathlib import Path

from stallscope import _native
from stallscope.packets import schema

REPO = Path(__file__).resolve().parents[1]


def test_columns_come_from_the_native_declaration_each_with_a_meaning() -> None:
    assert [(c.name, c.nullable) for c in schema.PACKET_COLUMNS] == [(n, nl) for n, _, nl in _native.packet_schema()]
    assert not [c.name for c in schema.PACKET_COLUMNS if not c.description]
    assert set(schema.COLUMN_MEANINGS) == set(schema.COLUMN_NAMES), "a meaning for a column that no longer exists"


def test_every_native_layout_has_a_polars_dtype() -> None:
    assert {kind for _, kind, _ in _native.packet_schema()} <= set(schema.DTYPE_OF_KIND)


def test_reasons_and_anomaly_bits_have_meanings_and_none_stale() -> None:
    not_tcp, not_decoded = _native.reason_names()
    assert list(schema.NOT_TCP_REASONS) == not_tcp and all(schema.NOT_TCP_REASONS.values())
    assert list(schema.NOT_DECODED_REASONS) == not_decoded and all(schema.NOT_DECODED_REASONS.values())
    assert set(schema._NOT_TCP_MEANINGS) == set(not_tcp) and set(schema._NOT_DECODED_MEANINGS) == set(not_decoded)
    assert set(schema.ANOMALY_MEANINGS) == set(schema.ANOMALY_BITS) == {n for _, n in _native.anomaly_names()}


def test_docs_are_the_rendering() -> None:
    assert (REPO / "docs" / "packet-schema.md").read_text() == schema.render_markdown()
