"""The report of fixtures/nagle_4k_jumbo.pcap in a real browser: Debian's chromium driven headless
by Selenium through Debian's chromedriver (scripts/install-deps.sh installs both; nothing is
downloaded). Loaded from a file:// URL, the page must log no console error, request nothing but
itself, draw every plot with its data, move the linked axes when one graph is zoomed (by a mouse
drag and by Plotly.relayout), and give a screenshot that is not blank."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NAGLE = REPO / "fixtures" / "nagle_4k_jumbo.pcap"


def _browser_paths() -> tuple[str, str] | None:
    chromium = os.environ.get("STALLSCOPE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    driver = os.environ.get("STALLSCOPE_CHROMEDRIVER") or shutil.which("chromedriver")
    if chromium is None or driver is None:
        return None
    return chromium, driver


def make_driver(width: int = 1400, height: int = 1000, webgl: bool = False):
    """Headless Debian chromium through Debian's chromedriver, with browser and network logs;
    `webgl`: WebGL through SwiftShader (software), as on a machine without a GPU."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = _browser_paths()  # type: ignore[misc]
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    gpu = ("--enable-unsafe-swiftshader", "--use-angle=swiftshader") if webgl else ("--disable-gpu",)
    for arg in (*gpu, "--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--hide-scrollbars", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-default-apps", "--disable-extensions"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(options=opts, service=Service(executable_path=driver))


pytestmark = [
    # A chromium start and plotly.js parsing and drawing: 17-21 s for the module on this shared
    # 2-core machine under load (page load alone 3.6 s), so `make test-slow` runs it, not `make test`.
    pytest.mark.slow,
    pytest.mark.skipif(_browser_paths() is None,
                       reason="no chromium/chromedriver (scripts/install-deps.sh installs Debian's as root)"),
]


@pytest.fixture(scope="module")
def browser():
    """One headless chromium for the module's tests (starting it is most of their time)."""
    pytest.importorskip("selenium", reason="selenium is a test extra (pip install -e '.[test]')")
    driver = make_driver()
    try:
        yield driver
    finally:
        driver.quit()


def _fresh_logs(driver) -> None:
    """Drop the logs of pages loaded before (each read returns what came since the last)."""
    driver.get_log("browser")
    driver.get_log("performance")


@pytest.fixture(scope="module")
def page(browser, tmp_path_factory):
    from stallscope.analyzers.report import report_files

    out = tmp_path_factory.mktemp("browser") / "nagle.html"
    report_files([NAGLE], out)
    driver = browser
    _fresh_logs(driver)
    url = out.resolve().as_uri()
    driver.get(url)
    # Every plot marks itself drawn once Plotly.newPlot's promise resolves.
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "var p = document.querySelectorAll('div.plot[data-figure]');"
        "return p.length > 0 && Array.prototype.every.call(p, function (e) { return e.dataset.drawn === '1'; });"))
    yield driver, url, out


def test_no_console_error(page) -> None:
    driver, _, _ = page
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []


def test_no_request_but_the_file(page) -> None:
    driver, url, _ = page
    requested = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            requested.append(msg["params"]["request"]["url"])
    # data: URLs are not requests (Plotly draws some icons inline).
    assert [u for u in requested if not u.startswith("data:")] == [url]
    resources = driver.execute_script("return performance.getEntriesByType('resource').map(function (e) { return e.name; });")
    assert [r for r in resources if not r.startswith("data:")] == []


def test_every_plot_drew_its_data(page) -> None:
    driver, _, _ = page
    plots = driver.execute_script("""
        return Array.prototype.map.call(document.querySelectorAll('div.plot[data-figure]'), function (gd) {
          var traces = gd.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length;
          var paths = Array.prototype.filter.call(gd.querySelectorAll('.scatterlayer path.js-line, .scatterlayer path.point, .scatterlayer path.js-fill, .barlayer path'),
                                                  function (p) { var d = p.getAttribute('d'); return d && d.length > 4; }).length;
          return {id: gd.id, svg: gd.querySelectorAll('svg.main-svg').length, data: gd.data.length,
                  fullData: gd._fullData.length, traces: traces, paths: paths,
                  gl: gd.querySelectorAll('canvas').length};
        });""")
    assert len(plots) == 2, plots  # the linked time graphs and the ACK-delay histogram
    for p in plots:
        assert p["svg"] > 0 and p["data"] > 0 and p["fullData"] == p["data"], p
        assert p["traces"] == p["data"], p  # every trace has its SVG group
        assert p["paths"] >= p["data"], p  # and something drawn in it


