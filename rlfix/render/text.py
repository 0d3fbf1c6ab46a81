"""Reports for a terminal: what failed, where, why it ranks first, what to change. Formatting only."""

from __future__ import annotations

import os
import textwrap
import unicodedata
from collections.abc import Callable
from typing import Any

from rlfix import safe
from rlfix.i18n import error, join, phrase, sentence
from rlfix.render.common import (
    action_line,
    context_line,
    details_lines,
    flag_line,
    label,
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
from rlfix.version import __version__

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
    lang: str = "en",
    **_: Any,
) -> str:
    """A report for a terminal: what failed, where, why it ranks first, what to change."""
    style = _styler(color)
    out = _headline(report, style, lang)
    short = single_source(report)
    for i, d in enumerate(shown(report, top, show_all), 1):
        out.append("")
        out.extend(_text_diagnosis(i, d, style, all_flags, verbose, short, lang))
    hidden = len(report.diagnoses) - len(shown(report, top, show_all))
    if hidden > 0:
        out.append("")
        more = phrase("({n} more finding{s}; --all shows them)", lang, n=hidden, s="s" if hidden > 1 else "")
        out.append(style(more, "dim"))
    out.extend(_footer(report, style, lang))
    # Log text, file names and user signatures reach the terminal only with their controls escaped.
    return safe.terminal("\n".join(out) + "\n", keep_style=color)


def _headline(report: Report, style: Callable[..., str], lang: str) -> list[str]:
    """What was read and how many findings; the job; where it failed."""
    out: list[str] = []
    names = [s.name for s in report.sources if not s.skipped]
    what = names[0] if len(names) == 1 else phrase("{n} inputs", lang, n=len(names))
    lines = sum(s.lines for s in report.sources)
    ended = report.insights.exit
    if not report.diagnoses and ended is not None and ended.failed:
        out.append(
            style(phrase("rlfix: the command failed ({how})", lang, how=ended.describe()), "bold")
            + phrase(
                "; no known failure recognised in {what} ({lines:,} lines){notes}.",
                lang,
                what=what,
                lines=lines,
                notes=notes_phrase(report, lang),
            )
        )
    elif not report.diagnoses:
        notes = notes_phrase(report, lang)
        out.append(
            style(phrase("rlfix: no failure recognised", lang), "bold", "green")
            + phrase(" in {what} ({lines:,} lines){notes}.", lang, what=what, lines=lines, notes=notes)
        )
    else:
        n = len(report.diagnoses)
        head = phrase("rlfix: {n} finding{s}", lang, n=n, s="s" if n > 1 else "")
        tail = phrase(" in {what} ({lines:,} lines), most likely cause first.", lang, what=what, lines=lines)
        out.append(style(head, "bold") + tail)
    if report.context.named:
        out.append(style(phrase("job: ", lang), "dim") + context_line(report, lang))
    failed_at = where_line(report, lang)
    if failed_at:
        out.append(style(phrase("failed: ", lang), "dim") + failed_at)
    return out


def _footer(report: Report, style: Callable[..., str], lang: str = "en") -> list[str]:
    """Notes worth knowing, skipped inputs and input errors."""
    out = []
    if report.notes:
        out.append("")
        out.append(style(phrase("worth knowing (warnings, not the cause):", lang), "bold", "yellow"))
        out.extend(f"  - {note_line(d, lang)}" for d in report.notes)
    skipped = [phrase("skipped {name}: {why}", lang, name=s.name, why=s.skipped) for s in report.sources if s.skipped]
    out.extend(style(line, "yellow") for line in skipped)
    out.extend(style(phrase("error: {text}", lang, text=error(err, lang)), "red") for err in report.errors)
    if report.diagnoses:
        # A failure's report gets pasted into issues: say which rlfix wrote it (as `rlfix --version`).
        out += ["", style(f"rlfix {__version__}", "dim")]
    return out


def _text_diagnosis(
    index: int,
    d: Diagnosis,
    style: Callable[..., str],
    all_flags: bool,
    verbose: bool,
    short: bool = False,
    lang: str = "en",
) -> list[str]:
    sev_color = {"fatal": "red", "error": "red", "warning": "yellow"}[d.severity.value]
    words = d.signature.localized(lang)
    out = [f"{index}. " + style(d.id, "bold", sev_color) + f"  {words.title}  " + style(f"[{label(d, lang)}]", "dim")]
    out.extend(_wrap(words.summary, lang))
    out.append(style(phrase("   action: ", lang), "bold") + action_line(d, lang))
    out.append(style(phrase("   evidence:", lang), "bold"))
    for e in d.evidence[: 3 if not verbose else None]:
        out.append(f"     {style(where(e, short, lang), 'cyan')}  {e.text}")
    count = phrase("{n} matching lines", lang, n=d.count) if d.count > 1 else ""
    extra = [p for p in (places(d, lang), count) if p]
    if extra:
        open_, close = ("（", "）") if lang == "zh" else ("(", ")")
        out.append(style(f"     {open_}" + join(extra, lang) + close, "dim"))
    values = shown_values(d)
    if values:
        vals = ", ".join(f"{k}={v}" for k, v in values.items())
        out.append(phrase("   values: {values}", lang, values=vals))
    out.extend(f"   {line}" for line in details_lines(d, lang))
    if d.folded:
        explained = ", ".join(f"{f.id} ({where(f.first, short, lang)})" for f in d.folded)
        out.append(phrase("   explains: {explained}", lang, explained=explained))
    why = phrase("   why first: " if index == 1 else "   why here: ", lang)
    out.append(style(why, "dim") + join([sentence(r, lang) for r in d.reasons], lang))
    out.extend(_text_fix(d, style, all_flags, lang))
    return out


def _wrap(text: str, lang: str) -> list[str]:
    """A paragraph indented under its heading; Chinese (no spaces to break at) by display columns."""
    if lang != "zh":
        return textwrap.wrap(text, width=100, initial_indent="   ", subsequent_indent="   ")
    out, line, cols = [], "", 0
    for char in text:
        wide = 2 if unicodedata.east_asian_width(char) in "WF" else 1
        if cols + wide > 97:
            out.append("   " + line.rstrip())
            line, cols = "", 0
        line, cols = line + char, cols + wide
    return [*out, "   " + line.rstrip()] if line.strip() else out


def _text_fix(d: Diagnosis, style: Callable[..., str], all_flags: bool, lang: str) -> list[str]:
    """The numbered steps and the flags chosen for this job."""
    steps = d.signature.localized(lang).steps
    chosen = remedies(d, all_flags)
    if not (steps or chosen):
        return []
    out = [style(phrase("   fix:", lang), "bold", "green")]
    out.extend(f"     {n}. {step}" for n, step in enumerate(steps, 1))
    out.extend("     " + style("$ ", "green") + flag_line(r, d, lang) for r in chosen)
    hidden = len(d.remedies) - len(chosen)
    if hidden:
        more = phrase(
            "     ({n} flag{s} for other frameworks; --all-flags)", lang, n=hidden, s="s" if hidden > 1 else ""
        )
        out.append(style(more, "dim"))
    return out
