"""A self-contained HTML report (inline CSS, no network); also what notebooks show."""

from __future__ import annotations

from html import escape
from typing import Any

from rlfix.report import Diagnosis, Report

_CSS = """
.rlfix{font-family:system-ui,-apple-system,Segoe UI,sans-serif;line-height:1.4;max-width:1100px}
.rlfix h2{margin:.2em 0}.rlfix .diag{border:1px solid #ddd;border-radius:6px;padding:.6em .9em;margin:.6em 0}
.rlfix .id{font-family:ui-monospace,monospace;font-weight:700}.rlfix .fatal{color:#b00020}.rlfix .error{color:#b00020}
.rlfix .warning{color:#a65e00}.rlfix .meta{color:#666;font-size:.9em}
.rlfix pre{background:#f6f8fa;padding:.5em;overflow-x:auto;white-space:pre-wrap;word-break:break-all;margin:.3em 0}
.rlfix code{font-family:ui-monospace,monospace}.rlfix table{border-collapse:collapse}
.rlfix td,.rlfix th{border:1px solid #ddd;padding:.2em .5em;text-align:left;font-size:.92em}
"""


def _diagnosis(i: int, d: Diagnosis, all_flags: bool) -> str:
    sev = escape(d.severity.value)
    parts = [
        f'<div class="diag" data-id="{escape(d.id)}">',
        f'<div><b>{i}.</b> <span class="id {sev}">{escape(d.id)}</span> {escape(d.title)} '
        f'<span class="meta">[{escape(d.kind.value)}, {sev}, confidence {d.confidence:.2f}]</span></div>',
        f"<div>{escape(d.signature.summary)}</div>",
        "<pre>"
        + "\n".join(escape(f"{e.source}:{e.line}" + (f" [{e.where}]" if e.where else "") + f"  {e.text}") for e in d.evidence[:3])
        + "</pre>",
        f'<div class="meta">why: {escape("; ".join(d.reasons))}</div>',
    ]
    if d.folded:
        parts.append(
            '<div class="meta">explains: ' + ", ".join(f"<code>{escape(f.id)}</code>" for f in d.folded) + "</div>"
        )
    steps = d.signature.remediation.steps
    if steps:
        parts.append("<ol>" + "".join(f"<li>{escape(s)}</li>" for s in steps) + "</ol>")
    remedies = [r for r in d.remedies if r.applies or all_flags]
    if remedies:
        rows = "".join(
            f"<tr><td><code>{escape(r.flag.value)}</code></td><td>{escape(r.flag.framework)}"
            f"{escape(' ' + r.flag.versions if r.flag.versions else '')}</td><td>{escape(r.flag.purpose)}</td>"
            f"<td>{escape(r.reason or r.flag.cost or '')}</td></tr>"
            for r in remedies
        )
        parts.append("<table><tr><th>flag</th><th>framework</th><th>purpose</th><th>note</th></tr>" + rows + "</table>")
    parts.append("</div>")
    return "".join(parts)


def render_html(
    report: Report, *, top: int | None = 3, show_all: bool = False, all_flags: bool = False, compact: bool = False, **_: Any
) -> str:
    """Render `report` as HTML; `compact` gives a fragment for notebooks instead of a page."""
    shown = list(report.diagnoses) if show_all or top is None else list(report.diagnoses)[:top]
    body = [f"<style>{_CSS}</style>", '<div class="rlfix">']
    if report.diagnoses:
        body.append(f"<h2>rlfix: {len(report.diagnoses)} finding(s), most likely cause first</h2>")
    else:
        body.append("<h2>rlfix: no failure recognised</h2>")
    body.extend(_diagnosis(i, d, all_flags) for i, d in enumerate(shown, 1))
    body.append("</div>")
    fragment = "".join(body)
    if compact:
        return fragment
    return f'<!doctype html><html><head><meta charset="utf-8"><title>rlfix report</title></head><body>{fragment}</body></html>\n'
