"""Where the public captures are: ../shared/fixtures/public beside the repository (the project's
layout), or $STALLSCOPE_PUBLIC_FIXTURES. Tests that need them skip, with this reason, when the
folder is absent, so a checkout elsewhere runs the rest of the suite."""

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
