"""Reports to paste into a GitHub issue. Formatting only."""

from __future__ import annotations

from typing import Any

from rlfix import safe
from rlfix.render.common import (
    context_line,
    details_lines,
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


def render_markdown(
    report: Report, *, top: int | None = DEFAULT_TOP, show_all: bool = False, all_flags: bool = False, **_: Any
) -> str:
    """A report to paste into a GitHub issue."""
    out = ["## rlfix diagnosis", ""]
    if not report.diagnoses:
        out.append(f"No failure recognised{safe.md_text(notes_phrase(report))}.")
    if not report.context.empty:
        out.append(f"**Job:** {safe.md_text(context_line(report))}")
        out.append("")
    failed_at = where_line(report)
    if failed_at:
        out.append(f"**Failed:** {safe.md_text(failed_at)}")
        out.append("")
    for i, d in enumerate(shown(report, top, show_all), 1):
        out.extend(_diagnosis(i, d, all_flags))
    hidden = len(report.diagnoses) - len(shown(report, top, show_all))
    if hidden > 0:
        out.append(f"*{hidden} more finding(s) not shown.*")
    if report.notes:
        out += ["", "**Worth knowing** (warnings, not the cause):", ""]
        out.extend(f"- {safe.md_code(note_line(d))}" for d in report.notes)
    for err in report.errors:
        out.append(f"> error: {safe.md_code(err)}")
    return "\n".join(out).rstrip() + "\n"


def _diagnosis(i: int, d: Diagnosis, all_flags: bool) -> list[str]:
    # Log and KB text sits in code spans and fences it cannot close; prose is escaped (rlfix.safe).
    out = [f"### {i}. {safe.md_code(d.id)}: {safe.md_text(d.title)}", ""]
    label = f"{d.kind.value}, {d.severity.value}, confidence {d.confidence:.2f}"
    out.append(f"*{label}* — {safe.md_text(d.signature.summary)}")
    out += ["", "**Evidence**", ""]
    out.extend(safe.md_block([f"{where(e)}: {e.text}" for e in d.evidence[:3]]))
    spread = places(d)
    if spread:
        out.append(f"({safe.md_text(spread)})")
    out.extend(f"- {safe.md_code(line)}" for line in details_lines(d))
    if d.folded:
        out.append("")
        explained = (f"{safe.md_code(f.id)} ({safe.md_code(where(f.first))})" for f in d.folded)
        out.append("**Explains:** " + ", ".join(explained))
    out += ["", "**Why ranked here:** " + safe.md_text("; ".join(d.reasons)), ""]
    if d.signature.remediation.steps:
        out += ["**Fix**", ""]
        out.extend(f"{n}. {safe.md_text(step)}" for n, step in enumerate(d.signature.remediation.steps, 1))
        out.append("")
    out.extend(_flags_table(remedies(d, all_flags)))
    if d.signature.references:
        out.append("References: " + ", ".join(safe.md_link(ref) for ref in d.signature.references[:4]))
        out.append("")
    return out


def _flags_table(chosen: list[Remedy]) -> list[str]:
    if not chosen:
        return []
    out = ["| flag | framework | purpose | cost | note |", "|---|---|---|---|---|"]
    for r in chosen:
        f = r.flag
        scope = f.framework + (f" {f.versions}" if f.versions else "")
        note = r.reason or f.note or ""
        # In a table a pipe ends the cell even inside a code span; md_text escapes its own.
        cells = [safe.md_code(f.value).replace("|", "\\|")]
        cells += [safe.md_text(c) for c in (scope, f.purpose, f.cost or "", note)]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return out
