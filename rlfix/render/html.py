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
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from rlfix.model import Evidence
from rlfix.render import safe
from rlfix.render.text import _details_lines, _where_line
from rlfix.report import Diagnosis, Remedy, Report

#: Colour-blind-safe first (Okabe-Ito), then distinct extras; cycled when ids outnumber it.
PALETTE = (
    "#d55e00",
    "#0072b2",
    "#009e73",
    "#cc79a7",
    "#e69f00",
    "#56b4e9",
    "#7f3c8d",
    "#8c6d1f",
    "#3b4cc0",
    "#6b6b6b",
)
#: Lanes drawn before the rest are merged into one "more" lane (a 512-rank job stays readable).
MAX_LANES = 40
#: Horizontal slots per lane; marks of one signature in one slot merge into one mark with a count.
SLOTS = 480

# SVG geometry, in viewBox units.
_W = 1000
_LABEL_W = 236
_PAD_R = 16
_TOP = 30
_LANE_H = 22
_AXIS_H = 40

_CSS = """
.rlfix{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--bad:#b42318;--warn:#9a6700;--ok:#1a7f37;
color:var(--fg);background:#fff;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
max-width:1100px;padding:4px 2px}
.rlfix *{box-sizing:border-box}
.rlfix h1,.rlfix h2,.rlfix h3{margin:.3em 0 .25em;line-height:1.25}.rlfix h1{font-size:1.5em}
.rlfix h2{font-size:1.2em;border-bottom:1px solid var(--line);padding-bottom:.2em;margin-top:1em}
.rlfix h3{font-size:1.05em}.rlfix.compact h2{font-size:1.05em;margin-top:.6em}
.rlfix code,.rlfix pre,.rlfix .mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
.rlfix pre{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:.5em .7em;margin:.35em 0;
overflow-x:auto;white-space:pre-wrap;word-break:break-word}
.rlfix .muted{color:var(--muted)}.rlfix .small{font-size:.88em}
.rlfix .verdict{border-left:4px solid var(--bad);background:#fff5f5;padding:.5em .8em;border-radius:0 6px 6px 0}
.rlfix .verdict.ok{border-color:var(--ok);background:#f3fbf5}
.rlfix dl.ctx{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;margin:.3em 0}
.rlfix dl.ctx dt{color:var(--muted)}.rlfix dl.ctx dd{margin:0}
.rlfix .timeline svg{width:100%;height:auto;display:block;border:1px solid var(--line);border-radius:6px;
background:#fff}
.rlfix .timeline text{font:11px system-ui,sans-serif;fill:var(--muted)}
.rlfix .timeline text.lane-label{fill:var(--fg)}.rlfix .timeline text.first-label{fill:var(--bad);font-weight:700}
.rlfix .timeline .first-lane{fill:#fdecea}.rlfix .timeline .stripe{fill:var(--soft)}
.rlfix .timeline .gridline{stroke:var(--line);stroke-width:1}
.rlfix .timeline .first-line{stroke:var(--bad);stroke-width:1.2;stroke-dasharray:4 3}
.rlfix[data-focus] .mark{opacity:.12}.rlfix[data-focus] .mark.on{opacity:1}
.rlfix ul.legend{list-style:none;padding:0;margin:.4em 0;display:flex;flex-wrap:wrap;gap:.25em 1.1em}
.rlfix ul.legend li{cursor:pointer;user-select:none}.rlfix ul.legend li.sub{color:var(--muted)}
.rlfix .sw{display:inline-block;width:.8em;height:.8em;border-radius:50%;margin-right:.35em;vertical-align:-.05em;
border:2px solid currentColor}.rlfix .sw.sub{border-radius:1px;transform:rotate(45deg) scale(.85)}
.rlfix .diag{border:1px solid var(--line);border-radius:8px;padding:.6em .9em;margin:.7em 0}
.rlfix .diag.top{border-color:var(--bad);box-shadow:0 0 0 1px var(--bad) inset}
.rlfix .diag .head{display:flex;flex-wrap:wrap;align-items:baseline;gap:.2em .6em}
.rlfix .diag .id{font-weight:700}
.rlfix .badge{display:inline-block;border:1px solid var(--line);border-radius:999px;padding:0 .55em;font-size:.8em;
color:var(--muted)}.rlfix .badge.fatal,.rlfix .badge.error{color:var(--bad);border-color:#f0b3ad}
.rlfix .badge.warning{color:var(--warn)}
.rlfix table{border-collapse:collapse;margin:.3em 0;width:100%}
.rlfix th,.rlfix td{border-bottom:1px solid var(--line);padding:.25em .5em;text-align:left;vertical-align:top;
font-size:.92em}
.rlfix th{color:var(--muted);font-weight:600}
.rlfix button.copy{font:inherit;font-size:.78em;margin-left:.5em;padding:0 .5em;border:1px solid var(--line);
border-radius:4px;background:var(--soft);cursor:pointer}.rlfix button.copy.done{color:var(--ok)}
.rlfix details{margin:.35em 0}.rlfix summary{cursor:pointer}
.rlfix ul.reasons{margin:.2em 0;padding-left:1.2em}.rlfix ol.steps{margin:.2em 0;padding-left:1.5em}
.rlfix footer{margin-top:1.2em;font-size:.82em;color:var(--muted)}
"""

