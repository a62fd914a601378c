"""The installed package is assembled from several top-level folders (pyproject.toml's package-dir):
setuptools cannot discover packages under that mapping, so each is listed by hand. A folder left
off installs nothing of it, and only a regular install (not the editable one the tests run from)
fails, at its first import."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_and_mapped_in_pyproject() -> None:
    setup = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed, mapped = set(setup["packages"]), setup["package-dir"]
    tops = {name: folder for name, folder in mapped.items() if name.count(".") == 1 or name == "stallscope"}
    found = set()
    for name, folder in tops.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder)
            found.add(".".join([name, *rel.parts]))
    assert found - listed == set(), "package folders missing from [tool.setuptools] packages"
    assert listed - found == set(), "listed packages with no folder"
    for name in listed:
        parent = max((n for n in mapped if name == n or name.startswith(n + ".")), key=len)
        folder = REPO / mapped[parent] / Path(*name[len(parent):].strip(".").split(".") if name != parent else ())
        # (setuptools finds an unmapped package in its nearest mapped parent's folder)
        assert (folder / "__init__.py").is_file(), f"{name}: no {folder.relative_to(REPO)}/__init__.py"
