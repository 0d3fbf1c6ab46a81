"""The fleet table in four formats: text (aligned), JSON, Markdown, and a self-contained HTML page.

Every string from a log or a path goes through `rlfix.safe` first: `one_line` for the terminal,
`md_code`/`md_text` for Markdown, `xml_text` for HTML. The HTML page has a sortable table and a
bar chart of causes drawn as inline SVG; its Content-Security-Policy allows only the one script
below, by hash, as the single-job report does.
"""

from __future__ import annotations

import base64
import hashlib
import unicodedata
from typing import Any

from rlfix import safe
from rlfix.fleet.model import FLEET_RENDERERS, Fleet, Group
from rlfix.i18n import phrase, word
from rlfix.version import __version__

#: Characters of a cause (an error template can be long) and of an evidence line in text and Markdown.
CAUSE_CHARS = 60
EVIDENCE_CHARS = 100
HEADERS = ("cause", "action", "owner", "jobs", "first seen", "last seen", "frameworks", "example job", "evidence")
#: The column of job counts (right-aligned, sorted as numbers).
_JOBS = HEADERS.index("jobs")

# Sorts the table when a header is clicked (again: the other way). Plain ES5, no globals; numbers
# sort as numbers (data-sort holds the raw value). Marks the root when wired, for the browser test.
_JS = (
    "(function(){var roots=document.querySelectorAll('.rlfix-fleet:not([data-js])');"
    "Array.prototype.forEach.call(roots,function(root){root.setAttribute('data-js','ready');"
    "var table=root.querySelector('table.groups');if(!table)return;"
    "Array.prototype.forEach.call(table.querySelectorAll('th'),function(th,col){"
    "th.addEventListener('click',function(){var body=table.tBodies[0];"
    "var asc=th.getAttribute('aria-sort')!=='ascending';"
    "Array.prototype.forEach.call(table.querySelectorAll('th'),function(o){o.removeAttribute('aria-sort');});"
    "th.setAttribute('aria-sort',asc?'ascending':'descending');"
    "var num=th.getAttribute('data-type')==='number';"
    "var rows=Array.prototype.slice.call(body.rows);"
    "rows.sort(function(a,b){var x=a.cells[col].getAttribute('data-sort'),y=b.cells[col].getAttribute('data-sort');"
    "var c=num?(parseFloat(x)-parseFloat(y)):(x<y?-1:(x>y?1:0));return asc?c:-c;});"
    "rows.forEach(function(r){body.appendChild(r);});});});});})();"
)
_JS_HASH = base64.b64encode(hashlib.sha256(_JS.encode("utf-8")).digest()).decode("ascii")
_CSP = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_JS_HASH}'; img-src data:"
_CSS = (
    ".rlfix-fleet{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d1d1f}"
    ".rlfix-fleet h1{font-size:20px;margin:0 0 4px}.rlfix-fleet .muted{color:#6b6b6b}"
    ".rlfix-fleet table{border-collapse:collapse;margin:12px 0;width:100%}"
    ".rlfix-fleet th,.rlfix-fleet td{border-bottom:1px solid #e3e3e3;padding:4px 8px;text-align:left;"
    "vertical-align:top}"
    ".rlfix-fleet th{cursor:pointer;user-select:none;background:#f6f6f6}"
    ".rlfix-fleet th[aria-sort=ascending]::after{content:' \\25B2'}"
    ".rlfix-fleet th[aria-sort=descending]::after{content:' \\25BC'}"
    ".rlfix-fleet td.n{text-align:right}.rlfix-fleet code{font:12px ui-monospace,Menlo,Consolas,monospace;"
    "word-break:break-all}.rlfix-fleet tr.healthy td{color:#2e7d32}"
    ".rlfix-fleet svg text{font:12px ui-monospace,Menlo,Consolas,monospace}"
)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _row(g: Group) -> tuple[str, ...]:
    return (
        _cut(g.key, CAUSE_CHARS),
        "/".join(g.actions) or "-",
        "/".join(g.owners) or "-",
        str(g.count),
        g.first_seen or "-",
        g.last_seen or "-",
        ", ".join(g.frameworks) or "-",
        g.example,
        _cut(g.evidence, EVIDENCE_CHARS) or "-",
    )


def _headline(fleet: Fleet, lang: str) -> str:
    since = (
        phrase(" since {since} ({n} older left out)", lang, since=fleet.since, n=fleet.filtered) if fleet.since else ""
    )
    if fleet.only_actions:
        asked = ", ".join(fleet.only_actions)
        since += phrase(" with action {actions} ({n} other left out)", lang, actions=asked, n=fleet.other_actions)
    jobs, causes = len(fleet.jobs), len(fleet.groups)
    return phrase(
        "rlfix triage: {jobs} job{s}, {failed} failed, {causes} cause{cs}{since}",
        lang,
        jobs=jobs,
        s="" if jobs == 1 else "s",
        failed=fleet.failed,
        causes=causes,
        cs="" if causes == 1 else "s",
        since=since,
    )


