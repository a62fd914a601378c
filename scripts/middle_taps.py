"""Write a tap in the middle of the path for every capture pair in a directory (NAME.pcap at the
sender, NAME.receiver.pcap at the receiver, NAME.json its capture truth), into another directory
that `stallscope score --corpus` reads: `make rescore` scores them beside the two real taps.

    python3 scripts/middle_taps.py CAPTURES OUT [--at 0.5] [--after-loss]

Each packet is placed `--at` of its own transit along the way; a packet one tap saw and the other
never did is kept where a tap before its loss would see it, or left out (`--after-loss`: a tap past
the hop that dropped it). tests/pcap_edit.py `middle_tap` does the work.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import pcap_edit  # noqa: E402  (the tests' capture editor)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("captures", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--at", type=float, default=0.5, help="share of the way from the sender (0-1)")
    ap.add_argument("--after-loss", action="store_true", help="leave out packets only one tap saw")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    written = 0
    for truth in sorted(args.captures.glob("*.json")):
        name = truth.name[: -len(".json")]
        sender, receiver = args.captures / f"{name}.pcap", args.captures / f"{name}.receiver.pcap"
        if not (sender.exists() and receiver.exists()):
            continue
        cap, _ = pcap_edit.middle_tap(pcap_edit.read(sender), pcap_edit.read(receiver), args.at, not args.after_loss)
        cap.write(args.out / f"{name}.pcap")
        shutil.copy(truth, args.out / truth.name)
        written += 1
    print(f"{written} middle taps in {args.out}")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
