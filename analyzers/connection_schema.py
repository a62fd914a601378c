"""The schema of the connection table: one row per TCP connection (stream).

Connection-level columns come first, then every per-direction column twice, as `orig_<name>`
(sent by the initiator) and `resp_<name>` (sent by the responder), as in Zeek's conn.log.
Times are integer nanoseconds; windows are in bytes, scaled when `wscale_known`.

The columns are declared once, natively, beside the code that fills them
(native/src/bindings/flows.rs, `_native.connection_columns()`): name, Polars dtype name,
nullability and meaning, in table order. This module takes them from there, and renders the
column tables of docs/flows-json.md from them (`python -m stallscope.analyzers.connection_schema
docs/flows-json.md` rewrites those tables in place; tests/test_connection_schema_declared.py
holds that the page is up to date).
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, NamedTuple

from stallscope import _native

if TYPE_CHECKING:
    import polars as pl

# Types are Polars dtype names, resolved only when a DataFrame is built: the JSON path of
# `stallscope flows` never imports Polars (~85 ms of start-up).


class Column(NamedTuple):
    name: str  # as in the table: per-direction columns carry their side's prefix
    dtype: str  # Polars dtype name
    nullable: bool
    meaning: str
    side: str | None  # None for a connection-level column, else "orig" or "resp"


COLUMNS: tuple[Column, ...] = tuple(Column(*c) for c in _native.connection_columns())

DIRECTIONS: tuple[str, ...] = tuple(dict.fromkeys(c.side for c in COLUMNS if c.side))

# Connection-level column -> dtype name, in table order.
CONNECTION_COLUMNS: dict[str, str] = {c.name: c.dtype for c in COLUMNS if c.side is None}

# Per-direction column (without its side's prefix) -> dtype name, in table order.
DIRECTION_COLUMNS: dict[str, str] = {
    c.name.removeprefix(f"{c.side}_"): c.dtype for c in COLUMNS if c.side == DIRECTIONS[0]
}


def column_names() -> list[str]:
    """The whole table's column names, in column order (without the `file` column)."""
    return [c.name for c in COLUMNS]


def table_schema() -> dict[str, pl.DataType]:
    """Column name -> Polars dtype of the whole table, in column order (without the `file` column)."""
    import polars as pl

    return {c.name: getattr(pl, c.dtype)() for c in COLUMNS}


def empty_table() -> pl.DataFrame:
    import polars as pl

    return pl.DataFrame(schema=table_schema())


# The JSON type of each dtype, as docs/flows-json.md names it.
_JSON_TYPE = {"Boolean": "bool", "String": "string", "Float32": "float", "Float64": "float"}


def json_type(c: Column) -> str:
    """The field's type as docs/flows-json.md writes it: int, float, bool or string, `or null`."""
    base = _JSON_TYPE.get(c.dtype, "int" if re.fullmatch(r"U?Int\d+", c.dtype) else c.dtype)
    return f"{base} or null" if c.nullable else base


def _row(name: str, c: Column) -> str:
    return f"| `{name}` | {json_type(c)} | {c.meaning} |"


_HEADER = ["| field | type | meaning |", "|---|---|---|"]


def docs_tables() -> dict[str, str]:
    """docs/flows-json.md's column tables, by the heading of their section."""
    top = [_row(c.name, c) for c in COLUMNS if c.side is None]
    top.append(f"| {', '.join(f'`{s}`' for s in DIRECTIONS)} | object | per direction, below: "
               f"`{DIRECTIONS[0]}` = sent by the initiator |")
    side = [_row(c.name.removeprefix(f"{c.side}_"), c) for c in COLUMNS if c.side == DIRECTIONS[0]]
    return {
        "## `connections[]`": "\n".join([*_HEADER, *top]),
        f"### {' / '.join(f'`{s}`' for s in DIRECTIONS)}": "\n".join([*_HEADER, *side]),
    }


def _table_span(text: str, heading: str) -> tuple[int, int]:
    """Where the first table under `heading` (a whole line) starts and ends in `text`."""
    m = re.search(rf"^{re.escape(heading)}\n(?:(?!#).*\n)*?((?:\|.*\n)+)", text, re.M)
    if m is None:
        raise ValueError(f"no table under {heading!r}")
    return m.start(1), m.end(1)


def documented_tables(text: str) -> dict[str, str]:
    """The column tables as the page has them, by heading (compare with `docs_tables()`)."""
    out = {}
    for heading in docs_tables():
        start, end = _table_span(text, heading)
        out[heading] = text[start:end].rstrip("\n")
    return out


def render_docs(text: str) -> str:
    """`text` (docs/flows-json.md) with its column tables replaced by the rendering of the declaration."""
    for heading, table in docs_tables().items():
        start, end = _table_span(text, heading)
        text = text[:start] + table + "\n" + text[end:]
    return text


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m stallscope.analyzers.connection_schema docs/flows-json.md")
    with open(sys.argv[1], encoding="utf-8") as f:
        page = f.read()
    rendered = render_docs(page)
    if rendered != page:
        with open(sys.argv[1], "w", encoding="utf-8") as f:
            f.write(rendered)
