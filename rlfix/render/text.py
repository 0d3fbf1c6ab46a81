"""Reports as text, JSON and Markdown (HTML lives in render_html.py). Formatting only."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from typing import Any

from rlfix.errors import UsageError
from rlfix.model import Evidence, Severity
from rlfix.render import safe
from rlfix.report import Diagnosis, Remedy, Report

FORMATS = ("text", "json", "markdown", "html")
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


def render(report: Report, fmt: str = "text", **options: Any) -> str:
    """Render `report` in one of FORMATS."""
    if fmt == "text":
        return render_text(report, **options)
    if fmt == "json":
        return report.to_json()
    if fmt in ("markdown", "md"):
        return render_markdown(report, **options)
    if fmt == "html":
        from rlfix.render.html import render_html

        return render_html(report, **options)
    raise UsageError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


def _shown(report: Report, top: int | None, show_all: bool) -> list[Diagnosis]:
    diagnoses = list(report.diagnoses)
    return diagnoses if show_all or top is None else diagnoses[:top]


def _where(e: Evidence, short: bool = False) -> str:
    """`job.log:67 [rank 3]`; with one input, just `line 67 [rank 3]`."""
    where = f"line {e.line}" if short else f"{e.source}:{e.line}"
    return f"{where} [{e.where}]" if e.where else where


def _single_source(report: Report) -> bool:
    return len([s for s in report.sources if not s.skipped]) == 1


def _places(d: Diagnosis) -> str:
    parts = []
    if len(d.ranks) > 1:
        shown = ", ".join(str(r) for r in d.ranks[:8]) + (", ..." if len(d.ranks) > 8 else "")
        parts.append(f"seen on {len(d.ranks)} ranks ({shown})")
    if len(d.workers) > 1:
        parts.append(f"{len(d.workers)} workers")
    if len(d.nodes) > 1:
        parts.append(f"{len(d.nodes)} nodes")
    return "; ".join(parts)


def _remedies(d: Diagnosis, all_flags: bool) -> list[Remedy]:
    return [r for r in d.remedies if r.applies or all_flags]


def _flag_line(r: Remedy) -> str:
    f = r.flag
    scope = f.framework if f.framework != "any" else "any framework"
    if f.versions:
        scope += f" {f.versions}"
    line = f"{f.value}  ({f.form.value}, {scope}; {f.purpose}"
    if f.cost:
        line += f"; cost: {f.cost}"
    line += ")"
    if r.reason:
        line += f"  <- {r.reason}"
    return line


def render_text(
    report: Report,
    *,
    top: int | None = DEFAULT_TOP,
    show_all: bool = False,
    color: bool = False,
    all_flags: bool = False,
    verbose: bool = False,
) -> str:
    """A report for a terminal: what failed, where, why it ranks first, what to change."""
    style = _styler(color)
    out: list[str] = []
    names = [s.name for s in report.sources if not s.skipped]
    what = names[0] if len(names) == 1 else f"{len(names)} inputs"
    lines = sum(s.lines for s in report.sources)
    if not report.diagnoses:
        out.append(style("rlfix: no failure recognised", "bold", "green") + f" in {what} ({lines:,} lines).")
    else:
        n = len(report.diagnoses)
        head = f"rlfix: {n} finding{'s' if n > 1 else ''}"
        out.append(style(head, "bold") + f" in {what} ({lines:,} lines), most likely cause first.")
    ctx = report.context
    if not ctx.empty:
        out.append(style("job: ", "dim") + _context_line(report))
    where = _where_line(report)
    if where:
        out.append(style("failed: ", "dim") + where)
    short = _single_source(report)
    for i, d in enumerate(_shown(report, top, show_all), 1):
        out.append("")
        out.extend(_text_diagnosis(i, d, style, all_flags, verbose, short))
    hidden = len(report.diagnoses) - len(_shown(report, top, show_all))
    if hidden > 0:
        out.append("")
        out.append(style(f"({hidden} more finding{'s' if hidden > 1 else ''}; --all shows them)", "dim"))
    for s in report.sources:
        if s.skipped:
            out.append(style(f"skipped {s.name}: {s.skipped}", "yellow"))
    for err in report.errors:
        out.append(style(f"error: {err}", "red"))
    # Log text, file names and user signatures reach the terminal only with their controls escaped.
    return safe.terminal("\n".join(out) + "\n", keep_style=color)


def _where_line(report: Report) -> str:
    """Stage, last step and first failing place, in words (empty when the log did not say)."""
    ins = report.insights
    parts = []
    if ins.get("stage"):
        parts.append(f"during {ins['stage']}")
    if ins.get("last_step") is not None:
        parts.append(f"after step {ins['last_step']}")
    first = ins.get("first_failure")
    if isinstance(first, dict):
        place = ", ".join(f"{k} {first[k]}" for k in ("rank", "worker", "node") if first.get(k) is not None)
        parts.append(f"first seen on {place}" if place else f"first at {first['source']}:{first['line']}")
    collateral = ins.get("collateral") or []
    if collateral:
        shown = ", ".join(list(collateral)[:6]) + (", ..." if len(collateral) > 6 else "")
        parts.append(f"then collateral on {shown}")
    return "; ".join(parts)


def _details_lines(d: Diagnosis) -> list[str]:
    out: list[str] = []
    det = d.details
    out.extend(det.get("quantities") or [])
    if det.get("exception"):
        msg = f": {det['message']}" if det.get("message") else ""
        out.append(f"exception: {det['exception']}{msg}")
    raised = det.get("raised_at") or d.values.get("raised_at")
    if raised:
        out.append(f"raised at: {raised}")
    if det.get("exit_code"):
        out.append(f"exit code: {det['exit_code']}")
    for t in det.get("templates") or []:
        out.append(f"error x{t['count']}: {t['template']}")
    if det.get("similar"):
        out.append("similar known failures: " + ", ".join(f"{s['id']} ({s['score']})" for s in det["similar"]))
    return out


def _context_line(report: Report) -> str:
    ctx = report.context
    parts = []
    for name in ctx.active_frameworks():
        version = ctx.versions.get(name)
        parts.append(f"{name} {version}" if version else name)
    others = [f"{k} {v}" for k, v in sorted(ctx.versions.items()) if k not in ctx.frameworks]
    parts.extend(others)
    for gpu, _count in sorted(ctx.gpus.items()):
        parts.append(gpu)
    return ", ".join(parts) if parts else "(nothing recognised)"


def _text_diagnosis(
    index: int, d: Diagnosis, style: Callable[..., str], all_flags: bool, verbose: bool, short: bool = False
) -> list[str]:
    sev_color = {"fatal": "red", "error": "red", "warning": "yellow"}[d.severity.value]
    label = f"{d.kind.value}, {d.severity.value}, confidence {d.confidence:.2f}"
    out = [f"{index}. " + style(d.id, "bold", sev_color) + f"  {d.title}  " + style(f"[{label}]", "dim")]
    out.extend(textwrap.wrap(d.signature.summary, width=100, initial_indent="   ", subsequent_indent="   "))
    first = d.first
    out.append(style("   evidence:", "bold"))
    out.append(f"     {style(_where(first, short), 'cyan')}  {first.text}")
    for e in d.evidence[1 : 3 if not verbose else None]:
        out.append(f"     {style(_where(e, short), 'cyan')}  {e.text}")
    extra = [p for p in (_places(d), f"{d.count} matching lines" if d.count > 1 else "") if p]
    if extra:
        out.append(style("     (" + "; ".join(extra) + ")", "dim"))
    shown_values = {k: v for k, v in d.values.items() if k not in d.details and k != "raised_at"}
    if shown_values and not d.details.get("quantities"):
        vals = ", ".join(f"{k}={v}" for k, v in shown_values.items())
        out.append(f"   values: {vals}")
    out.extend(f"   {line}" for line in _details_lines(d))
    if d.folded:
        explained = ", ".join(f"{f.id} ({_where(f.first, short)})" for f in d.folded)
        out.append(f"   explains: {explained}")
    out.append(style("   why first: " if index == 1 else "   why here: ", "dim") + "; ".join(d.reasons))
    steps = d.signature.remediation.steps
    remedies = _remedies(d, all_flags)
    if steps or remedies:
        out.append(style("   fix:", "bold", "green"))
        for n, step in enumerate(steps, 1):
            out.append(f"     {n}. {step}")
        for r in remedies:
            out.append("     " + style("$ ", "green") + _flag_line(r))
        hidden = len(d.remedies) - len(remedies)
        if hidden:
            out.append(
                style(f"     ({hidden} flag{'s' if hidden > 1 else ''} for other frameworks; --all-flags)", "dim")
            )
    return out


def render_markdown(
    report: Report, *, top: int | None = DEFAULT_TOP, show_all: bool = False, all_flags: bool = False, **_: Any
) -> str:
    """A report to paste into a GitHub issue."""
    out = ["## rlfix diagnosis", ""]
    if not report.diagnoses:
        out.append("No failure recognised.")
    if not report.context.empty:
        out.append(f"**Job:** {safe.md_text(_context_line(report))}")
        out.append("")
    where = _where_line(report)
    if where:
        out.append(f"**Failed:** {safe.md_text(where)}")
        out.append("")
    for i, d in enumerate(_shown(report, top, show_all), 1):
        out.append(f"### {i}. {safe.md_code(d.id)}: {safe.md_text(d.title)}")
        out.append("")
        label = f"{d.kind.value}, {d.severity.value}, confidence {d.confidence:.2f}"
        out.append(f"*{label}* — {safe.md_text(d.signature.summary)}")
        out.append("")
        out.append("**Evidence**")
        out.append("")
        out.extend(safe.md_block([f"{_where(e)}: {e.text}" for e in d.evidence[:3]]))
        places = _places(d)
        if places:
            out.append(f"({safe.md_text(places)})")
        for line in _details_lines(d):
            out.append(f"- {safe.md_code(line)}")
        if d.folded:
            out.append("")
            explained = (f"{safe.md_code(f.id)} ({safe.md_code(_where(f.first))})" for f in d.folded)
            out.append("**Explains:** " + ", ".join(explained))
        out.append("")
        out.append("**Why ranked here:** " + safe.md_text("; ".join(d.reasons)))
        out.append("")
        if d.signature.remediation.steps:
            out.append("**Fix**")
            out.append("")
            for n, step in enumerate(d.signature.remediation.steps, 1):
                out.append(f"{n}. {safe.md_text(step)}")
            out.append("")
        remedies = _remedies(d, all_flags)
        if remedies:
            out.append("| flag | framework | purpose | cost | note |")
            out.append("|---|---|---|---|---|")
            for r in remedies:
                f = r.flag
                scope = f.framework + (f" {f.versions}" if f.versions else "")
                note = r.reason or f.note or ""
                # In a table a pipe ends the cell even inside a code span; md_text escapes its own.
                cells = [safe.md_code(f.value).replace("|", "\\|")]
                cells += [safe.md_text(c) for c in (scope, f.purpose, f.cost or "", note)]
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
        if d.signature.references:
            out.append("References: " + ", ".join(safe.md_link(ref) for ref in d.signature.references[:4]))
            out.append("")
    hidden = len(report.diagnoses) - len(_shown(report, top, show_all))
    if hidden > 0:
        out.append(f"*{hidden} more finding(s) not shown.*")
    for err in report.errors:
        out.append(f"> error: {safe.md_code(err)}")
    return "\n".join(out).rstrip() + "\n"


SEVERITY_ORDER = [s.value for s in Severity]
