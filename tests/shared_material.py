"""The shared material beside the repository (the project's layout: ../shared): the public captures
(../shared/fixtures/public or $STALLSCOPE_PUBLIC_FIXTURES) and the published tables
(../shared/reference or $STALLSCOPE_REFERENCE). Tests that need them skip, with the reason, when
they are absent, so a checkout elsewhere runs the rest of the suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PUBLIC = Path(os.environ.get("STALLSCOPE_PUBLIC_FIXTURES") or REPO.parent / "shared" / "fixtures" / "public")
AVAILABLE = PUBLIC.is_dir()
requires_public = pytest.mark.skipif(
    not AVAILABLE, reason=f"public fixtures not found at {PUBLIC} (set STALLSCOPE_PUBLIC_FIXTURES)"
)

# The published tables the reproductions are held to (the simulator resolves them the same way).
from stallscope.simulate.reproductions import reference_dir  # noqa: E402

REFERENCE = reference_dir()
requires_reference = pytest.mark.skipif(
    not REFERENCE.is_dir(), reason=f"published tables not found at {REFERENCE} (set STALLSCOPE_REFERENCE)"
)
