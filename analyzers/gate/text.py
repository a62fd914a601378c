"""Text from a capture made safe for each output the gate writes (`stallscope.untrusted_text`
does the escaping every output shares; this adds the gate's own media).

- `markdown`: printable, then the analyzer's Markdown cell escaping (HTML, pipes, emphasis, links).
- `annotation_data` / `annotation_property`: GitHub's workflow-command escaping (% CR LF, and : ,
  in a property), after printable for a property and for data but newlines, which stay lines.
"""

from __future__ import annotations

from stallscope.analyzers.analysis_text import _md
from stallscope.untrusted_text import decoded, printable, printable_lines, terminal

__all__ = ["annotation_data", "annotation_property", "decoded", "markdown", "printable", "printable_lines", "terminal"]


def markdown(text: str) -> str:
    return _md(printable(text))


def annotation_data(text: str) -> str:
    return printable_lines(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotation_property(text: str) -> str:
    return (printable(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            .replace(":", "%3A").replace(",", "%2C"))
