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
from rlfix.i18n import phrase, sentence, word
from rlfix.render.common import action_line, details_lines, flag_words, note_line, notes_phrase, where, where_line
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


def _places(d: Diagnosis, lang: str = "en") -> str:
    parts = []
    if d.ranks:
        shown = ", ".join(str(r) for r in d.ranks[:16]) + (", …" if len(d.ranks) > 16 else "")
        parts.append(phrase("rank{s} {shown}", lang, s="s" if len(d.ranks) > 1 else "", shown=shown))
    if d.workers:
        parts.append(phrase("{n} worker{s}", lang, n=len(d.workers), s="s" if len(d.workers) > 1 else ""))
    if d.nodes:
        shown = ", ".join(d.nodes[:8])
        parts.append(phrase("node{s} {shown}", lang, s="s" if len(d.nodes) > 1 else "", shown=shown))
    return "; ".join(parts)


def _safe_url(url: str) -> str | None:
    # A knowledge base is data from anywhere: only plain web links become clickable.
    return url if re.match(r"https?://[^\s\"'<>]+$", url) else None


def _remedy_row(d: Diagnosis, r: Remedy, lang: str = "en") -> str:
    f = r.flag
    scope = f.framework + (f" {f.versions}" if f.versions else "")
    cost, note_words = flag_words(d, r, lang)
    now = phrase("now {current}", lang, current=r.current) if r.current else None
    note = "; ".join(p for p in (sentence(r.reason, lang) if r.reason else None, now, note_words) if p)
    title, copy = phrase("Copy to the clipboard", lang), phrase("copy", lang)
    return (
        f'<tr><td><code>{_e(f.value)}</code><button type="button" class="copy" data-copy="{_e(f.value)}" '
        f'title="{_e(title)}">{_e(copy)}</button></td><td>{_e(f.form.value)}</td><td>{_e(scope)}</td>'
        f"<td>{_e(word(f.purpose, lang))}</td><td>{_e(cost or '')}</td><td>{_e(note)}</td></tr>"
    )


def _folded_html(d: Diagnosis, colour: dict[str, str], lang: str = "en") -> str:
    if not d.folded:
        return ""
    rows = []
    for f in d.folded:
        c = colour.get(f.id, "#6b6b6b")
        places = _places(f, lang)
        lines = phrase("{n} line(s)", lang, n=f.count)
        rows.append(
            f'<li data-id="{_e(f.id)}"><span class="sw sub" style="color:{c};background:#fff"></span>'
            f'<span class="mono">{_e(f.id)}</span> {_e(f.signature.localized(lang).title)} <span class="muted small">'
            f"[{_e(word(f.kind.value, lang))}, {_e(lines)}{'; ' + _e(places) if places else ''}]</span>"
            f"<pre>{_e(where(f.first))}  {_e(f.first.text)}</pre></li>"
        )
    n = len(d.folded)
    return (
        '<details class="folded"><summary>'
        + _e(phrase("Explains {n} other finding{s}: ", lang, n=n, s="s" if n > 1 else ""))
        + ", ".join(f'<span class="mono">{_e(f.id)}</span>' for f in d.folded)
        + f'</summary><ul class="folded">{"".join(rows)}</ul></details>'
    )


def _diagnosis_html(
    i: int, d: Diagnosis, colour: dict[str, str], all_flags: bool, verbose: bool, lang: str = "en"
) -> str:
    parts = [f'<article class="diag{" top" if i == 1 else ""}" data-id="{_e(d.id)}">', _head_html(i, d, colour, lang)]
    parts.extend(_evidence_html(d, verbose, lang))
    parts.append(_folded_html(d, colour, lang))
    if d.reasons:
        why = phrase("Why it ranks first" if i == 1 else "Why it ranks here", lang)
        parts.append(
            f'<details class="why"{" open" if i == 1 else ""}><summary>{_e(why)}</summary><ul class="reasons">'
            + "".join(f"<li>{_e(sentence(r, lang))}</li>" for r in d.reasons)
            + "</ul></details>"
        )
    parts.extend(_fix_html(d, all_flags, lang))
    parts.append(_references_html(d, lang))
    parts.append("</article>")
    return "".join(parts)


