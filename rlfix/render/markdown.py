"""Reports to paste into a GitHub issue. Formatting only."""

from __future__ import annotations

from typing import Any

from rlfix import safe
from rlfix.i18n import join, phrase, sentence, word
from rlfix.render.common import (
    action_line,
    context_line,
    details_lines,
    flag_words,
    label,
    note_line,
    notes_phrase,
    places,
    remedies,
    shown,
    where,
    where_line,
)
from rlfix.render.text import DEFAULT_TOP
from rlfix.report import Diagnosis, Remedy, Report
from rlfix.version import __version__


def render_markdown(
    report: Report,
    *,
    top: int | None = DEFAULT_TOP,
    show_all: bool = False,
    all_flags: bool = False,
    lang: str = "en",
    **_: Any,
) -> str:
    """A report to paste into a GitHub issue."""
    out = [phrase("## rlfix diagnosis", lang), ""]
    if not report.diagnoses:
        out.append(phrase("No failure recognised{notes}.", lang, notes=safe.md_text(notes_phrase(report, lang))))
    if report.context.named:
        out.append(phrase("**Job:** {text}", lang, text=safe.md_text(context_line(report, lang))))
        out.append("")
    failed_at = where_line(report, lang)
    if failed_at:
        out.append(phrase("**Failed:** {text}", lang, text=safe.md_text(failed_at)))
        out.append("")
    for i, d in enumerate(shown(report, top, show_all), 1):
        out.extend(_diagnosis(i, d, all_flags, lang))
    hidden = len(report.diagnoses) - len(shown(report, top, show_all))
    if hidden > 0:
        out.append(phrase("*{n} more finding(s) not shown.*", lang, n=hidden))
    if report.notes:
        out += ["", phrase("**Worth knowing** (warnings, not the cause):", lang), ""]
        out.extend(f"- {safe.md_code(note_line(d, lang))}" for d in report.notes)
    for err in report.errors:
        out.append(phrase("> error: {text}", lang, text=safe.md_code(err)))
    # Pasted into issues: say which rlfix wrote it (the same version as `rlfix --version`).
    out += ["", "*" + safe.md_text(f"rlfix {__version__}") + "*"]
    return "\n".join(out).rstrip() + "\n"


def _diagnosis(i: int, d: Diagnosis, all_flags: bool, lang: str = "en") -> list[str]:
    # Log and KB text sits in code spans and fences it cannot close; prose is escaped (rlfix.safe).
    words = d.signature.localized(lang)
    colon = "：" if lang == "zh" else ": "
    out = [f"### {i}. {safe.md_code(d.id)}{colon}{safe.md_text(words.title)}", ""]
    out.append(f"*{label(d, lang)}* — {safe.md_text(words.summary)}")
    out += ["", phrase("**Action:** ", lang) + safe.md_text(action_line(d, lang))]
    out += ["", phrase("**Evidence**", lang), ""]
    out.extend(safe.md_block([f"{where(e)}: {e.text}" for e in d.evidence[:3]]))
    spread = places(d, lang)
    if spread:
        out.append(f"({safe.md_text(spread)})")
    out.extend(f"- {safe.md_code(line)}" for line in details_lines(d, lang))
    if d.folded:
        out.append("")
        explained = (f"{safe.md_code(f.id)} ({safe.md_code(where(f.first))})" for f in d.folded)
        out.append(phrase("**Explains:** ", lang) + ", ".join(explained))
    reasons = join([sentence(r, lang) for r in d.reasons], lang)
    out += ["", phrase("**Why ranked here:** ", lang) + safe.md_text(reasons), ""]
    if words.steps:
        out += [phrase("**Fix**", lang), ""]
        out.extend(f"{n}. {safe.md_text(step)}" for n, step in enumerate(words.steps, 1))
        out.append("")
    out.extend(_flags_table(d, remedies(d, all_flags), lang))
    if d.signature.references:
        out.append(phrase("References: ", lang) + ", ".join(safe.md_link(ref) for ref in d.signature.references[:4]))
        out.append("")
    return out


def _flags_table(d: Diagnosis, chosen: list[Remedy], lang: str = "en") -> list[str]:
    if not chosen:
        return []
    out = [phrase("| flag | framework | purpose | cost | note |", lang), "|---|---|---|---|---|"]
    for r in chosen:
        f = r.flag
        scope = f.framework + (f" {f.versions}" if f.versions else "")
        cost, note_words = flag_words(d, r, lang)
        note = (sentence(r.reason, lang) if r.reason else None) or note_words or ""
        # In a table a pipe ends the cell even inside a code span; md_text escapes its own.
        cells = [safe.md_code(f.value).replace("|", "\\|")]
        cells += [safe.md_text(c) for c in (scope, word(f.purpose, lang), cost or "", note)]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return out