# Wires copy buttons and legend focus. Plain ES5, no globals, safe to run once per fragment.
_JS = """(function(){
var roots=document.querySelectorAll('.rlfix:not([data-js])');
function copy(text,done){
if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(text).then(done,function(){});return;}
var t=document.createElement('textarea');t.value=text;t.style.position='fixed';t.style.opacity='0';
document.body.appendChild(t);t.select();try{document.execCommand('copy');done();}catch(e){}
document.body.removeChild(t);}
Array.prototype.forEach.call(roots,function(root){
root.setAttribute('data-js','ready');
root.addEventListener('click',function(ev){
var b=ev.target.closest('button.copy');
if(b){copy(b.getAttribute('data-copy'),function(){b.classList.add('done');b.textContent='copied';
setTimeout(function(){b.classList.remove('done');b.textContent='copy';},1500);});return;}
var li=ev.target.closest('ul.legend li');if(!li)return;var sig=li.getAttribute('data-sig');
var off=root.getAttribute('data-focus')===sig;
if(off){root.removeAttribute('data-focus');}else{root.setAttribute('data-focus',sig);}
Array.prototype.forEach.call(root.querySelectorAll('.mark'),function(m){
m.classList.toggle('on',!off&&m.getAttribute('data-sig')===sig);});});});})();"""

_JS_HASH = base64.b64encode(hashlib.sha256(_JS.encode("utf-8")).digest()).decode("ascii")
_CSP = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_JS_HASH}'; img-src data:"


def _e(text: object) -> str:
    """Escape for HTML text and attribute values (quotes too), with controls shown escaped."""
    return safe.xml_text(text)


# --- timeline layout ---------------------------------------------------------------------


@dataclass(frozen=True)
class Lane:
    """One row of the timeline: a rank, a worker, a node, or a whole source without prefixes."""

    label: str
    points: int
    first: bool = False


@dataclass(frozen=True)
class Mark:
    """One drawn mark: the first evidence line in its slot, and how many lines it stands for."""

    x: float
    lane: int
    sig_id: str
    evidence: Evidence
    lines: int


@dataclass(frozen=True)
class TimelineLayout:
    """Lanes, marks and axis ticks for `Report.timeline`; x runs from 0 (left) to 1 (right)."""

    axis: str  # "time" when every point had a parseable timestamp, else "order"
    lanes: tuple[Lane, ...]
    marks: tuple[Mark, ...]
    ticks: tuple[tuple[float, str], ...]
    first: Mark | None
    points: int


_ISO_TS = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?")
# vLLM `02-25 11:11:34`, glog `0602 11:29:52.185`, PyTorch's unpadded `602 11:29:52.185`.
_MONTH_DAY_TS = re.compile(r"(\d{1,2})-?(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?$")