def _head_html(i: int, d: Diagnosis, colour: dict[str, str], lang: str = "en") -> str:
    sev = _e(d.severity.value)
    c = colour.get(d.id, "#6b6b6b")
    words = d.signature.localized(lang)
    confidence = phrase("confidence {confidence:.2f}", lang, confidence=d.confidence)
    return (
        f'<div class="head"><h3><span class="sw" style="color:{c};background:{c}"></span>{i}. '
        f'<span class="id mono">{_e(d.id)}</span></h3><span>{_e(words.title)}</span>'
        f'<span class="badge">{_e(word(d.kind.value, lang))}</span>'
        f'<span class="badge {sev}">{_e(word(d.severity.value, lang))}</span>'
        f'<span class="badge">{_e(confidence)}</span>'
        f'<span class="badge action {_e(d.action.value)}">{_e(word(d.action.value, lang))}</span></div>'
        f"<p>{_e(words.summary)}</p>"
        f'<p class="action"><b>{_e(phrase("Action", lang))}:</b> {_e(action_line(d, lang))}</p>'
    )


def _evidence_html(d: Diagnosis, verbose: bool, lang: str = "en") -> list[str]:
    evidence = d.evidence if verbose else d.evidence[:3]
    parts = ["<pre>" + "\n".join(f"{_e(where(e))}  {_e(e.text)}" for e in evidence) + "</pre>"]
    count = phrase("{n} matching lines", lang, n=d.count) if d.count > 1 else ""
    facts = [p for p in (_places(d, lang), count) if p]
    if facts:
        parts.append(f'<p class="muted small">{_e("; ".join(facts))}</p>')
    said = d.details.names() | {"raised_in", "called_from", "calls"}
    values = {k: v for k, v in d.values.items() if k not in said}
    if values:
        parts.append(
            f'<p class="small">{_e(phrase("values: ", lang))}'
            + ", ".join(f"<code>{_e(k)}={_e(v)}</code>" for k, v in values.items())
            + "</p>"
        )
    details = details_lines(d, lang)
    if details:
        parts.append('<ul class="details small">' + "".join(f"<li>{_e(line)}</li>" for line in details) + "</ul>")
    return parts


def _fix_html(d: Diagnosis, all_flags: bool, lang: str = "en") -> list[str]:
    parts = []
    steps = d.signature.localized(lang).steps
    remedies = [r for r in d.remedies if r.applies or all_flags]
    if steps or remedies:
        parts.append(f"<h3>{_e(phrase('Fix', lang))}</h3>")
    if steps:
        parts.append('<ol class="steps">' + "".join(f"<li>{_e(s)}</li>" for s in steps) + "</ol>")
    if remedies:
        heads = "".join(
            f"<th>{_e(phrase(h, lang))}</th>" for h in ("flag", "form", "framework", "purpose", "cost", "note")
        )
        parts.append(
            f'<table class="flags"><thead><tr>{heads}</tr></thead><tbody>'
            + "".join(_remedy_row(d, r, lang) for r in remedies)
            + "</tbody></table>"
        )
    hidden = len(d.remedies) - len(remedies)
    if hidden:
        template = "{n} flag{s} for frameworks not detected in the log (<code>--all-flags</code> shows them)."
        parts.append(f'<p class="muted small">{phrase(template, lang, n=hidden, s="s" if hidden > 1 else "")}</p>')
    return parts


def _references_html(d: Diagnosis, lang: str = "en") -> str:
    links = [u for u in (_safe_url(r) for r in d.signature.references[:6]) if u]
    if not links:
        return ""
    return (
        f'<p class="small muted">{_e(phrase("References: ", lang))}'
        + ", ".join(f'<a href="{_e(u)}" rel="noreferrer noopener">{_e(u)}</a>' for u in links)
        + "</p>"
    )


def _context_html(report: Report, lang: str = "en") -> str:
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
        shown = ", ".join(phrase("{name} ({lines:,} lines)", lang, name=s.name, lines=s.lines) for s in inputs[:8])
        more = phrase(", and {n} more", lang, n=len(inputs) - 8) if len(inputs) > 8 else ""
        rows.append(("inputs", shown + more))
    for s in report.sources:
        if s.skipped:
            rows.append(("skipped", f"{s.name}: {s.skipped}"))
    for err in report.errors:
        rows.append(("error", err))
    body = "".join(f"<dt>{_e(phrase(k, lang))}</dt><dd>{_e(v)}</dd>" for k, v in rows)
    settings = ""
    if ctx.settings:
        items = sorted(ctx.settings.items())[:200]
        seen = phrase("{n} setting(s) seen in the log", lang, n=len(ctx.settings))
        settings = (
            f"<details><summary>{_e(seen)}</summary><table>"
            + "".join(f"<tr><td><code>{_e(k)}</code></td><td><code>{_e(v)}</code></td></tr>" for k, v in items)
            + "</table></details>"
        )
    job = phrase("Job", lang)
    return f'<section class="context"><h2>{_e(job)}</h2><dl class="ctx">{body}</dl>{settings}</section>'


