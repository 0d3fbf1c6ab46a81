"""Reports to paste into a GitHub issue. Formatting only."""

from __future__ import annotations

from typing import Any

from rlfix.render.common import context_line, details_lines, places, remedies, shown, where, where_line
from rlfix.render.text import DEFAULT_TOP
from rlfix.report import Diagnosis, Remedy, Report


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(
    report: Report, *, top: int | None = DEFAULT_TOP, show_all: bool = False, all_flags: bool = False, **_: Any
) -> str:
    """A report to paste into a GitHub issue."""
    out = ["## rlfix diagnosis", ""]
    if not report.diagnoses:
        out.append("No failure recognised.")
    if not report.context.empty:
        out.append(f"**Job:** {context_line(report)}")
        out.append("")
    failed_at = where_line(report)
    if failed_at:
        out.append(f"**Failed:** {failed_at}")
        out.append("")
    for i, d in enumerate(shown(report, top, show_all), 1):
        out.extend(_diagnosis(i, d, all_flags))
    hidden = len(report.diagnoses) - len(shown(report, top, show_all))
    if hidden > 0:
        out.append(f"*{hidden} more finding(s) not shown.*")
    for err in report.errors:
        out.append(f"> error: {err}")
    return "\n".join(out).rstrip() + "\n"


def _diagnosis(i: int, d: Diagnosis, all_flags: bool) -> list[str]:
    out = [f"### {i}. `{d.id}`: {d.title}", ""]
    out.append(f"*{d.kind.value}, {d.severity.value}, confidence {d.confidence:.2f}* — {d.signature.summary}")
    out += ["", "**Evidence**", "", "```text"]
    out.extend(f"{where(e)}: {e.text}" for e in d.evidence[:3])
    out.append("```")
    spread = places(d)
    if spread:
        out.append(f"({spread})")
    out.extend(f"- {line}" for line in details_lines(d))
    if d.folded:
        out.append("")
        out.append("**Explains:** " + ", ".join(f"`{f.id}` ({where(f.first)})" for f in d.folded))
    out += ["", "**Why ranked here:** " + "; ".join(d.reasons), ""]
    if d.signature.remediation.steps:
        out += ["**Fix**", ""]
        out.extend(f"{n}. {step}" for n, step in enumerate(d.signature.remediation.steps, 1))
        out.append("")
    out.extend(_flags_table(remedies(d, all_flags)))
    if d.signature.references:
        out.append("References: " + ", ".join(f"<{ref}>" for ref in d.signature.references[:4]))
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
        out.append(
            f"| `{_md_escape(f.value)}` | {_md_escape(scope)} | {f.purpose} | {_md_escape(f.cost or '')} "
            f"| {_md_escape(note)} |"
        )
    out.append("")
    return out
