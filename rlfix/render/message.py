"""A report as a short chat message (`--notify`): what failed, the line that says so, the first fix.

A message is read on a phone, in Slack or Teams, by whoever is on call: a few lines, plain text,
no markup the receiving service could interpret (log text is shown with its controls escaped and
cut short). Like every format it only ever sees the gated, masked report (`rlfix.report.RENDERERS`).
"""

from __future__ import annotations

from typing import Any

from rlfix import safe
from rlfix.i18n import phrase
from rlfix.render.common import where
from rlfix.report import Report
from rlfix.version import __version__

#: Characters of the evidence line a message quotes.
EVIDENCE_CHARS = 300


def message_title(report: Report, job: str | None = None, lang: str = "en") -> str:
    """One line: which job failed, and its most likely cause."""
    name = safe.one_line(job or ", ".join(s.name for s in report.sources if not s.skipped)[:120] or "job")
    top = report.top
    if top is None:
        ended = report.insights.exit
        how = ended.describe() if ended is not None else phrase("no known failure recognised", lang)
        return phrase("rlfix: {job} failed ({how})", lang, job=name, how=how)
    title = top.signature.localized(lang).title
    return phrase("rlfix: {job} failed: {cause}", lang, job=name, cause=f"{top.id} ({title})")


def render_message(report: Report, *, job: str | None = None, lang: str = "en", **_: Any) -> str:
    """The title line, then the first evidence line, the first fix and the rlfix version."""
    lines = [message_title(report, job, lang)]
    top = report.top
    if top is not None and top.evidence:
        first = top.evidence[0]
        text = safe.one_line(first.text)[:EVIDENCE_CHARS]
        lines.append(f"{where(first, lang=lang)}: {text}")
    if top is not None:
        chosen = [r.flag.value for r in top.remedies if r.applies][:2]
        steps = top.signature.localized(lang).steps[:1]
        if chosen:
            lines.append(phrase("fix: {fix}", lang, fix="; ".join(chosen)))
        elif steps:
            lines.append(phrase("fix: {fix}", lang, fix=safe.one_line(steps[0])[:EVIDENCE_CHARS]))
    lines.append(f"rlfix {__version__}")
    return safe.terminal("\n".join(lines) + "\n")