def _seconds(stamp: str, with_year: bool) -> float | None:
    """Seconds since an arbitrary epoch, or None when the stamp is not a date-time we know."""
    m = _ISO_TS.match(stamp)
    if m:
        year, month, day, hh, mm, ss, frac = m.groups()
        if not with_year:
            year = "2000"
    else:
        m = _MONTH_DAY_TS.match(stamp)
        if not m:
            return None
        month, day, hh, mm, ss, frac = m.groups()
        # A leap year, so `02-29` from a yearless stamp still parses.
        year = "2000"
    try:
        when = datetime(int(year), int(month), int(day), int(hh), int(mm), int(ss))
    except ValueError:
        return None
    return (when - datetime(1970, 1, 1)).total_seconds() + (float(f"0.{frac}") if frac else 0.0)


def _times(points: Sequence[tuple[str, Evidence]]) -> list[float] | None:
    """Every point's time, or None unless all have one and they span a positive interval."""
    stamps = [e.timestamp for _, e in points]
    if not stamps or any(s is None for s in stamps):
        return None
    # Yearless stamps (vLLM, glog) next to dated ones: compare all of them without the year.
    with_year = all(_ISO_TS.match(s or "") for s in stamps)
    times = [_seconds(s or "", with_year) for s in stamps]
    if any(t is None for t in times):
        return None
    out = [t for t in times if t is not None]
    return out if max(out) > min(out) else None


def _lane_key(e: Evidence) -> tuple[int, int, str]:
    """Ranks first (numerically), then workers and nodes, then sources."""
    if e.rank is not None:
        # Ray actor groups number their ranks separately: rank 1 of two groups is two lanes.
        return (0, e.rank, e.where if e.worker else f"rank {e.rank}")
    if e.where:
        return (1, 0, e.where)
    return (2, 0, e.source.rsplit("/", 1)[-1] or e.source)


def _time_label(seconds: float, span: float) -> str:
    when = datetime(1970, 1, 1) + timedelta(seconds=seconds)
    if span >= 86400:
        return when.strftime("%m-%d %H:%M")
    if span < 10:
        return when.strftime("%H:%M:%S.") + f"{when.microsecond // 1000:03d}"
    return when.strftime("%H:%M:%S")


def _time_ticks(lo: float, hi: float) -> tuple[tuple[float, str], ...]:
    if hi <= lo:
        return ((0.5, _time_label(lo, 0.0)),)
    return tuple((i / 5, _time_label(lo + (hi - lo) * i / 5, hi - lo)) for i in range(6))


def _order_ticks(points: Sequence[tuple[str, Evidence]]) -> tuple[tuple[float, str], ...]:
    """Ticks named after the matched line nearest each: `line 812` for one source, `#k` for many."""
    n = len(points)
    if n == 1:
        return ((0.5, f"line {points[0][1].line:,}"),)
    one_source = len({e.source for _, e in points}) == 1
    out = []
    for i in range(min(6, n)):
        at = round(i * (n - 1) / (min(6, n) - 1))
        e = points[at][1]
        out.append((at / (n - 1), f"line {e.line:,}" if one_source else f"#{at + 1:,}"))
    return tuple(out)


def layout_timeline(report: Report) -> TimelineLayout | None:
    """Place every timeline point on a lane and an x position; None when nothing matched."""
    points = list(report.timeline)
    if not points:
        return None
    # The core appends in log order; sorting by `order` keeps that true for any Report.
    points.sort(key=lambda p: p[1].order)
    times = _times(points)
    axis = "time" if times is not None else "order"
    # Without times, x is the rank of the line among matched lines: evenly spread, in log order.
    xs_raw = times if times is not None else [float(i) for i in range(len(points))]
    lo, hi = min(xs_raw), max(xs_raw)
    span = hi - lo

    def x_of(i: int) -> float:
        return (xs_raw[i] - lo) / span if span else 0.5

    # Keep the lanes that appear first (the cascade starts there), plus the first failure's lane.
    top_first = report.top.first if report.top else None
    appearance: dict[tuple[int, int, str], int] = {}
    for _, e in points:
        appearance.setdefault(_lane_key(e), len(appearance))
    first_key = _lane_key(top_first) if top_first is not None else None
    kept = sorted(appearance, key=lambda k: (k != first_key, appearance[k]))[: MAX_LANES - 1]
    if len(appearance) <= MAX_LANES:
        kept = list(appearance)
    kept.sort()
    index = {key: i for i, key in enumerate(kept)}
    overflow = len(appearance) - len(kept)
    counts = [0] * (len(kept) + (1 if overflow else 0))

    slots: dict[tuple[int, str, int], list[Any]] = {}
    for i, (sig_id, e) in enumerate(points):
        lane = index.get(_lane_key(e), len(kept))
        counts[lane] += max(e.repeat, 1)
        x = x_of(i)
        slot = (lane, sig_id, round(x * SLOTS))
        if slot in slots:
            slots[slot][3] += max(e.repeat, 1)
        else:
            slots[slot] = [x, e, sig_id, max(e.repeat, 1)]
    marks = tuple(Mark(x=v[0], lane=k[0], sig_id=v[2], evidence=v[1], lines=v[3]) for k, v in slots.items())

    first = None
    if top_first is not None and report.top is not None:
        top_id = report.top.id
        first = next((m for m in marks if m.sig_id == top_id and m.evidence.order == top_first.order), None)
    lanes = [Lane(label=key[2], points=counts[i], first=key == first_key) for i, key in enumerate(kept)]
    if overflow:
        lanes.append(Lane(label=f"{overflow} more lanes", points=counts[-1]))
    return TimelineLayout(
        axis=axis,
        lanes=tuple(lanes),
        marks=marks,
        ticks=_time_ticks(lo, hi) if axis == "time" else _order_ticks(points),
        first=first,
        points=len(points),
    )


