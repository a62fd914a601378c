"""Text from a capture (its file name, addresses, interface names, the analyzer's sentences that
quote them) made safe to show. A capture is untrusted input: its name may hold markup, control
characters or bytes that are not UTF-8. Every terminal, Markdown, XML and plain-text output starts
from `printable`, so they all escape the same characters.

- `decoded`: a name the file system gave as bytes that are not UTF-8 (Python's surrogate escapes)
  shows them as `\\xNN`; everything else is kept (JSON).
- `printable`: also control characters (C0, DEL, and C1, which 8-bit terminals read as escape
  sequences: U+009B is CSI) as `\\n`, `\\r`, `\\t`, `\\xNN`, so no output carries a raw escape
  sequence, newline or a character XML 1.0 cannot hold.
- `printable_lines`: printable line by line, the newlines kept.
- `terminal`: printable, then Rich markup escaped (`[bold]` stays text).
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def decoded(text: str) -> str:
    if not any("\udc80" <= ch <= "\udcff" for ch in text):
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def printable(text: object) -> str:
    return _CONTROL.sub(lambda m: _NAMED.get(m.group(), f"\\x{ord(m.group()):02x}"), decoded(str(text)))


def printable_lines(text: object) -> str:
    """printable, one line at a time: the newlines of a multi-line message stay."""
    return "\n".join(printable(line) for line in str(text).split("\n"))


def terminal(text: object) -> str:
    from rich.markup import escape

    return escape(printable(text))