def _actions_line(fleet: Fleet, lang: str) -> str:
    """`by action: fix-config 4, cordon-node 1` (empty when nothing failed)."""
    counts = fleet.action_counts()
    if not counts:
        return ""
    listed = ", ".join(f"{word(a, lang)} {n}" for a, n in counts.items())
    return phrase("by action: {listed}", lang, listed=listed)


def _cordon_lines(fleet: Fleet, lang: str) -> list[str]:
    """`--action cordon-node`: one machine per line (its name alone, so the list can be piped), then
    how many jobs named it; `node unknown` where the evidence named none. Never a job name."""
    jobs = (phrase("{n} job{s}", lang, n=n, s="" if n == 1 else "s") for _name, n in fleet.nodes_to_cordon())
    return [f"{name}  ({count})" for (name, _n), count in zip(fleet.nodes_to_cordon(), jobs, strict=True)]


def _headers(lang: str) -> tuple[str, ...]:
    return tuple(phrase(h, lang) for h in HEADERS)


def render_text(fleet: Fleet, *, lang: str = "en", **_: Any) -> str:
    """An aligned table, one row per cause; the last column (evidence) is not padded. With
    `--action cordon-node` alone: the machines to take out, one a line, and nothing else on stdout."""
    if fleet.cordon_only:
        return "".join(safe.one_line(line) + "\n" for line in _cordon_lines(fleet, lang))
    rows = [_headers(lang), *(tuple(safe.one_line(c) for c in _row(g)) for g in fleet.groups)]
    widths = [max(_width(r[i]) for r in rows) for i in range(len(HEADERS) - 1)]
    lines = [_headline(fleet, lang), ""]
    for row in rows:
        cells = [_pad(c, w, right=i == _JOBS) for i, (c, w) in enumerate(zip(row, widths, strict=False))]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    actions = _actions_line(fleet, lang)
    lines += ["", actions] if actions else []
    lines.extend(phrase("rlfix: unreadable: {what}", lang, what=safe.one_line(e)) for e in fleet.errors)
    lines.extend(phrase("rlfix: skipped: {what}", lang, what=safe.one_line(e)) for e in fleet.skipped)
    return "\n".join(lines) + "\n"