# --- colours -----------------------------------------------------------------------------


def colours(report: Report) -> dict[str, str]:
    """A stable colour per signature id: ranked diagnoses first, each followed by what it folds."""
    ids: list[str] = []
    for d in report.diagnoses:
        ids.append(d.id)
        ids.extend(f.id for f in d.folded)
    ids.extend(sig_id for sig_id, _ in report.timeline)
    out: dict[str, str] = {}
    for sig_id in ids:
        if sig_id not in out:
            out[sig_id] = PALETTE[len(out) % len(PALETTE)]
    return out


def _folded_ids(report: Report) -> set[str]:
    return {f.id for d in report.diagnoses for f in d.folded}


# --- SVG ---------------------------------------------------------------------------------


def _mark_svg(m: Mark, cx: float, cy: float, colour: str, folded: bool, first: bool) -> str:
    e = m.evidence
    where = f"{e.source}:{e.line}" + (f" [{e.where}]" if e.where else "")
    if e.timestamp:
        where += f" {e.timestamp}"
    more = f" (+{m.lines - 1} more lines here)" if m.lines > 1 else ""
    tip = f"{m.sig_id}{' (folded)' if folded else ''}: {where}{more}\n{e.text}"
    attrs = f'class="mark{" first" if first else ""}" data-sig="{_e(m.sig_id)}" data-line="{e.line}"'
    if folded:
        # Folded findings are hollow diamonds: the cascade, not the cause.
        r = 5.2
        shape = (
            f'<path d="M{cx:.1f} {cy - r:.1f}L{cx + r:.1f} {cy:.1f}L{cx:.1f} {cy + r:.1f}L{cx - r:.1f} {cy:.1f}Z" '
            f'fill="#fff" stroke="{colour}" stroke-width="2"/>'
        )
    else:
        shape = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5.5" fill="{colour}" stroke="#fff" stroke-width="1"/>'
    ring = ""
    if first:
        ring = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="9" fill="none" stroke="{colour}" stroke-width="2"/>'
    return f"<g {attrs}><title>{_e(tip)}</title>{ring}{shape}</g>"


