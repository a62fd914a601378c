"""The type stub declares exactly what the Rust module exports."""

import ast
from pathlib import Path

import stallscope
from stallscope import _native


def test_stub_names_match_the_native_module():
    stub = Path(stallscope.__file__).with_name("_native.pyi")
    tree = ast.parse(stub.read_text())
    declared = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    exported = {n for n in dir(_native) if not n.startswith("_")}
    assert declared == exported
