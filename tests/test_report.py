"""The HTML report (stallscope.analyzers.report, `stallscope report`): what the page holds, that it
fetches nothing, that every string taken from a capture is escaped, and the decimation that keeps
large captures small. The browser test is tests/test_report_browser.py."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from stallscope.analyzers.analyze import Analysis, analyze_one, analyze_packets
from stallscope.analyzers.report import figures, report_files, write_report

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
NAGLE = FIXTURES / "nagle_4k_jumbo.pcap"


@pytest.fixture(scope="module")
def nagle_report(tmp_path_factory) -> tuple[str, Analysis, dict]:
    out = tmp_path_factory.mktemp("report") / "nagle.html"
    analysis, facts = report_files([NAGLE], out)
    return out.read_text(encoding="utf-8"), analysis, facts


def _figures(html: str) -> dict[str, dict]:
    blocks = re.findall(r'<script type="application/json" id="([^"]+)-json">(.*?)</script>', html, re.S)
    return {fid: json.loads(text) for fid, text in blocks}


def test_report_holds_the_findings_as_text(nagle_report) -> None:
    html, analysis, facts = nagle_report
    c = analysis.files[0].connections[0]
    assert facts["connections"] == 1 and facts["graphed"] == 2  # the linked graphs and the ACK-delay histogram
    # Header: the file, capture facts, the decode's accounting.
    assert "fixtures/nagle_4k_jumbo.pcap" in html and "Ethernet (1)" in html and ">128</td>" in html
    assert "<td>at the sender of the data</td>" in html
    text = " ".join(html.split())
    assert "1360 records = 1360 TCP + 0 not TCP + 0 not decoded: every record accounted for" in text
    # Card: verdict naming the top cause; the time-lost bar; the findings with frames and filters.
    assert "mostly nagle_delayed_ack" in html and 'class="lostbar"' in html
    s = next(s for s in c.stalls if s.cause == "nagle_delayed_ack")
    assert f"tcp.stream eq 0 &amp;&amp; frame.number &gt;= {s.start_frame} &amp;&amp; frame.number &lt;= {s.end_frame}" in html
    assert f"the peer&#39;s ACK in frame {s.evidence['releasing_ack_frame']} released it" in html
    # The index links to the connection's section.
    assert 'href="#conn-0-0"' in html and 'id="conn-0-0"' in html


def test_report_is_self_contained(nagle_report) -> None:
    html, _, _ = nagle_report
    import plotly.offline

    plotlyjs = plotly.offline.get_plotlyjs()
    assert html.count(plotlyjs) == 1  # inlined once
    page = html.replace(plotlyjs, "")
    # Nothing to fetch: no external script, style sheet, image or frame, and no URL at all
    # outside plotly.js (which only names its CDN for features the report does not use).
    assert not re.search(r'<(script|img|iframe|link)[^>]+(src|href)=', page)
    assert "http://" not in page and "https://" not in page


def test_figures_share_the_time_axis_and_mark_the_events(nagle_report) -> None:
    html, analysis, _ = nagle_report
    figs = _figures(html)
    main = figs["fig-0"]
    layout = main["layout"]
    # Five rows; each x axis matches the bottom one, so zooming one zooms all.
    assert [layout[f"xaxis{k}"].get("matches") for k in ("", "2", "3", "4")] == ["x5"] * 4
    names = {t.get("name", "") for t in main["data"]}
    for expected in ("data (dir 1)", "ACK (dir 0)", "advertised window (ack + window)", "bytes in flight", "peer window",
                     "RTT sample", "stall: nagle_delayed_ack"):
        assert any(n.startswith(expected) for n in names), expected
    assert any(n.startswith("send buffer (inferred") for n in names)
    # Every stall of the data direction is drawn: one box (6 points: closed path and a gap) each.
    shaded = next(t for t in main["data"] if t.get("name") == "stall: nagle_delayed_ack" and t.get("fill") == "toself")
    x = shaded["x"]
    n_points = len(x) if isinstance(x, list) else len(base64.b64decode(x["bdata"])) // 8
    stalls = [s for s in analysis.files[0].connections[0].stalls if s.cause == "nagle_delayed_ack" and s.dir == 1]
    assert n_points == 6 * len(stalls)
    # The ACK-delay histogram marks the learned timer.
    hist = figs["fig-1"]
    assert "learned delayed-ACK timer: 43.6 ms (one-shot)" in json.dumps(hist["layout"])


def test_minmax_keeps_every_extreme_per_column() -> None:
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0, 10, 200_000))
    y = rng.normal(size=x.size)
    y[12345] = 50.0  # a spike
    y[150_000] = -50.0  # a dip
    idx = figures.minmax_indices(x, y, 0.0, 10.0, columns=1000)
    assert len(idx) <= 2000 and np.all(np.diff(idx) > 0)
    assert 12345 in idx and 150_000 in idx
    col = np.clip((x / 10 * 1000).astype(int), 0, 999)
    for c in (0, 500, 999):  # each column's own min and max are kept
        m = col == c
        assert y[m].max() in y[idx] and y[m].min() in y[idx]
    few = figures.minmax_indices(x[:100], y[:100], 0.0, 10.0)
    assert len(few) == 100


def test_events_are_thinned_only_to_one_per_cell() -> None:
    x = np.linspace(0, 1, 50_000)
    y = np.linspace(0, 1, 50_000)
    idx = figures.event_indices(x, y, 0, 1, 0, 1)
    assert len(idx) < 50_000
    cells = set(zip(np.clip((x * figures.COLUMNS).astype(int), 0, figures.COLUMNS - 1),
                    np.clip((y * figures.EVENT_ROWS).astype(int), 0, figures.EVENT_ROWS - 1)))
    assert len(idx) == len(cells)  # every occupied cell keeps one event
    assert len(figures.event_indices(x[:100], y[:100], 0, 1, 0, 1)) == 100


def test_capture_strings_are_escaped(tmp_path) -> None:
    """A file name and addresses carrying markup come out as text, never as markup."""
    from stallscope.analyzers.sender_state import PACKET_INPUT
    from stallscope.packets.decoder import read_packets
    import polars as pl

    evil = '<script>alert("x")</script>'
    name = tmp_path / "<script>alert(1)<img src=x onerror=alert(2)>.pcap"
    shutil.copy(NAGLE, name)
    from stallscope.analyzers import artifacts

    packets, summary = read_packets(name, columns=PACKET_INPUT + [artifacts.SEQ_RAW])
    packets = packets.with_columns(pl.col("src_addr").str.replace("10.77.0.2", evil, literal=True),
                                   pl.col("dst_addr").str.replace("10.77.0.2", evil, literal=True))
    result = analyze_packets(packets, str(name), summary)
    assert evil in result.connections[0].initiator
    out = tmp_path / "r.html"
    write_report(Analysis([result]), out)
    html = out.read_text(encoding="utf-8")
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html or "&lt;script&gt;alert(&quot;x&quot;)" in html
    assert "&lt;script&gt;alert(1)&lt;img src=x onerror=alert(2)&gt;.pcap" in html
    # The figure JSON cannot close its script element.
    for block in re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S):
        assert "<" not in block


def test_damage_is_stated_first(tmp_path) -> None:
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(NAGLE.read_bytes()[:60_001])
    result = analyze_one(cut)
    assert result.status == "damaged"
    out = tmp_path / "cut.html"
    write_report(Analysis([result]), out)
    html = out.read_text(encoding="utf-8")
    alert = html.index('class="damage"')
    assert alert < html.index('id="captures"') and "is damaged" in html[alert:alert + 400]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([shutil.which("stallscope") or "stallscope", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


@pytest.mark.skipif(shutil.which("stallscope") is None, reason="the stallscope console script is not installed")
def test_cli_report_and_analyze_report(tmp_path) -> None:
    out = tmp_path / "two.html"
    r = _cli("report", str(NAGLE), str(FIXTURES / "atm_small_buffer.pcap"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out)
    html = out.read_text(encoding="utf-8")
    assert html.count('<section class="connection"') == 2
    # Damaged input: the report is still written, with exit status 3 as `analyze`.
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(NAGLE.read_bytes()[:60_001])
    r = _cli("report", str(cut), "-o", str(tmp_path / "cut.html"))
    assert r.returncode == 3 and (tmp_path / "cut.html").exists()
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a capture at all" * 10)
    r = _cli("report", str(junk), "-o", str(tmp_path / "junk.html"))
    assert r.returncode == 4 and "rejected" in (tmp_path / "junk.html").read_text(encoding="utf-8")
    r = _cli("analyze", str(NAGLE), "--report", str(tmp_path / "a.html"), "-f", "json", "-o", str(tmp_path / "a.json"))
    assert r.returncode == 0, r.stderr
    assert "mostly nagle_delayed_ack" in (tmp_path / "a.html").read_text(encoding="utf-8")


def test_stall_listing_has_a_report_wide_budget(tmp_path, monkeypatch) -> None:
    """Thousands of connections must not make a report of thousands of stall rows: the worst
    connections list theirs first, the others say where to find them."""
    from stallscope.analyzers.report import document

    monkeypatch.setattr(document, "MAX_LISTED_TOTAL", 30)
    out = tmp_path / "budget.html"
    analysis, _ = report_files([NAGLE, FIXTURES / "atm_small_buffer.pcap"], out)
    html = out.read_text(encoding="utf-8")
    rows = html.count('<td class="mono">')  # one per listed stall (its frames)
    assert rows == 30
    assert "The stalls of this connection are not listed one by one" in html
    assert "stallscope analyze --stream 0 " in html


def _pcapng_with_markup(path: Path) -> None:
    """A small pcapng whose section comment, interface name and interface comment carry markup."""
    import socket
    import struct

    import dpkt

    def opt(code: int, val: bytes) -> bytes:
        return struct.pack("<HH", code, len(val)) + val + b"\0" * ((4 - len(val) % 4) % 4)

    def block(btype: int, body: bytes) -> bytes:
        return struct.pack("<II", btype, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))

    def packet(ts_us: int, src: str, dst: str, sport: int, dport: int, flags: int, seq: int, ack: int,
               data: bytes = b"") -> bytes:
        tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, win=65535, data=data)
        ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=6, data=tcp, ttl=64)
        ip.len = len(ip)
        raw = bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))
        return block(6, struct.pack("<IIIII", 0, ts_us >> 32, ts_us & 0xFFFFFFFF, len(raw), len(raw)) + raw
                     + b"\0" * ((4 - len(raw) % 4) % 4))

    shb = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + opt(1, b'<script>alert("shb")</script>')
                + opt(0, b""))
    idb = block(1, struct.pack("<HHI", 1, 0, 65535) + opt(2, b'<script>alert("if")</script>')
                + opt(1, b"<b>comment</b>") + opt(0, b""))
    a, b, syn, ack, psh = "10.0.0.1", "10.0.0.2", dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH
    path.write_bytes(shb + idb + packet(1_000_000, a, b, 1000, 80, syn, 100, 0)
                     + packet(1_001_000, b, a, 80, 1000, syn | ack, 500, 101)
                     + packet(1_002_000, a, b, 1000, 80, ack, 101, 501)
                     + packet(1_003_000, a, b, 1000, 80, ack | psh, 101, 501, b"x" * 100)
                     + packet(1_004_000, b, a, 80, 1000, ack, 501, 201))


def test_pcapng_interface_name_is_escaped(tmp_path) -> None:
    cap = tmp_path / "iface.pcapng"
    _pcapng_with_markup(cap)
    out = tmp_path / "iface.html"
    analysis, _ = report_files([cap], out)
    assert analysis.files[0].status == "ok" and analysis.files[0].connections
    html = out.read_text(encoding="utf-8")
    assert "interfaces: &lt;script&gt;alert(&#34;if&#34;)&lt;/script&gt;" in html
    assert "<script>alert" not in html and "<b>comment" not in html
