"""The gate's results as JUnit XML (the format CI systems read: Jenkins, GitLab, GitHub test
reporters), built with xml.etree: a `testsuite` per capture, a `testcase` per connection and rule
(plus the capture's own `capture` and baseline cases). A failed rule is a `failure` whose text
lists the stalls and findings behind it with their frame numbers; a damaged or rejected capture an
`error`; a rule that could not be judged `skipped`.

Everything taken from a capture goes through text.printable (no control character, which XML 1.0
cannot hold even escaped), and ElementTree escapes markup in attributes and text. No timestamps
or durations: the same inputs give the same bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from .document import CheckRun
from .rules import ERROR, FAIL, SKIP, CaptureVerdict
from .text import printable, printable_lines


def junit_xml(run: CheckRun) -> str:
    totals = run.totals()
    root = ET.Element("testsuites", {"name": "stallscope check", "tests": str(totals["tests"]),
                                     "failures": str(totals["failed"]), "errors": str(totals["errors"])})
    for v in run.verdicts:
        root.append(_suite(v, run))
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(v: CaptureVerdict, run: CheckRun) -> ET.Element:
    path = printable(v.path)
    suite = ET.Element("testsuite", {"name": path, "tests": str(len(v.results)), "failures": str(v.count(FAIL)),
                                     "errors": str(v.count(ERROR)), "skipped": str(v.count(SKIP)), "file": path})
    props = ET.SubElement(suite, "properties")
    for name, value in (("status", v.status), ("policy", run.policy), ("baseline", run.baseline)):
        if value is not None:
            ET.SubElement(props, "property", {"name": name, "value": printable(value)})
    if v.summary is not None:
        ET.SubElement(props, "property", {"name": "stall_time_ns", "value": str(v.summary.stall_time_ns)})
    for r in v.results:
        case = ET.SubElement(suite, "testcase", {"name": printable(r.name), "classname": path})
        message = printable(r.message)
        if r.status == FAIL:
            el = ET.SubElement(case, "failure", {"type": r.rule, "message": message})
            el.text = printable_lines(r.failure_text())
        elif r.status == ERROR:
            kind = (v.error or {}).get("kind") or v.status
            el = ET.SubElement(case, "error", {"type": printable(str(kind)), "message": message})
            el.text = message
        elif r.status == SKIP:
            ET.SubElement(case, "skipped", {"message": message})
    return suite
