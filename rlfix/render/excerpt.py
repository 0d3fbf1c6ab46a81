"""The lines that matter, in Markdown, for an issue or an LLM prompt: `rlfix excerpt`. Formatting only.

What it holds, most important first, within `max_lines` lines and `max_chars` characters: the top
cause with its action, the job (frameworks, versions, flags), where it first failed, then each root
cause's evidence line with the lines around it (and the traceback that ended there), best first.
A block that does not fit is shrunk to its evidence line, then left out and counted. Log text only
ever stands in fenced code blocks no line can close (`rlfix.safe.md_block`).
"""

from __future__ import annotations

from typing import Any

from rlfix import safe
from rlfix.details import Window
from rlfix.i18n import phrase
from rlfix.render.common import action_line, context_line, label, single_source, where, where_line
from rlfix.report import Diagnosis, Report
from rlfix.version import __version__

#: Defaults of `rlfix excerpt --max-lines` / `--max-chars`.
MAX_LINES = 60
MAX_CHARS = 8000
#: Settings (flags) of the job quoted at most.
MAX_SETTINGS = 12
#: Root causes given a block of their own at most.
MAX_ROOTS = 4
#: Evidence lines of a finding quoted after its window, besides the first.
MAX_OTHER_EVIDENCE = 2


def render_excerpt(
    report: Report, *, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS, lang: str = "en", **_: Any
) -> str:
    """The excerpt of `report` as Markdown, never more than `max_lines` lines nor `max_chars` characters."""
    head = _head(report, lang)
    foot = [f"*rlfix {safe.md_text(__version__)}: " + phrase("excerpt of {lines} lines", lang, lines=report.lines)]
    budget = _Budget(max_lines - len(foot), max_chars - _size(foot))
    out = budget.take(head, shrunk=head[: max(1, budget.lines)])
    left_out = 0
    for d in report.diagnoses[:MAX_ROOTS]:
        full, least = _block(d, _window(report, d), single_source(report), lang)
        taken = budget.take(full, shrunk=least)
        if not taken:
            left_out += 1
        out += taken
    left_out += max(0, len(report.diagnoses) - MAX_ROOTS)
    if left_out:
        foot[-1] += phrase("; {n} more finding(s) left out", lang, n=left_out)
    foot[-1] += "*"
    return "\n".join(out + foot) + "\n"


class _Budget:
    """Lines and characters left; a block is taken whole, else shrunk, else not at all."""

    def __init__(self, lines: int, chars: int) -> None:
        self.lines, self.chars = lines, chars

    def take(self, block: list[str], shrunk: list[str]) -> list[str]:
        for candidate in (block, shrunk):
            if len(candidate) <= self.lines and _size(candidate) <= self.chars:
                self.lines -= len(candidate)
                self.chars -= _size(candidate)
                return candidate
        return []


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def _head(report: Report, lang: str) -> list[str]:
    """The cause, its action, the job and where it failed: a few lines."""
    top = report.top
    if top is None:
        return [phrase("## rlfix excerpt: no failure recognised", lang), ""]
    out = [f"## rlfix excerpt: {safe.md_code(top.id)}", ""]
    out.append(f"**{safe.md_text(top.signature.localized(lang).title)}** ({safe.md_text(label(top, lang))})")
    out.append(phrase("**Action:** ", lang) + safe.md_text(action_line(top, lang)))
    if report.context.named:
        out.append(phrase("**Job:** {text}", lang, text=safe.md_text(context_line(report, lang))))
    # The flags the fix names come first: they are what a reader will be asked to change.
    named = {r.flag.key for r in top.remedies}
    settings = sorted(report.context.settings.items(), key=lambda kv: (kv[0] not in named, kv[0]))[:MAX_SETTINGS]
    if settings:
        out.append(phrase("**Flags:** ", lang) + ", ".join(safe.md_code(f"{k}={v}") for k, v in settings))
    failed_at = where_line(report, lang)
    if failed_at:
        out.append(phrase("**Failed:** {text}", lang, text=safe.md_text(failed_at)))
    if top.folded:
        short = single_source(report)
        explained = (f"{safe.md_code(f.id)} ({safe.md_text(where(f.first, short, lang))})" for f in top.folded)
        out.append(phrase("**Explains:** ", lang) + ", ".join(explained))
    return [*out, ""]


def _window(report: Report, d: Diagnosis) -> Window | None:
    first = d.first
    return next((w for w in report.windows if (w.source, w.focus, w.label) == (first.source, first.line, d.id)), None)


def _block(d: Diagnosis, window: Window | None, short: bool, lang: str) -> tuple[list[str], list[str]]:
    """The finding's lines, and the least of them (its evidence line alone)."""
    first = d.first
    title = f"### {safe.md_code(d.id)}: {safe.md_text(where(first, short, lang))}"
    focus = f"{first.line:>6}> {first.text}"
    least = [title, *safe.md_block([focus]), ""]
    if window is None:
        return least, least
    shown, previous = [], None
    for number, text in window.lines:
        if previous is not None and number > previous + 1:
            shown.append("     …")
        shown.append(f"{number:>6}{'>' if number == window.focus else ' '} {text}")
        previous = number
    # The finding's other evidence lines (an Xid line in dmesg after the job's own error, say).
    for e in d.evidence[1 : MAX_OTHER_EVIDENCE + 1]:
        if e.source == first.source and e.line > (previous or 0):
            shown += ["     …", f"{e.line:>6}> {e.text}"]
            previous = e.line
    return [title, *safe.md_block(shown), ""], least
