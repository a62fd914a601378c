"""Emulator process entry: `python -m stallscope.capture.emulator CONFIG.json STATS.json [IF_IN IF_OUT]`.

Prints "ready" once both ports are open; on SIGTERM/SIGINT writes its counts to STATS.json and exits.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from stallscope.capture.emulator.bridge import Bridge
from stallscope.capture.emulator.config import LinkConfig


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 4):
        print(__doc__, file=sys.stderr)
        return 2
    config = LinkConfig.from_json(json.loads(Path(argv[0]).read_text()))
    stats_path = Path(argv[1])
    ifs = (argv[2], argv[3]) if len(argv) == 4 else ("l0", "l1")
    stop = False

    def _stop(signum, frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    bridge = Bridge(ifs, config)
    bridge.open()
    print("ready", flush=True)
    try:
        bridge.run(lambda: stop)
    finally:
        bridge.close()
        stats_path.write_text(json.dumps(bridge.stats(), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
