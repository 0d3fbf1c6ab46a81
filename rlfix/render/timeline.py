"""The timeline of a failure as pure data: lanes (ranks, workers, nodes, sources), an x axis in
seconds or log order, and one mark per (lane, signature, slot). Drawing it is `rlfix.render.svg`.

x is time when every point has a timestamp that parses (ISO, vLLM, glog), else the position among
matched lines in log order. Lanes: rank N (numeric), then worker/pid/node, then source file; the
first MAX_LANES by first appearance (the failing rank always kept), the rest merged into one lane.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from rlfix.model import Evidence
from rlfix.report import Report

#: Lanes drawn before the rest are merged into one "more" lane (a 512-rank job stays readable).
MAX_LANES = 40
#: Horizontal slots per lane; marks of one signature in one slot merge into one mark with a count.
SLOTS = 480


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


def _kept_lanes(
    points: Sequence[tuple[str, Evidence]], first_key: tuple[int, int, str] | None
) -> tuple[list[tuple[int, int, str]], int]:
    """The lanes drawn (those that appear first, where the cascade starts, plus the first failure's)
    and how many more were merged into one."""
    appearance: dict[tuple[int, int, str], int] = {}
    for _, e in points:
        appearance.setdefault(_lane_key(e), len(appearance))
    kept = sorted(appearance, key=lambda k: (k != first_key, appearance[k]))[: MAX_LANES - 1]
    if len(appearance) <= MAX_LANES:
        kept = list(appearance)
    kept.sort()
    return kept, len(appearance) - len(kept)


def _marks(
    points: Sequence[tuple[str, Evidence]],
    kept: Sequence[tuple[int, int, str]],
    overflow: int,
    x_of: Callable[[int], float],
) -> tuple[tuple[Mark, ...], list[int]]:
    """One mark per (lane, signature, slot) with the lines it stands for, and points per lane."""
    index = {key: i for i, key in enumerate(kept)}
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
    return tuple(Mark(x=v[0], lane=k[0], sig_id=v[2], evidence=v[1], lines=v[3]) for k, v in slots.items()), counts


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

    top_first = report.top.first if report.top else None
    first_key = _lane_key(top_first) if top_first is not None else None
    kept, overflow = _kept_lanes(points, first_key)
    marks, counts = _marks(points, kept, overflow, x_of)

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
