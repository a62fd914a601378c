"""The batch tables' layout: docs/batch.md lists every column of stallscope.analyzers.batch.COLUMNS
with its type, in order; the Parquet files written have exactly those types; every column holds a
value somewhere over the fixtures (none is wired to null by mistake); the page's Polars examples run."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl
import pytest

from stallscope.analyzers import batch

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "batch.md"
FIXTURES = REPO / "fixtures"
# Captures that between them set every column: stalls of several causes, connection findings
# (mss_mismatch, pmtu_blackhole, jumbo slots), one damaged and one rejected file.
SAMPLE = ["nagle_4k_jumbo.pcap", "burst_loss.pcap", "mss_mismatch.pcap", "pmtu_blackhole.pcap", "jumbo_slots.pcap",
          "slow_reader.pcap", "idle_app.pcap"]
# Columns that may be null in every row of the sample: a finding's detail is null today.
ALWAYS_NULL_OK = {("findings", "detail")}


def documented(table: str) -> list[tuple[str, str]]:
    text = DOC.read_text()
    m = re.search(rf"^### `{table}\.parquet`.*?\n(.*?)(?=^#)", text, re.S | re.M)
    assert m, f"docs/batch.md has no section for {table}.parquet"
    rows = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`"):
            rows.append((cells[0].strip("`"), cells[1]))
    return rows


@pytest.mark.parametrize("table", batch.TABLES)
def test_every_column_is_documented_with_its_type_in_order(table: str) -> None:
    assert documented(table) == [(name, dtype) for name, dtype, _ in batch.COLUMNS[table]]


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("schema")
    caps = root / "caps"
    caps.mkdir()
    for name in SAMPLE:
        os.symlink(FIXTURES / name, caps / name)
    data = (FIXTURES / "clean_bulk.pcap").read_bytes()
    (caps / "cut.pcap").write_bytes(data[: len(data) // 3])
    (caps / "junk.pcap").write_bytes(b"\0" * 64)
    result = batch.run_batch(batch.expand_paths([caps]), jobs=2)
    result.write_parquet(root / "results")
    return root


@pytest.mark.parametrize("table", batch.TABLES)
def test_written_tables_have_the_declared_types_and_no_dead_column(written: Path, table: str) -> None:
    df = pl.read_parquet(written / "results" / f"{table}.parquet")
    assert dict(df.schema) == batch.schema(table)
    assert df.height > 0
    for name in df.columns:
        if (table, name) not in ALWAYS_NULL_OK:
            assert df[name].null_count() < df.height, f"{table}.{name} is null in every row"
    keys = batch.SORT_KEYS[table]
    assert df.select(keys).is_duplicated().sum() == 0, "the key is not unique"
    assert df.equals(df.sort(keys)), "rows are not in key order"


def test_the_pages_polars_examples_run(written: Path, monkeypatch) -> None:
    text = DOC.read_text()
    section = text[text.index("## Reading them with Polars"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(written)
    exec(compile(code, "docs/batch.md", "exec"), {})
