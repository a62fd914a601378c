"""Text from a capture (its file name, addresses, the analyzer's sentences that quote them) made
safe for each output the gate writes. A capture is untrusted input: its name may hold markup,
control characters or bytes that are not UTF-8.

- `decoded`: a name the file system gave as bytes that are not UTF-8 (Python's surrogate escapes)
  shows them as `\\xNN`; everything else is kept (JSON).
- `printable`: also control characters (C0, DEL, C1) as `\\n`, `\\r`, `\\t`, `\\xNN`, so no output
  carries a raw escape sequence, newline or a character XML 1.0 cannot hold (JUnit, terminal,
  Markdown, annotations start from this).
- `terminal`: printable, then Rich markup escaped (`[bold]` stays text).
- `markdown`: printable, then the analyzer's Markdown cell escaping (HTML, pipes, emphasis, links).
- `annotation_data` / `annotation_property`: GitHub's workflow-command escaping (% CR LF, and : ,
  in a property), after printable for a property and for data but newlines, which stay lines.
"""

from __future__ import annotations

import re

from stallscope.analyzers.analysis_text import _md

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def decoded(text: str) -> str:
    if not any("\udc80" <= ch <= "\udcff" for ch in text):
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def printable(text: str) -> str:
    return _CONTROL.sub(lambda m: _NAMED.get(m.group(), f"\\x{ord(m.group()):02x}"), decoded(str(text)))


def printable_lines(text: str) -> str:
    """printable, one line at a time: the newlines of a multi-line message stay."""
    return "\n".join(printable(line) for line in str(text).split("\n"))


def terminal(text: str) -> str:
    from rich.markup import escape

    return escape(printable(text))


def markdown(text: str) -> str:
    return _md(printable(text))


def annotation_data(text: str) -> str:
    return printable_lines(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotation_property(text: str) -> str:
    return (printable(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            .replace(":", "%3A").replace(",", "%2C"))
