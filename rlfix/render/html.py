"""A self-contained HTML report: inline CSS, an inline SVG timeline, a few lines of JS, no network.

`render_html(report)` gives a page to attach to a CI run or open from disk; `compact=True`
gives the fragment a notebook cell shows (`Report._repr_html_`). Formatting only: the
timeline is laid out from `Report.timeline`, everything else from the ranked diagnoses.

Every string that came from a log or a knowledge base goes through `_e` (HTML escaping,
quotes included) before it reaches the page, and the page's Content-Security-Policy allows
only the one script below (by hash), so even a missed escape could not run injected code.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import re
from collections.abc import Iterable
from typing import Any

from rlfix import safe
from rlfix.render.common import details_lines, note_line, notes_phrase, where, where_line
from rlfix.render.svg import colours, timeline_section
from rlfix.report import Diagnosis, Remedy, Report
from rlfix.version import __version__

_STATIC = importlib.resources.files("rlfix.render") / "static"
_CSS = (_STATIC / "report.css").read_text(encoding="utf-8")
# Wires copy buttons and legend focus. Plain ES5, no globals, safe to run once per fragment.
_JS = (_STATIC / "report.js").read_text(encoding="utf-8")
_JS_HASH = base64.b64encode(hashlib.sha256(_JS.encode("utf-8")).digest()).decode("ascii")
_CSP = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_JS_HASH}'; img-src data:"


def _e(text: object) -> str:
    """Escape for HTML text and attribute values (quotes too), with controls shown escaped."""
    return safe.xml_text(text)


def _places(d: Diagnosis) -> str:
    parts = []
    if d.ranks:
        shown = ", ".join(str(r) for r in d.ranks[:16]) + (", …" if len(d.ranks) > 16 else "")
        parts.append(f"rank{'s' if len(d.ranks) > 1 else ''} {shown}")
    if d.workers:
        parts.append(f"{len(d.workers)} worker{'s' if len(d.workers) > 1 else ''}")
    if d.nodes:
        parts.append(f"node{'s' if len(d.nodes) > 1 else ''} " + ", ".join(d.nodes[:8]))
    return "; ".join(parts)


def _safe_url(url: str) -> str | None:
    # A knowledge base is data from anywhere: only plain web links become clickable.
    return url if re.match(r"https?://[^\s\"'<>]+$", url) else None


def _remedy_row(r: Remedy) -> str:
    f = r.flag
    scope = f.framework + (f" {f.versions}" if f.versions else "")
    note = "; ".join(p for p in (r.reason, f"now {r.current}" if r.current else None, f.note) if p)
    cost = f.cost or ""
    return (
        f'<tr><td><code>{_e(f.value)}</code><button type="button" class="copy" data-copy="{_e(f.value)}" '
        f'title="Copy to the clipboard">copy</button></td><td>{_e(f.form.value)}</td><td>{_e(scope)}</td>'
        f"<td>{_e(f.purpose)}</td><td>{_e(cost)}</td><td>{_e(note)}</td></tr>"
    )


def _folded_html(d: Diagnosis, colour: dict[str, str]) -> str:
    if not d.folded:
        return ""
    rows = []
    for f in d.folded:
        c = colour.get(f.id, "#6b6b6b")
        places = _places(f)
        rows.append(
            f'<li data-id="{_e(f.id)}"><span class="sw sub" style="color:{c};background:#fff"></span>'
            f'<span class="mono">{_e(f.id)}</span> {_e(f.title)} <span class="muted small">'
            f"[{_e(f.kind.value)}, {f.count} line(s){'; ' + _e(places) if places else ''}]</span>"
            f"<pre>{_e(where(f.first))}  {_e(f.first.text)}</pre></li>"
        )
    n = len(d.folded)
    return (
        f'<details class="folded"><summary>Explains {n} other finding{"s" if n > 1 else ""}: '
        + ", ".join(f'<span class="mono">{_e(f.id)}</span>' for f in d.folded)
        + f'</summary><ul class="folded">{"".join(rows)}</ul></details>'
    )


def _diagnosis_html(i: int, d: Diagnosis, colour: dict[str, str], all_flags: bool, verbose: bool) -> str:
    parts = [f'<article class="diag{" top" if i == 1 else ""}" data-id="{_e(d.id)}">', _head_html(i, d, colour)]
    parts.extend(_evidence_html(d, verbose))
    parts.append(_folded_html(d, colour))
    if d.reasons:
        label = "Why it ranks first" if i == 1 else "Why it ranks here"
        parts.append(
            f'<details class="why"{" open" if i == 1 else ""}><summary>{label}</summary><ul class="reasons">'
            + "".join(f"<li>{_e(r)}</li>" for r in d.reasons)
            + "</ul></details>"
        )
    parts.extend(_fix_html(d, all_flags))
    parts.append(_references_html(d))
    parts.append("</article>")
    return "".join(parts)


def _head_html(i: int, d: Diagnosis, colour: dict[str, str]) -> str:
    sev = _e(d.severity.value)
    c = colour.get(d.id, "#6b6b6b")
    return (
        f'<div class="head"><h3><span class="sw" style="color:{c};background:{c}"></span>{i}. '
        f'<span class="id mono">{_e(d.id)}</span></h3><span>{_e(d.title)}</span>'
        f'<span class="badge">{_e(d.kind.value)}</span><span class="badge {sev}">{sev}</span>'
        f'<span class="badge">confidence {d.confidence:.2f}</span></div>'
        f"<p>{_e(d.signature.summary)}</p>"
    )


def _evidence_html(d: Diagnosis, verbose: bool) -> list[str]:
    evidence = d.evidence if verbose else d.evidence[:3]
    parts = ["<pre>" + "\n".join(f"{_e(where(e))}  {_e(e.text)}" for e in evidence) + "</pre>"]
    facts = [p for p in (_places(d), f"{d.count} matching lines" if d.count > 1 else "") if p]
    if facts:
        parts.append(f'<p class="muted small">{_e("; ".join(facts))}</p>')
    said = d.details.names() | {"raised_in", "called_from", "calls"}
    values = {k: v for k, v in d.values.items() if k not in said}
    if values:
        parts.append(
            '<p class="small">values: ' + ", ".join(f"<code>{_e(k)}={_e(v)}</code>" for k, v in values.items()) + "</p>"
        )
    details = details_lines(d)
    if details:
        parts.append('<ul class="details small">' + "".join(f"<li>{_e(line)}</li>" for line in details) + "</ul>")
    return parts


def _fix_html(d: Diagnosis, all_flags: bool) -> list[str]:
    parts = []
    steps = d.signature.remediation.steps
    remedies = [r for r in d.remedies if r.applies or all_flags]
    if steps or remedies:
        parts.append("<h3>Fix</h3>")
    if steps:
        parts.append('<ol class="steps">' + "".join(f"<li>{_e(s)}</li>" for s in steps) + "</ol>")
    if remedies:
        parts.append(
            '<table class="flags"><thead><tr><th>flag</th><th>form</th><th>framework</th><th>purpose</th>'
            "<th>cost</th><th>note</th></tr></thead><tbody>"
            + "".join(_remedy_row(r) for r in remedies)
            + "</tbody></table>"
        )
    hidden = len(d.remedies) - len(remedies)
    if hidden:
        parts.append(
            f'<p class="muted small">{hidden} flag{"s" if hidden > 1 else ""} for frameworks not detected in '
            "the log (<code>--all-flags</code> shows them).</p>"
        )
    return parts


def _references_html(d: Diagnosis) -> str:
    links = [u for u in (_safe_url(r) for r in d.signature.references[:6]) if u]
    if not links:
        return ""
    return (
        '<p class="small muted">References: '
        + ", ".join(f'<a href="{_e(u)}" rel="noreferrer noopener">{_e(u)}</a>' for u in links)
        + "</p>"
    )


def _context_html(report: Report) -> str:
    ctx = report.context
    rows: list[tuple[str, str]] = []
    frameworks = [f"{n} {ctx.versions[n]}" if n in ctx.versions else n for n in ctx.active_frameworks()]
    if frameworks:
        rows.append(("frameworks", ", ".join(frameworks)))
    others = [f"{k} {v}" for k, v in sorted(ctx.versions.items()) if k not in ctx.active_frameworks()]
    if others:
        rows.append(("versions", ", ".join(others)))
    if ctx.gpus:
        rows.append(("GPUs", ", ".join(sorted(ctx.gpus))))
    inputs = [s for s in report.sources if not s.skipped]
    if inputs:
        shown = ", ".join(f"{s.name} ({s.lines:,} lines)" for s in inputs[:8])
        rows.append(("inputs", shown + (f", and {len(inputs) - 8} more" if len(inputs) > 8 else "")))
    for s in report.sources:
        if s.skipped:
            rows.append(("skipped", f"{s.name}: {s.skipped}"))
    for err in report.errors:
        rows.append(("error", err))
    body = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows)
    settings = ""
    if ctx.settings:
        items = sorted(ctx.settings.items())[:200]
        settings = (
            f"<details><summary>{len(ctx.settings)} setting(s) seen in the log</summary><table>"
            + "".join(f"<tr><td><code>{_e(k)}</code></td><td><code>{_e(v)}</code></td></tr>" for k, v in items)
            + "</table></details>"
        )
    return f'<section class="context"><h2>Job</h2><dl class="ctx">{body}</dl>{settings}</section>'


def _verdict(report: Report) -> str:
    names = [s.name for s in report.sources if not s.skipped]
    what = names[0] if len(names) == 1 else f"{len(names)} inputs"
    top = report.top
    if top is None:
        return (
            f'<p class="verdict ok">No failure recognised in {_e(what)} ({report.lines:,} lines)'
            f"{_e(notes_phrase(report))}.</p>"
        )
    n = len(report.diagnoses)
    first = top.first
    failed = where_line(report)
    return (
        f'<p class="verdict">{n} finding{"s" if n > 1 else ""} in {_e(what)} ({report.lines:,} lines). '
        f'Most likely cause: <b class="mono">{_e(top.id)}</b>, {_e(top.title)}, first at '
        f'<span class="mono">{_e(where(first))}</span>.'
        + (f'<br><span class="small">Failed {_e(failed)}.</span>' if failed else "")
        + "</p>"
    )


def _sections(
    report: Report, shown: Iterable[Diagnosis], hidden: int, all_flags: bool, verbose: bool, compact: bool
) -> list[str]:
    colour = colours(report)
    out = ["<h1>rlfix report</h1>" if not compact else "<h2>rlfix report</h2>", _verdict(report)]
    out.append(timeline_section(report))
    out.append(_context_html(report))
    diags = list(shown)
    if diags:
        out.append('<section class="diagnoses"><h2>Diagnoses, most likely cause first</h2>')
        out.extend(_diagnosis_html(i, d, colour, all_flags, verbose) for i, d in enumerate(diags, 1))
        if hidden > 0:
            out.append(
                f'<p class="muted">{hidden} more finding{"s" if hidden > 1 else ""} not shown '
                "(<code>--all</code> shows them).</p>"
            )
        out.append("</section>")
    if report.notes:
        out.append(
            '<section class="notes"><h2>Worth knowing</h2><p class="muted small">Warnings, not the cause.</p><ul>'
            + "".join(f'<li class="mono small">{_e(note_line(d))}</li>' for d in report.notes)
            + "</ul></section>"
        )
    engine = f", engine {report.engine}" if report.engine else ""
    out.append(f"<footer>rlfix {_e(__version__)}{_e(engine)}. Self-contained page: nothing is fetched.</footer>")
    return out


def render_html(
    report: Report,
    *,
    top: int | None = 3,
    show_all: bool = False,
    all_flags: bool = False,
    verbose: bool = False,
    compact: bool = False,
    **_: Any,
) -> str:
    """Render `report` as one self-contained HTML page; `compact=True` gives a notebook fragment.

    The page holds the job context, a timeline (x: log position, or time when every matched
    line has a timestamp; one lane per rank, worker, node or source; one mark per matched line
    coloured by finding), the ranked diagnoses with evidence, folded symptoms and fix flags with
    copy buttons. It loads nothing from the network.
    """
    diagnoses = list(report.diagnoses)
    shown = diagnoses if show_all or top is None else diagnoses[:top]
    body = "".join(_sections(report, shown, len(diagnoses) - len(shown), all_flags, verbose, compact))
    root = f'<div class="rlfix{" compact" if compact else ""}">{body}</div>'
    script = f"<script>{_JS}</script>"
    if compact:
        return f"<style>{_CSS}</style>{root}{script}"
    title = f"rlfix: {report.top.id}" if report.top else "rlfix: no failure recognised"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f'<body style="margin:0;padding:16px 20px;background:#fff">{root}{script}</body></html>\n'
    )