def timeline_svg(report: Report, layout: TimelineLayout) -> str:
    """The timeline as an inline SVG element (well-formed XML as well as HTML)."""
    colour = colours(report)
    folded = _folded_ids(report)
    plot_w = _W - _LABEL_W - _PAD_R
    height = _TOP + _LANE_H * len(layout.lanes) + _AXIS_H

    def x_at(x: float) -> float:
        return _LABEL_W + 8 + x * (plot_w - 16)

    def y_at(lane: int) -> float:
        return _TOP + _LANE_H * lane + _LANE_H / 2

    axis_name = (
        "time (from the log's timestamps)" if layout.axis == "time" else "log position (matched lines, in order)"
    )
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {height}" role="img" '
        f'aria-label="Timeline of matched lines by {_e("rank, worker or source")}" data-axis="{layout.axis}">'
    ]
    for i, lane in enumerate(layout.lanes):
        y = _TOP + _LANE_H * i
        cls = "first-lane" if lane.first else ("stripe" if i % 2 else "")
        if cls:
            out.append(f'<rect class="{cls}" x="0" y="{y}" width="{_W}" height="{_LANE_H}"/>')
        label = lane.label if len(lane.label) <= 34 else lane.label[:33] + "…"
        text_cls = "lane-label first-label" if lane.first else "lane-label"
        prefix = "▶ " if lane.first else ""
        out.append(
            f'<text class="{text_cls}" x="8" y="{y + _LANE_H / 2 + 4:.1f}" data-lane="{_e(lane.label)}">'
            f"<title>{_e(lane.label)}: {lane.points} matched line(s)</title>{prefix}{_e(label)}</text>"
        )
    bottom = _TOP + _LANE_H * len(layout.lanes)
    for x, label in layout.ticks:
        px = x_at(x)
        out.append(f'<line class="gridline" x1="{px:.1f}" y1="{_TOP}" x2="{px:.1f}" y2="{bottom}"/>')
        out.append(f'<text x="{px:.1f}" y="{bottom + 14}" text-anchor="middle">{_e(label)}</text>')
    out.append(f'<text x="{x_at(0.5):.1f}" y="{bottom + 32}" text-anchor="middle">{_e(axis_name)}</text>')
    if layout.first is not None:
        fx = x_at(layout.first.x)
        out.append(f'<line class="first-line" x1="{fx:.1f}" y1="{_TOP - 6}" x2="{fx:.1f}" y2="{bottom}"/>')
        anchor = "start" if layout.first.x < 0.75 else "end"
        dx = 4 if anchor == "start" else -4
        out.append(
            f'<text class="first-label" x="{fx + dx:.1f}" y="{_TOP - 10}" text-anchor="{anchor}">'
            f"first failure: {_e(layout.lanes[layout.first.lane].label)}</text>"
        )
    for m in sorted(layout.marks, key=lambda m: (m is layout.first, m.sig_id not in folded)):
        out.append(
            _mark_svg(
                m, x_at(m.x), y_at(m.lane), colour.get(m.sig_id, "#6b6b6b"), m.sig_id in folded, m is layout.first
            )
        )
    out.append("</svg>")
    return "".join(out)


def _legend(report: Report) -> str:
    colour = colours(report)
    counts: dict[str, int] = {}
    for sig_id, e in report.timeline:
        counts[sig_id] = counts.get(sig_id, 0) + max(e.repeat, 1)
    items = []
    for d in report.diagnoses:
        for sub, is_folded in [(d, False), *((f, True) for f in d.folded)]:
            if sub.id not in counts:
                continue
            c = colour[sub.id]
            style = f"color:{c};background:{'#fff' if is_folded else c}"
            shape = "sw sub" if is_folded else "sw"
            kind = f"folded under {d.id}" if is_folded else f"{sub.kind.value}"
            items.append(
                f'<li class="{"sub" if is_folded else "main"}" data-sig="{_e(sub.id)}" title="click to highlight">'
                f'<span class="{shape}" style="{style}"></span><span class="mono">{_e(sub.id)}</span> '
                f'<span class="muted small">{_e(kind)}, {counts[sub.id]} line(s)</span></li>'
            )
    return '<ul class="legend">' + "".join(items) + "</ul>"


def _timeline_section(report: Report) -> str:
    layout = layout_timeline(report)
    if layout is None:
        return ""
    first = layout.first
    lead = ""
    if first is not None:
        e = first.evidence
        lead = (
            f'<p class="small">The first failure is on <b>{_e(layout.lanes[first.lane].label)}</b> '
            f"({_e(e.source)}:{e.line}); filled circles are findings ranked on their own, hollow diamonds "
            f"are folded findings it explains: the cascade. Hover a mark for its line; click the legend to "
            f"highlight one finding.</p>"
        )
    note = ""
    drawn = sum(max(e.repeat, 1) for _, e in report.timeline)
    matched = sum(d.count + sum(f.count for f in d.folded) for d in report.diagnoses)
    if matched > drawn:
        # The core keeps a bounded timeline; say so rather than let a long tail look healthy.
        note = f'<p class="muted small">Showing the first {drawn:,} of {matched:,} matched lines.</p>'
    return (
        f'<section class="timeline"><h2>Timeline</h2>{lead}{timeline_svg(report, layout)}{_legend(report)}{note}'
        "</section>"
    )