def _width(text: str) -> int:
    """Columns `text` takes on a terminal: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int, right: bool = False) -> str:
    fill = " " * max(0, width - _width(text))
    return fill + text if right else text + fill


def _md_cell(text: str) -> str:
    # A pipe ends a table cell even inside a code span; GitHub reads `\|` there as a pipe.
    return safe.md_code(text).replace("|", "\\|")


def render_markdown(fleet: Fleet, *, lang: str = "en", **_: Any) -> str:
    """A Markdown table to paste into an issue; every cell inert."""
    out = [
        f"### {safe.md_text(_headline(fleet, lang))}",
        "",
        "| " + " | ".join(_headers(lang)) + " |",
        "|---|---|---|--:|---|---|---|---|---|",
    ]
    for g in fleet.groups:
        cause, action, owner, count, first, last, frameworks, example, evidence = _row(g)
        cells = [_md_cell(cause), _md_cell(action), safe.md_text(owner), count]
        cells += [safe.md_text(first), safe.md_text(last), safe.md_text(frameworks)]
        cells += [_md_cell(example), _md_cell(evidence)]
        out.append("| " + " | ".join(cells) + " |")
    actions = _actions_line(fleet, lang)
    if actions:
        out += ["", safe.md_text(actions)]
    cordon = fleet.nodes_to_cordon()
    if cordon:
        out += ["", phrase("**Nodes to cordon:** ", lang) + ", ".join(f"{_md_cell(n)} ({c})" for n, c in cordon)]
    out.extend(f"- {phrase('unreadable', lang)}: {_md_cell(e)}" for e in fleet.errors)
    out.extend(f"- {phrase('skipped', lang)}: {_md_cell(e)}" for e in fleet.skipped)
    return "\n".join(out) + "\n"


def render_json(fleet: Fleet, **_: Any) -> str:
    return fleet.to_json() + "\n"


def _e(text: object) -> str:
    return safe.xml_text(text)


def _chart(fleet: Fleet) -> str:
    """Horizontal bars, one per cause, longest first; the label and count are text in the SVG."""
    if not fleet.groups:
        return ""
    most = max(g.count for g in fleet.groups)
    label_w, bar_w, row_h = 330, 360, 22
    height = row_h * len(fleet.groups) + 8
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 60}" height="{height}" '
        f'viewBox="0 0 {label_w + bar_w + 60} {height}" role="img" aria-label="jobs per cause">'
    ]
    for i, g in enumerate(fleet.groups):
        y = 4 + i * row_h
        width = max(2.0, bar_w * g.count / most)
        colour = "#2e7d32" if not g.failed else ("#8e8e8e" if g.template is not None else "#c62828")
        parts.append(
            f'<g class="bar" data-cause="{_e(g.key)}" data-count="{g.count}"><title>{_e(g.key)}: {g.count}</title>'
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{_e(_cut(g.key, 44))}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{width:.1f}" height="{row_h - 6}" fill="{colour}"/>'
            f'<text x="{label_w + width + 6:.1f}" y="{y + 15}">{g.count}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _table(fleet: Fleet, lang: str) -> str:
    number = ' data-type="number"'
    heads = "".join(f'<th scope="col"{number if h == "jobs" else ""}>{_e(phrase(h, lang))}</th>' for h in HEADERS)
    rows = []
    for g in fleet.groups:
        cells = [
            f'<td data-sort="{_e(g.key)}"><code>{_e(g.key)}</code><br><span class="muted">{_e(g.title)}</span></td>',
            f'<td data-sort="{_e("/".join(g.actions))}"><code>{_e("/".join(g.actions) or "-")}</code></td>',
            f'<td data-sort="{_e("/".join(g.owners))}">{_e("/".join(g.owners) or "-")}</td>',
            f'<td class="n" data-sort="{g.count}">{g.count}</td>',
            f'<td data-sort="{_e(g.first_seen or "")}">{_e(g.first_seen or "-")}</td>',
            f'<td data-sort="{_e(g.last_seen or "")}">{_e(g.last_seen or "-")}</td>',
            f'<td data-sort="{_e(", ".join(g.frameworks))}">{_e(", ".join(g.frameworks) or "-")}</td>',
            f'<td data-sort="{_e(g.example)}"><code>{_e(g.example)}</code></td>',
            f'<td data-sort="{_e(g.evidence)}"><code>{_e(g.evidence or "-")}</code></td>',
        ]
        healthy = "" if g.failed else ' class="healthy"'
        rows.append(f'<tr data-cause="{_e(g.key)}"{healthy}>{"".join(cells)}</tr>')
    return f'<table class="groups"><thead><tr>{heads}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _cordon_html(fleet: Fleet, lang: str) -> str:
    """The machines to take out of service, when some job's top cause calls for it."""
    cordon = fleet.nodes_to_cordon()
    if not cordon:
        return ""
    items = "".join(f"<li><code>{_e(n)}</code> ({c})</li>" for n, c in cordon)
    return f'<h2>{_e(phrase("Nodes to cordon", lang))}</h2><ul class="cordon">{items}</ul>'


def render_html(fleet: Fleet, *, compact: bool = False, lang: str = "en", **_: Any) -> str:
    """One self-contained page (nothing fetched): headline, bar chart, sortable table; or a notebook fragment."""
    errors = "".join(f"<li><code>{_e(e)}</code></li>" for e in fleet.errors)
    skipped = "".join(f"<li><code>{_e(e)}</code></li>" for e in fleet.skipped)
    actions = _actions_line(fleet, lang)
    body = (
        f"<h1>{_e(_headline(fleet, lang))}</h1>"
        + (f'<p class="actions">{_e(actions)}</p>' if actions else "")
        + f"{_chart(fleet)}{_table(fleet, lang)}{_cordon_html(fleet, lang)}"
        + (f'<h2>{_e(phrase("Unreadable", lang))}</h2><ul class="errors">{errors}</ul>' if errors else "")
        + (f'<h2>{_e(phrase("Skipped", lang))}</h2><ul class="errors">{skipped}</ul>' if skipped else "")
        + f'<footer class="muted">rlfix {_e(__version__)}. '
        + f"{_e(phrase('Click a column header to sort.', lang))}</footer>"
    )
    root = f'<div class="rlfix-fleet">{body}</div>'
    script = f"<script>{_JS}</script>"
    if compact:
        return f"<style>{_CSS}</style>{root}{script}"
    return (
        f'<!doctype html>\n<html lang="{"zh-CN" if lang == "zh" else "en"}"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>rlfix triage: {len(fleet.jobs)} jobs</title><style>{_CSS}</style></head>"
        f'<body style="margin:0;padding:16px 20px;background:#fff">{root}{script}</body></html>\n'
    )


FLEET_RENDERERS.update(text=render_text, json=render_json, markdown=render_markdown, html=render_html)
