"""The timeline drawn as inline SVG (well-formed XML), its legend, and its section of the page."""

from __future__ import annotations

from rlfix import safe
from rlfix.i18n import phrase, word
from rlfix.render.timeline import Mark, TimelineLayout, layout_timeline
from rlfix.report import Report

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

# SVG geometry, in viewBox units.
_W = 1000
_LABEL_W = 236
_PAD_R = 16
_TOP = 30
_LANE_H = 22
_AXIS_H = 40


def _e(text: object) -> str:
    return safe.xml_text(text)


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


def _lanes_svg(layout: TimelineLayout) -> list[str]:
    out = []
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
    return out


def _first_svg(layout: TimelineLayout, fx: float, lang: str = "en") -> list[str]:
    """The dashed line at the first failure and its label."""
    assert layout.first is not None
    out = [f'<line class="first-line" x1="{fx:.1f}" y1="{_TOP - 6}" x2="{fx:.1f}" y2="{_bottom(layout)}"/>']
    anchor = "start" if layout.first.x < 0.75 else "end"
    dx = 4 if anchor == "start" else -4
    out.append(
        f'<text class="first-label" x="{fx + dx:.1f}" y="{_TOP - 10}" text-anchor="{anchor}">'
        + _e(phrase("first failure: {label}", lang, label=layout.lanes[layout.first.lane].label))
        + "</text>"
    )
    return out


def _bottom(layout: TimelineLayout) -> int:
    return _TOP + _LANE_H * len(layout.lanes)


def timeline_svg(report: Report, layout: TimelineLayout, lang: str = "en") -> str:
    """The timeline as an inline SVG element (well-formed XML as well as HTML)."""
    colour = colours(report)
    folded = _folded_ids(report)
    plot_w = _W - _LABEL_W - _PAD_R
    height = _TOP + _LANE_H * len(layout.lanes) + _AXIS_H

    def x_at(x: float) -> float:
        return _LABEL_W + 8 + x * (plot_w - 16)

    def y_at(lane: int) -> float:
        return _TOP + _LANE_H * lane + _LANE_H / 2

    axis_name = phrase(
        "time (from the log's timestamps)" if layout.axis == "time" else "log position (matched lines, in order)", lang
    )
    label = phrase("Timeline of matched lines by {what}", lang, what=phrase("rank, worker or source", lang))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {height}" role="img" '
        f'aria-label="{_e(label)}" data-axis="{layout.axis}">'
    ]
    out.extend(_lanes_svg(layout))
    bottom = _TOP + _LANE_H * len(layout.lanes)
    for x, label in layout.ticks:
        px = x_at(x)
        out.append(f'<line class="gridline" x1="{px:.1f}" y1="{_TOP}" x2="{px:.1f}" y2="{bottom}"/>')
        out.append(f'<text x="{px:.1f}" y="{bottom + 14}" text-anchor="middle">{_e(label)}</text>')
    out.append(f'<text x="{x_at(0.5):.1f}" y="{bottom + 32}" text-anchor="middle">{_e(axis_name)}</text>')
    if layout.first is not None:
        out.extend(_first_svg(layout, x_at(layout.first.x), lang))
    for m in sorted(layout.marks, key=lambda m: (m is layout.first, m.sig_id not in folded)):
        out.append(
            _mark_svg(
                m, x_at(m.x), y_at(m.lane), colour.get(m.sig_id, "#6b6b6b"), m.sig_id in folded, m is layout.first
            )
        )
    out.append("</svg>")
    return "".join(out)


def _legend(report: Report, lang: str = "en") -> str:
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
            kind = phrase("folded under {id}", lang, id=d.id) if is_folded else word(sub.kind.value, lang)
            lines = phrase("{kind}, {n} line(s)", lang, kind=kind, n=counts[sub.id])
            items.append(
                f'<li class="{"sub" if is_folded else "main"}" data-sig="{_e(sub.id)}" '
                f'title="{_e(phrase("click to highlight", lang))}">'
                f'<span class="{shape}" style="{style}"></span><span class="mono">{_e(sub.id)}</span> '
                f'<span class="muted small">{_e(lines)}</span></li>'
            )
    return '<ul class="legend">' + "".join(items) + "</ul>"


def timeline_section(report: Report, lang: str = "en") -> str:
    layout = layout_timeline(report)
    if layout is None:
        return ""
    first = layout.first
    lead = ""
    if first is not None:
        e = first.evidence
        lead = _lead(layout.lanes[first.lane].label, e.source, e.line, lang)
    note = ""
    drawn = sum(max(e.repeat, 1) for _, e in report.timeline)
    matched = sum(d.count + sum(f.count for f in d.folded) for d in report.diagnoses)
    if matched > drawn:
        # The core keeps a bounded timeline; say so rather than let a long tail look healthy.
        shown = phrase("Showing the first {drawn:,} of {matched:,} matched lines.", lang, drawn=drawn, matched=matched)
        note = f'<p class="muted small">{_e(shown)}</p>'
    heading = _e(phrase("Timeline", lang))
    return (
        f'<section class="timeline"><h2>{heading}</h2>{lead}{timeline_svg(report, layout, lang)}'
        f"{_legend(report, lang)}{note}</section>"
    )


def _lead(label: str, source: str, line: int, lang: str) -> str:
    """The sentence that says how to read the timeline."""
    if lang == "zh":
        return (
            f'<p class="small">最早的故障出现在 <b>{_e(label)}</b>（{_e(source)}:{line}）；实心圆是单独排序的问题，'
            "空心菱形是被它解释、折叠起来的问题，也就是连锁反应。鼠标悬停在标记上可以看到对应的行；"
            "点击图例可以高亮某一个问题。</p>"
        )
    return (
        f'<p class="small">The first failure is on <b>{_e(label)}</b> '
        f"({_e(source)}:{line}); filled circles are findings ranked on their own, hollow diamonds "
        f"are folded findings it explains: the cascade. Hover a mark for its line; click the legend to "
        f"highlight one finding.</p>"
    )


# --- HTML sections ----------------------------------------------------------------------