def test_zoom_on_one_graph_moves_the_linked_ones(page) -> None:
    driver, _, _ = page
    from selenium.webdriver.common.action_chains import ActionChains

    ranges = "var gd = document.getElementById('fig-0'); return ['xaxis','xaxis2','xaxis3','xaxis4','xaxis5'].map(function (k) { return gd._fullLayout[k].range.slice(); });"
    before = driver.execute_script(ranges)
    assert all(r == before[0] for r in before)
    # A mouse drag across the middle of the time-sequence graph (row 1) zooms it ...
    drag = driver.find_element("css selector", "#fig-0 .draglayer .xy .nsewdrag")
    w = drag.size["width"]
    ActionChains(driver).move_to_element_with_offset(drag, -w // 4, 0).click_and_hold() \
        .move_by_offset(w // 2, 5).release().perform()
    after = driver.execute_script(ranges)
    assert after[0] != before[0] and after[0][1] - after[0][0] < 0.75 * (before[0][1] - before[0][0])
    # ... and every other graph of the figure shows the same time span.
    assert all(r == after[0] for r in after), after
    # A relayout (what Plotly does on a zoom) on the bottom graph moves the top one.
    driver.execute_script("return Plotly.relayout(document.getElementById('fig-0'), {'xaxis5.range': [0.5, 0.75]});")
    moved = driver.execute_script(ranges)
    assert all(abs(r[0] - 0.5) < 1e-9 and abs(r[1] - 0.75) < 1e-9 for r in moved), moved


def test_prints_with_every_list_unfolded(page, tmp_path) -> None:
    driver, _, _ = page
    import base64

    folded = driver.execute_script("return document.querySelectorAll('details:not([open])').length")
    assert folded > 0  # the stall list of 63 stalls and the sender profile start folded
    pdf = base64.b64decode(driver.execute_cdp_cmd("Page.printToPDF", {"printBackground": True})["data"])
    (tmp_path / "report.pdf").write_bytes(pdf)
    assert pdf.startswith(b"%PDF")
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
    # Unfolded for print (63 stalls with their evidence): many more pages than the screen's view.
    assert pages >= 8, pages
    assert driver.execute_script("return document.querySelectorAll('details:not([open])').length") == folded
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


def test_screenshot_is_not_blank(page, tmp_path) -> None:
    driver, _, _ = page
    driver.execute_script("document.getElementById('fig-0').scrollIntoView();")
    png = driver.get_screenshot_as_base64()
    (tmp_path / "report.png").write_bytes(__import__("base64").b64decode(png))
    # Decode the PNG in the browser itself and measure it: distinct colours and non-white share.
    stats = driver.execute_async_script("""
        var done = arguments[arguments.length - 1];
        var img = new Image();
        img.onload = function () {
          var c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
          var ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
          var px = ctx.getImageData(0, 0, c.width, c.height).data, colours = new Set(), ink = 0;
          for (var i = 0; i < px.length; i += 4) {
            colours.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
            if (px[i] < 230 || px[i + 1] < 230 || px[i + 2] < 230) ink++;
          }
          done({w: c.width, h: c.height, colours: colours.size, ink: ink / (px.length / 4)});
        };
        img.onerror = function () { done(null); };
        img.src = 'data:image/png;base64,' + arguments[0];""", png)
    assert stats is not None and stats["w"] > 500 and stats["h"] > 500
    assert stats["colours"] > 20 and 0.01 < stats["ink"] < 0.9, stats


def test_index_sorts_and_filters(browser, tmp_path) -> None:
    """The index of several connections: worst first, a click on a heading sorts by it, the filter
    keeps the rows holding its text."""
    from selenium.webdriver.common.by import By

    from stallscope.analyzers.report import report_files

    out = tmp_path / "three.html"
    names = ["slow_reader", "mss_mismatch", "pmtu_icmp"]
    report_files([REPO / "fixtures" / f"{n}.pcap" for n in names], out, max_graphed=0)
    driver = browser
    _fresh_logs(driver)
    driver.get(out.resolve().as_uri())
    rows = "return Array.prototype.filter.call(document.querySelectorAll('#index tbody tr'), function (r) { return !r.hidden; }).map(function (r) { return [r.cells[1].textContent, parseFloat(r.cells[6].dataset.sort)]; });"
    first = driver.execute_script(rows)
    assert len(first) >= 3
    lost = [r[1] for r in first]
    assert lost == sorted(lost, reverse=True)  # worst first
    heading = driver.find_elements(By.CSS_SELECTOR, "#index thead th")[6]  # time lost
    heading.click()  # descending
    heading.click()  # ascending
    assert [r[1] for r in driver.execute_script(rows)] == sorted(lost)
    box = driver.find_element(By.ID, "filter")
    box.send_keys("mss_mismatch.pcap")
    kept = driver.execute_script(rows)
    assert kept and all("mss_mismatch.pcap" in r[0] for r in kept)
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


# Software WebGL (SwiftShader): 5-17 s on its own.
def test_decimated_webgl_graphs_draw(tmp_path, monkeypatch) -> None:
    """The large-capture path on a small capture: with the decimation and WebGL thresholds lowered,
    the report draws its decimated series with scattergl, and they draw without an error."""
    pytest.importorskip("selenium", reason="selenium is a test extra (pip install -e '.[test]')")
    from stallscope.analyzers.report import figures, report_files

    monkeypatch.setattr(figures, "COLUMNS", 100)
    monkeypatch.setattr(figures, "DECIMATE_ABOVE", 200)
    monkeypatch.setattr(figures, "WEBGL_ABOVE", 50)
    out = tmp_path / "gl.html"
    report_files([NAGLE], out)
    html = out.read_text(encoding="utf-8")
    assert '"type":"scattergl"' in html and "decimated for the screen" in html
    driver = make_driver(webgl=True)
    try:
        driver.get(out.resolve().as_uri())
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(driver, 30).until(lambda d: d.execute_script(
            "return document.getElementById('fig-0').dataset.drawn === '1';"))
        gl = driver.execute_script("""
            var gd = document.getElementById('fig-0');
            return {gl: gd._fullData.filter(function (t) { return t.type === 'scattergl'; }).length,
                    canvases: gd.querySelectorAll('canvas').length,
                    svgTraces: gd.querySelectorAll('.scatterlayer .trace').length, data: gd.data.length};""")
        assert gl["gl"] > 0 and gl["canvases"] > 0, gl
        assert gl["svgTraces"] + gl["gl"] == gl["data"], gl  # the others still in SVG
        assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        driver.quit()
