"""Screenshots of the HTML report for docs/report.md, taken with Debian's chromium headless
(through Debian's chromedriver; scripts/install-deps.sh installs both).

    python3 scripts/report_screenshots.py            # writes docs/report-<capture>.png

Each is the top of the report of one bundled capture (header, index, the worst connection's card,
findings and graphs), 1280 px wide.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CAPTURES = ["nagle_4k_jumbo", "atm_small_buffer"]


def driver(width: int, height: int):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or chromedriver is None:
        sys.exit("needs Debian's chromium and chromium-driver (scripts/install-deps.sh as root)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--hide-scrollbars",
                f"--window-size={width},{height}", "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    return webdriver.Chrome(options=opts, service=Service(executable_path=chromedriver))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=REPO / "docs")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=2900)
    args = ap.parse_args()
    from selenium.webdriver.support.ui import WebDriverWait

    from stallscope.analyzers.report import report_files

    os.chdir(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        d = driver(args.width, args.height)
        try:
            for name in CAPTURES:
                html = Path(tmp) / f"{name}.html"
                report_files([f"fixtures/{name}.pcap"], html)  # named as a reader would type it
                d.get(html.as_uri())
                WebDriverWait(d, 60).until(lambda drv: drv.execute_script(
                    "var p = document.querySelectorAll('div.plot[data-figure]');"
                    "return Array.prototype.every.call(p, function (e) { return e.dataset.drawn === '1'; });"))
                shot = d.execute_cdp_cmd("Page.captureScreenshot", {
                    "format": "png", "captureBeyondViewport": False,
                    "clip": {"x": 0, "y": 0, "width": args.width, "height": args.height, "scale": 1}})
                out = args.out / f"report-{name}.png"
                out.write_bytes(base64.b64decode(shot["data"]))
                print(out)
        finally:
            d.quit()


if __name__ == "__main__":
    main()
