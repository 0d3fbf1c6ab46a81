"""A report as GitHub Actions workflow commands: one annotation per finding. Formatting only.

`::error file=job.log,line=67,title=cuda-illegal-memory-access (report-upstream)::CUDA illegal ...`
for each diagnosis (`::warning` for notes). A log line is data here and must never become a
command: GitHub reads a command only at the start of a line, so every newline in the data is
escaped (`%0A`, `%0D`, and `%` itself as `%25`), and in the properties (`file`, `line`, `title`)
also `:` and `,`, which would end a property. The Markdown step summary is written by
`rlfix.integrations.github`, through the same gate.
"""

from __future__ import annotations

from typing import Any

from rlfix import safe
from rlfix.i18n import phrase
from rlfix.model import Severity
from rlfix.render.common import action_line
from rlfix.report import Diagnosis, Report

#: Characters of a message kept (GitHub shows the first few lines of an annotation anyway).
MAX_MESSAGE = 2000


def escape_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped, so it stays one line and one command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: as `escape_data`, and `:` and `,` too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: Report, *, lang: str = "en", **_: Any) -> str:
    """One workflow command per finding (none when nothing failed): annotations on the log's lines."""
    lines = [_command("error", d, lang) for d in report.diagnoses]
    lines += [_command("warning", d, lang) for d in report.notes]
    return "".join(line + "\n" for line in lines)


def _command(kind: str, d: Diagnosis, lang: str) -> str:
    first = d.first
    level = kind if d.severity is not Severity.WARNING else "warning"
    # A file name is data too: controls shown escaped (the terminal), then escaped for GitHub.
    props = [f"file={escape_property(safe.terminal(first.source))}"]
    if first.line > 0:
        props.append(f"line={first.line}")
    props.append(f"title={escape_property(f'{d.id} ({d.action.value})')}")
    place = f" [{first.where}]" if first.where else ""
    message = "\n".join(
        [
            f"{d.signature.localized(lang).title}{place}: {first.text}",
            phrase("action: ", lang) + action_line(d, lang),
        ]
    )
    # Controls shown escaped first (a log line may carry ESC or bidi marks), then cut, then escaped.
    message = "\n".join(safe.one_line(part) for part in message.split("\n"))[:MAX_MESSAGE]
    return f"::{level} {','.join(props)}::{escape_data(message)}"
