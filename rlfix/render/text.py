"""Reports for a terminal: what failed, where, why it ranks first, what to change. Formatting only."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from typing import Any

from rlfix import safe
from rlfix.render.common import (
    context_line,
    details_lines,
    flag_line,
    note_line,
    notes_phrase,
    places,
    remedies,
    shown,
    shown_values,
    single_source,
    where,
    where_line,
)
from rlfix.report import Diagnosis, Report

DEFAULT_TOP = 3

_STYLES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "yellow": "33",
    "green": "32",
    "cyan": "36",
    "magenta": "35",
}


def color_wanted(stream_isatty: bool) -> bool:
    """Colour on a terminal, never when NO_COLOR is set (https://no-color.org) or TERM=dumb."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    return stream_isatty


def _styler(color: bool) -> Callable[..., str]:
    def style(text: str, *names: str) -> str:
        if not color or not text:
            return text
        codes = ";".join(_STYLES[n] for n in names)
        return f"\x1b[{codes}m{text}\x1b[0m"

    return style


def render_text(
    report: Report,
    *,
    top: int | None = DEFAULT_TOP,
    show_all: bool = False,
    color: bool = False,
    all_flags: bool = False,
    verbose: bool = False,
    **_: Any,
) -> str:
    """A report for a terminal: what failed, where, why it ranks first, what to change."""
    style = _styler(color)
    out: list[str] = []
    names = [s.name for s in report.sources if not s.skipped]
    what = names[0] if len(names) == 1 else f"{len(names)} inputs"
    lines = sum(s.lines for s in report.sources)
    out.append(_headline(report, style, what, lines))
    ctx = report.context
    if not ctx.empty:
        out.append(style("job: ", "dim") + context_line(report))
    failed_at = where_line(report)
    if failed_at:
        out.append(style("failed: ", "dim") + failed_at)
    short = single_source(report)
    for i, d in enumerate(shown(report, top, show_all), 1):
        out.append("")
        out.extend(_text_diagnosis(i, d, style, all_flags, verbose, short))
    hidden = len(report.diagnoses) - len(shown(report, top, show_all))
    if hidden > 0:
        out.append("")
        out.append(style(f"({hidden} more finding{'s' if hidden > 1 else ''}; --all shows them)", "dim"))
    out.extend(_footer(report, style))
    # Log text, file names and user signatures reach the terminal only with their controls escaped.
    return safe.terminal("\n".join(out) + "\n", keep_style=color)


def _headline(report: Report, style: Callable[..., str], what: str, lines: int) -> str:
    """The first line: how many findings, or that none was recognised (and whether the command failed)."""
    ended = report.insights.exit
    if not report.diagnoses and ended is not None and ended.failed:
        return (
            style(f"rlfix: the command failed ({ended.describe()})", "bold")
            + f"; no known failure recognised in {what} ({lines:,} lines){notes_phrase(report)}."
        )
    if not report.diagnoses:
        verdict = style("rlfix: no failure recognised", "bold", "green")
        return verdict + f" in {what} ({lines:,} lines){notes_phrase(report)}."
    n = len(report.diagnoses)
    head = f"rlfix: {n} finding{'s' if n > 1 else ''}"
    return style(head, "bold") + f" in {what} ({lines:,} lines), most likely cause first."


def _footer(report: Report, style: Callable[..., str]) -> list[str]:
    """Notes worth knowing, skipped inputs and input errors."""
    out = []
    if report.notes:
        out.append("")
        out.append(style("worth knowing (warnings, not the cause):", "bold", "yellow"))
        out.extend(f"  - {note_line(d)}" for d in report.notes)
    out.extend(style(f"skipped {s.name}: {s.skipped}", "yellow") for s in report.sources if s.skipped)
    out.extend(style(f"error: {err}", "red") for err in report.errors)
    return out


def _text_diagnosis(
    index: int, d: Diagnosis, style: Callable[..., str], all_flags: bool, verbose: bool, short: bool = False
) -> list[str]:
    sev_color = {"fatal": "red", "error": "red", "warning": "yellow"}[d.severity.value]
    label = f"{d.kind.value}, {d.severity.value}, confidence {d.confidence:.2f}"
    out = [f"{index}. " + style(d.id, "bold", sev_color) + f"  {d.title}  " + style(f"[{label}]", "dim")]
    out.extend(textwrap.wrap(d.signature.summary, width=100, initial_indent="   ", subsequent_indent="   "))
    first = d.first
    out.append(style("   evidence:", "bold"))
    out.append(f"     {style(where(first, short), 'cyan')}  {first.text}")
    for e in d.evidence[1 : 3 if not verbose else None]:
        out.append(f"     {style(where(e, short), 'cyan')}  {e.text}")
    extra = [p for p in (places(d), f"{d.count} matching lines" if d.count > 1 else "") if p]
    if extra:
        out.append(style("     (" + "; ".join(extra) + ")", "dim"))
    values = shown_values(d)
    if values:
        vals = ", ".join(f"{k}={v}" for k, v in values.items())
        out.append(f"   values: {vals}")
    out.extend(f"   {line}" for line in details_lines(d))
    if d.folded:
        explained = ", ".join(f"{f.id} ({where(f.first, short)})" for f in d.folded)
        out.append(f"   explains: {explained}")
    out.append(style("   why first: " if index == 1 else "   why here: ", "dim") + "; ".join(d.reasons))
    steps = d.signature.remediation.steps
    chosen = remedies(d, all_flags)
    if steps or chosen:
        out.append(style("   fix:", "bold", "green"))
        for n, step in enumerate(steps, 1):
            out.append(f"     {n}. {step}")
        for r in chosen:
            out.append("     " + style("$ ", "green") + flag_line(r))
        hidden = len(d.remedies) - len(chosen)
        if hidden:
            out.append(
                style(f"     ({hidden} flag{'s' if hidden > 1 else ''} for other frameworks; --all-flags)", "dim")
            )
    return out
