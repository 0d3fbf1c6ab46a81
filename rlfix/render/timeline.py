"""The timeline of a failure as pure data: lanes (ranks, workers, nodes, sources), an x axis in
seconds or log order, and one mark per (lane, signature, slot). Drawing it is `rlfix.render.svg`.

x is time when every point has a timestamp on one clock (`rlfix.clock`: dated stamps of any
input, or the yearless or since-boot stamps of one input), else the position among matched
lines in log order. Lanes: rank N (numeric), then worker/pid/node, then source file; the
first MAX_LANES by first appearance (the failing rank always kept), the rest merged into one lane.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from rlfix.clock import difference, wall
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


def _times(points: Sequence[tuple[str, Evidence]]) -> tuple[list[float], datetime | None] | None:
    """Every point's time in seconds after the first point's, and the wall time of the first point
    (None for seconds since boot); None unless every point has a time on one clock
    (`rlfix.clock`) and they span a positive interval."""
    first = points[0][1].time if points else None
    if first is None:
        return None
    gaps = [difference(first, e.time) for _, e in points]
    if any(g is None for g in gaps):
        return None
    out = [g for g in gaps if g is not None]
    return (out, wall(first)) if max(out) > min(out) else None


def _lane_key(e: Evidence) -> tuple[int, int, str]:
    """Ranks first (numerically), then workers and nodes, then sources."""
    if e.rank is not None:
        # Ray actor groups number their ranks separately: rank 1 of two groups is two lanes.
        return (0, e.rank, e.where if e.worker else f"rank {e.rank}")
    if e.where:
        return (1, 0, e.where)
    return (2, 0, e.source.rsplit("/", 1)[-1] or e.source)


def _time_label(seconds: float, span: float, origin: datetime | None) -> str:
    """`seconds` after `origin` as a clock time; seconds since boot when there is no wall time."""
    if origin is None:
        return f"{seconds:.3f} s" if span < 10 else f"{seconds:.0f} s"
    when = origin + timedelta(seconds=seconds)
    if span >= 86400:
        return when.strftime("%m-%d %H:%M")
    if span < 10:
        return when.strftime("%H:%M:%S.") + f"{when.microsecond // 1000:03d}"
    return when.strftime("%H:%M:%S")


def _time_ticks(lo: float, hi: float, origin: datetime | None) -> tuple[tuple[float, str], ...]:
    if hi <= lo:
        return ((0.5, _time_label(lo, 0.0, origin)),)
    return tuple((i / 5, _time_label(lo + (hi - lo) * i / 5, hi - lo, origin)) for i in range(6))


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
    timed = _times(points)
    axis = "time" if timed is not None else "order"
    # Without times, x is the rank of the line among matched lines: evenly spread, in log order.
    xs_raw = timed[0] if timed is not None else [float(i) for i in range(len(points))]
    # Seconds since boot have no wall time: their ticks count seconds from the boot instead.
    origin = timed[1] if timed is not None else None
    if timed is not None and origin is None and points[0][1].time is not None:
        xs_raw = [x + points[0][1].time.seconds for x in xs_raw]
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
        ticks=_time_ticks(lo, hi, origin) if axis == "time" else _order_ticks(points),
        first=first,
        points=len(points),
    )


# --- colours -----------------------------------------------------------------------------
