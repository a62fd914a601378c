"""JSON output (stallscope/output.py): orjson writes it, with the standard library's text for
what both can write, and nothing it refuses is lost."""

from __future__ import annotations

import json

from stallscope.output import dumps_json


def test_json_text_is_the_standard_librarys_for_ordinary_documents() -> None:
    doc = {"schema": "x/1", "rows": [{"b": 1, "a": 0.25, "name": "é \u2028 \x00", "none": None, "t": (1, 2)}]}
    assert dumps_json(doc) == json.dumps({**doc, "rows": [{**doc["rows"][0], "t": [1, 2]}]}, indent=2,
                                         ensure_ascii=False)


def test_nan_and_infinity_are_null_and_numpy_scalars_are_numbers() -> None:
    import numpy as np

    assert json.loads(dumps_json({"a": float("nan"), "b": float("inf"), "c": np.float64(0.5), "d": np.int64(7)})) == {
        "a": None, "b": None, "c": 0.5, "d": 7}


def test_what_orjson_refuses_is_written_by_the_standard_library() -> None:
    """Integers beyond 64 bits (orjson's limit) and integer keys keep their values."""
    assert json.loads(dumps_json({"big": 2 ** 70, 3: "x"})) == {"big": 2 ** 70, "3": "x"}
