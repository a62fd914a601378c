"""An application that pauses: writes `burst_bytes`, goes idle for `pause_ms`, repeats.

The reading side is the bulk server; the idle gaps are the application's, not the network's.
"""

from __future__ import annotations

from typing import Any

from stallscope.capture.workloads import bulk
from stallscope.capture.workloads.common import main


def client(spec: dict[str, Any]) -> dict[str, Any]:
    spec = {"burst_bytes": 64 * 1024, "pause_ms": 300, "write_size": 16 * 1024, **spec}
    return bulk.client(spec)


if __name__ == "__main__":
    main({"server": bulk.server, "client": client})