# --- HTML sections ----------------------------------------------------------------------


def _where(e: Evidence) -> str:
    return f"{e.source}:{e.line}" + (f" [{e.where}]" if e.where else "")


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
            f"<pre>{_e(_where(f.first))}  {_e(f.first.text)}</pre></li>"
        )
    n = len(d.folded)
    return (
        f'<details class="folded"><summary>Explains {n} other finding{"s" if n > 1 else ""}: '
        + ", ".join(f'<span class="mono">{_e(f.id)}</span>' for f in d.folded)
        + f'</summary><ul class="folded">{"".join(rows)}</ul></details>'
    )


def _diagnosis_html(i: int, d: Diagnosis, colour: dict[str, str], all_flags: bool, verbose: bool) -> str:
    sev = _e(d.severity.value)
    c = colour.get(d.id, "#6b6b6b")
    parts = [
        f'<article class="diag{" top" if i == 1 else ""}" data-id="{_e(d.id)}">',
        f'<div class="head"><h3><span class="sw" style="color:{c};background:{c}"></span>{i}. '
        f'<span class="id mono">{_e(d.id)}</span></h3><span>{_e(d.title)}</span>'
        f'<span class="badge">{_e(d.kind.value)}</span><span class="badge {sev}">{sev}</span>'
        f'<span class="badge">confidence {d.confidence:.2f}</span></div>',
        f"<p>{_e(d.signature.summary)}</p>",
    ]
    evidence = d.evidence if verbose else d.evidence[:3]
    parts.append("<pre>" + "\n".join(f"{_e(_where(e))}  {_e(e.text)}" for e in evidence) + "</pre>")
    facts = [p for p in (_places(d), f"{d.count} matching lines" if d.count > 1 else "") if p]
    if facts:
        parts.append(f'<p class="muted small">{_e("; ".join(facts))}</p>')
    values = {k: v for k, v in d.values.items() if k not in d.details}
    if values:
        parts.append(
            '<p class="small">values: ' + ", ".join(f"<code>{_e(k)}={_e(v)}</code>" for k, v in values.items()) + "</p>"
        )
    details = _details_lines(d)
    if details:
        parts.append('<ul class="details small">' + "".join(f"<li>{_e(line)}</li>" for line in details) + "</ul>")
    parts.append(_folded_html(d, colour))
    if d.reasons:
        label = "Why it ranks first" if i == 1 else "Why it ranks here"
        parts.append(
            f'<details class="why"{" open" if i == 1 else ""}><summary>{label}</summary><ul class="reasons">'
            + "".join(f"<li>{_e(r)}</li>" for r in d.reasons)
            + "</ul></details>"
        )
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
    links = [u for u in (_safe_url(r) for r in d.signature.references[:6]) if u]
    if links:
        parts.append(
            '<p class="small muted">References: '
            + ", ".join(f'<a href="{_e(u)}" rel="noreferrer noopener">{_e(u)}</a>' for u in links)
            + "</p>"
        )
    parts.append("</article>")
    return "".join(parts)


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
        return f'<p class="verdict ok">No failure recognised in {_e(what)} ({report.lines:,} lines).</p>'
    n = len(report.diagnoses)
    first = top.first
    failed = _where_line(report)
    return (
        f'<p class="verdict">{n} finding{"s" if n > 1 else ""} in {_e(what)} ({report.lines:,} lines). '
        f'Most likely cause: <b class="mono">{_e(top.id)}</b>, {_e(top.title)}, first at '
        f'<span class="mono">{_e(_where(first))}</span>.'
        + (f'<br><span class="small">Failed {_e(failed)}.</span>' if failed else "")
        + "</p>"
    )


def _sections(
    report: Report, shown: Iterable[Diagnosis], hidden: int, all_flags: bool, verbose: bool, compact: bool
) -> list[str]:
    from rlfix import __version__

    colour = colours(report)
    out = ["<h1>rlfix report</h1>" if not compact else "<h2>rlfix report</h2>", _verdict(report)]
    out.append(_timeline_section(report))
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
