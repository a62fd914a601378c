"""Renders tables of results in the one shared set of formats (table, json, csv, parquet).

Analyzers and readers return data; only this module (and the report builders) write it out.
Polars and Rich are imported when a frame is rendered, not with the module: commands that only
write JSON (scripted, and timed against peers) skip their import cost.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stallscope.untrusted_text import printable, terminal

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console


# Width given to Rich when the output is not a terminal: tables keep their natural width, so no
# cell is folded mid-word (a terminal still gets its own width).
PIPE_WIDTH = 100_000


# Above this many rows a table is written as plain aligned columns: Rich measures every cell
# (a 2,500-packet `decode -f table` took 21 s), and a long listing is read with grep and less.
RICH_TABLE_MAX_ROWS = 1000
class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    parquet = "parquet"


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN
        return None
    return value


def dumps_json(document: Any) -> str:
    """Stable JSON: sorted keys are NOT used (field order is part of the documented schema). Written
    by orjson (NaN and infinities as null, as _jsonable does): the standard library's indenting
    encoder is pure Python, 3.8 s of a 20,000-connection analysis's 115 MB against orjson's 0.2 s.
    A document orjson refuses (an integer beyond 64 bits) is written by the standard library."""
    import orjson

    try:
        return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY).decode()
    except TypeError:
        return json.dumps(_jsonable(document), indent=2, ensure_ascii=False)


def write_json(document: Any, output: Path | None = None) -> None:
    """Write one JSON document to `output`, or standard output when None."""
    text = dumps_json(document) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        Path(output).write_text(text)


def render_frame(
    df: pl.DataFrame,
    fmt: OutputFormat,
    *,
    output: Path | None = None,
    title: str | None = None,
    json_document: dict | None = None,
    console: Console | None = None,
) -> None:
    """Write `df` in `fmt`. For json, `json_document` (if given) is the whole document and the
    rows go under its "rows" key; callers pass the whole document they documented (docs/cli-json.md:
    a `schema` name first, row lists under "rows")."""
    if fmt is OutputFormat.parquet:
        if output is None:
            raise ValueError("--format parquet needs an output file (-o FILE)")
        write_parquet(df, output)
        return
    if fmt is OutputFormat.csv:
        text = df.write_csv()
    elif fmt is OutputFormat.json:
        write_json(json_document if json_document is not None else {"rows": df.to_dicts()}, output)
        return
    else:
        if console is None and df.height > RICH_TABLE_MAX_ROWS and _flat(df):
            _write_text(plain_table(df, title), output)
            return
        from rich.table import Table

        handle = None
        if console is None:
            handle = None if output is None else open(output, "w", encoding="utf-8")
            # On a terminal the terminal's width; piped or to a file the table's natural width, so
            # no cell is folded mid-word.
            console = table_console(handle)
        table = Table(title=title, show_lines=False)
        for name in df.columns:
            table.add_column(name, overflow="fold")
        for row in df.iter_rows():
            # Cells are data (a capture's file name, addresses): never Rich markup, no control characters.
            table.add_row(*("" if v is None else terminal(v) for v in row))
        try:
            console.print(table)
        finally:
            if handle is not None:
                handle.close()
        return
    if output is None:
        sys.stdout.write(text)
    else:
        Path(output).write_text(text)


def table_console(file: Any = None, **kwargs: Any) -> Console:
    """A Rich console for tables: the terminal's width on a terminal, else wide enough that every
    table keeps its natural width (piped or written to a file, no cell breaks mid-word)."""
    from rich.console import Console

    target = file if file is not None else sys.stdout
    try:
        tty = target.isatty()
    except (ValueError, AttributeError):
        tty = False
    if not tty:
        kwargs.setdefault("width", PIPE_WIDTH)
    return Console(file=target, **kwargs)


def write_parquet(df: pl.DataFrame, path: Path) -> None:
    """Polars' writer reports a full disk as a parquet "transport error" with no errno: encode in
    memory, then write the bytes from Python, so a failed write is an OSError naming the path."""
    import io

    buf = io.BytesIO()
    df.write_parquet(buf)
    with open(path, "wb") as out:
        out.write(buf.getbuffer())


def _flat(df: "pl.DataFrame") -> bool:
    """No list or struct column: every cell has one text form."""
    return not any(dt.is_nested() for dt in df.dtypes)


def plain_table(df: "pl.DataFrame", title: str | None = None) -> str:
    """`df` as aligned text columns under a header line, two spaces apart; None is empty, control
    characters (a capture's text) escaped."""
    import polars as pl

    text = df.select(pl.col(c).cast(pl.Utf8).fill_null("") for c in df.columns)
    cells = [[printable(v) for v in text[c].to_list()] for c in df.columns]
    names = [printable(c) for c in df.columns]
    widths = [max([len(n), *map(len, col)]) for n, col in zip(names, cells)]
    lines = [title] if title else []
    lines.append("  ".join(n.ljust(w) for n, w in zip(names, widths)).rstrip())
    lines.extend("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in zip(*cells))
    return "\n".join(lines) + "\n"


def _write_text(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
    else:
        Path(output).write_text(text, encoding="utf-8")