def _verdict(report: Report, lang: str = "en") -> str:
    names = [s.name for s in report.sources if not s.skipped]
    what = names[0] if len(names) == 1 else phrase("{n} inputs", lang, n=len(names))
    top = report.top
    if top is None:
        template = "No failure recognised in {what} ({lines:,} lines){notes}."
        text = phrase(template, lang, what=_e(what), lines=report.lines, notes=_e(notes_phrase(report, lang)))
        return f'<p class="verdict ok">{text}</p>'
    n = len(report.diagnoses)
    failed = where_line(report, lang)
    head = phrase(
        "{n} finding{s} in {what} ({lines:,} lines). ",
        lang,
        n=n,
        s="s" if n > 1 else "",
        what=_e(what),
        lines=report.lines,
    )
    cause = phrase(
        "Most likely cause: {id}, {title}, first at {where}.",
        lang,
        id=f'<b class="mono">{_e(top.id)}</b>',
        title=_e(top.signature.localized(lang).title),
        where=f'<span class="mono">{_e(where(top.first))}</span>',
    )
    tail = f'<br><span class="small">{phrase("Failed {text}.", lang, text=_e(failed))}</span>' if failed else ""
    return f'<p class="verdict">{head}{cause}{tail}</p>'


def _sections(
    report: Report,
    shown: Iterable[Diagnosis],
    hidden: int,
    all_flags: bool,
    verbose: bool,
    compact: bool,
    lang: str = "en",
) -> list[str]:
    colour = colours(report)
    title = _e(phrase("rlfix report", lang))
    out = [f"<h1>{title}</h1>" if not compact else f"<h2>{title}</h2>", _verdict(report, lang)]
    out.append(timeline_section(report, lang))
    out.append(_context_html(report, lang))
    diags = list(shown)
    if diags:
        heading = _e(phrase("Diagnoses, most likely cause first", lang))
        out.append(f'<section class="diagnoses"><h2>{heading}</h2>')
        out.extend(_diagnosis_html(i, d, colour, all_flags, verbose, lang) for i, d in enumerate(diags, 1))
        if hidden > 0:
            more = "{n} more finding{s} not shown (<code>--all</code> shows them)."
            out.append(f'<p class="muted">{phrase(more, lang, n=hidden, s="s" if hidden > 1 else "")}</p>')
        out.append("</section>")
    out.append(_notes_html(report, lang))
    engine = phrase(", engine {engine}", lang, engine=report.engine) if report.engine else ""
    footer = "rlfix {version}{engine}. Self-contained page: nothing is fetched."
    out.append(f"<footer>{_e(phrase(footer, lang, version=__version__, engine=engine))}</footer>")
    return out


def _notes_html(report: Report, lang: str) -> str:
    """Warnings worth knowing, not the cause."""
    if not report.notes:
        return ""
    heading, lead = _e(phrase("Worth knowing", lang)), _e(phrase("Warnings, not the cause.", lang))
    return (
        f'<section class="notes"><h2>{heading}</h2><p class="muted small">{lead}</p><ul>'
        + "".join(f'<li class="mono small">{_e(note_line(d, lang))}</li>' for d in report.notes)
        + "</ul></section>"
    )


def render_html(
    report: Report,
    *,
    top: int | None = 3,
    show_all: bool = False,
    all_flags: bool = False,
    verbose: bool = False,
    compact: bool = False,
    lang: str = "en",
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
    body = "".join(_sections(report, shown, len(diagnoses) - len(shown), all_flags, verbose, compact, lang))
    root = f'<div class="rlfix{" compact" if compact else ""}">{body}</div>'
    script = f"<script>{_JS}</script>"
    if compact:
        return f"<style>{_CSS}</style>{root}{script}"
    title = f"rlfix: {report.top.id}" if report.top else phrase("rlfix: no failure recognised", lang)
    html_lang = "zh-CN" if lang == "zh" else "en"
    return (
        f'<!doctype html>\n<html lang="{html_lang}"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f'<body style="margin:0;padding:16px 20px;background:#fff">{root}{script}</body></html>\n'
    )
