"""Timestamps as numbers on one clock, so lines of different files can be put in time order.

`rlfix.match.normalize` peels a timestamp prefix off a line and keeps it as a string
(`Line.timestamp`); `parse()` turns that string into a `Moment`. The shapes rlfix peels:

- Python logging, Ray, DeepSpeed: `2024-05-01 12:00:03,120` (also in brackets, `[...] [INFO]`);
  ISO 8601 with or without a zone: `2024-05-01T12:00:03.120Z`, `...+02:00`.
- glog (PyTorch, NCCL, Ray's C++): `0501 12:00:03.120000` (after the level letter `I`/`W`/`E`/`F`),
  and PyTorch's unpadded `501 12:00:03.120`; vLLM: `05-01 12:00:03`. No year.
- dmesg: `12345.678901` (seconds since boot); dmesg -T: `Mon May  1 12:00:03 2024`.

The rules (docs/ranking.md, "Time"):

- A stamp with a zone is converted to UTC: clock `UTC`.
- A stamp without a zone is the local time of the machine that wrote it: clock `LOCAL`, its
  seconds counted as if that wall time were UTC. All inputs of one diagnosis are taken to share
  one zone (the machines of one job or cluster); compared with a `UTC` stamp, a `LOCAL` one is
  converted with the zone of the machine running rlfix.
- A stamp without a year is `YEARLESS`, on the clock of its input only, until `with_year()`
  gives it the year that puts it nearest a full stamp (of its own input first, else of another).
- Seconds since boot are `BOOT`, on the clock of their input only.

Two moments compare (`difference()`) when both are absolute (`UTC`, `LOCAL`), or both are on the
clock of the same input; otherwise the caller falls back to file order. Parsing is a few string
operations and one regex, runs only on lines that matched, and never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

__all__ = [
    "BOOT",
    "LOCAL",
    "SAME_MACHINE_SLACK",
    "UTC",
    "YEARLESS",
    "Moment",
    "difference",
    "epoch",
    "parse",
    "to_datetime",
    "wall",
    "with_year",
]

UTC = "utc"
LOCAL = "local"
YEARLESS = "yearless"
BOOT = "boot"
#: Clocks whose moments compare across inputs.
ABSOLUTE = frozenset({UTC, LOCAL})

#: Seconds by which one line may precede another it follows from, on the clocks of one machine.
#: Processes buffer their output and stamp it when it is formatted, and Ray's log monitor forwards
#: a worker's lines with the worker's own stamp: a consequence can carry a stamp a little before
#: its cause. A second covers that jitter; a real "after" is many seconds later.
SAME_MACHINE_SLACK = 1.0

_EPOCH = datetime(1970, 1, 1)
# A leap year, so a yearless `02-29` is a day that exists until a year is chosen for it.
_YEARLESS_BASE = datetime(2000, 1, 1)
_MAX_STAMP = 64

_FULL = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$", re.ASCII
)
# glog `0501 12:00:03.120000` (level letter optional), PyTorch's unpadded `501 ...`, vLLM `05-01 ...`.
_MONTH_DAY = re.compile(r"[IWEF]?(\d{1,2})-?(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?$", re.ASCII)
_BOOT = re.compile(r"(\d{1,10})\.(\d{1,9})$", re.ASCII)
_DMESG_T = re.compile(r"[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})$", re.ASCII)
_MONTHS = {
    m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)
}


@dataclass(frozen=True, slots=True)
class Moment:
    """A point in time on one clock: `seconds` since the clock's origin, and which clock.

    `UTC`: seconds since 1970-01-01 UTC. `LOCAL`: the writer's wall time, counted the same way.
    `YEARLESS`: wall seconds since 1 January of a leap year. `BOOT`: seconds since the machine
    booted. `scope` names the input a `YEARLESS` or `BOOT` moment belongs to ("" otherwise).
    """

    seconds: float
    clock: str
    scope: str = ""

    @property
    def absolute(self) -> bool:
        """Whether this moment compares with those of other inputs."""
        return self.clock in ABSOLUTE


def _fraction(digits: str | None) -> float:
    return int(digits) / 10 ** len(digits) if digits else 0.0


def _wall_seconds(when: datetime, fraction: float) -> float:
    return (when - _EPOCH).total_seconds() + fraction


def _zone_offset(zone: str) -> float:
    if zone == "Z":
        return 0.0
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:])
    if hours > 14 or minutes > 59:
        raise ValueError(f"no such zone: {zone}")  # UTC-12:00 to UTC+14:00 exist
    offset = hours * 3600 + minutes * 60
    return offset if zone[0] == "+" else -offset


def _full(m: re.Match[str]) -> Moment:
    year, month, day, hour, minute, second, fraction, zone = m.groups()
    when = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0))
    seconds = _wall_seconds(when, _fraction(fraction))
    if zone is None:
        return Moment(seconds, LOCAL)
    return Moment(seconds - _zone_offset(zone), UTC)


def _month_day(m: re.Match[str], scope: str) -> Moment:
    month, day, hour, minute, second, fraction = m.groups()
    when = datetime(2000, int(month), int(day), int(hour), int(minute), int(second))
    return Moment((when - _YEARLESS_BASE).total_seconds() + _fraction(fraction), YEARLESS, scope)


def _dmesg_t(m: re.Match[str]) -> Moment | None:
    name, day, hour, minute, second, year = m.groups()
    month = _MONTHS.get(name)
    if month is None:
        return None
    return Moment(_wall_seconds(datetime(int(year), month, int(day), int(hour), int(minute), int(second)), 0.0), LOCAL)


def _parse(text: str, scope: str) -> Moment | None:
    if text[:1].isdigit() and text[4:5] == "-":
        m = _FULL.match(text)
        return _full(m) if m else None
    if text[:1].isalpha() and text[1:2].isalpha():
        m = _DMESG_T.match(text)
        return _dmesg_t(m) if m else None
    m = _MONTH_DAY.match(text)
    if m:
        return _month_day(m, scope)
    m = _BOOT.match(text)
    if m:
        return Moment(int(m.group(1)) + _fraction(m.group(2)), BOOT, scope)
    return None


def parse(stamp: str | None, scope: str = "") -> Moment | None:
    """The moment a timestamp names, or None when it is not one rlfix knows (never raises).

    `scope` is the input the line came from: the clock of stamps that only mean something
    within their input (seconds since boot, no year).
    """
    if not stamp or len(stamp) > _MAX_STAMP:
        return None
    text = stamp.strip().strip("[]").strip()
    try:
        return _parse(text, scope)
    except (ValueError, OverflowError):
        # Digits in the right places that name no day (`2024-13-45`, `0230`): not a time.
        return None


def with_year(moment: Moment, near: Moment) -> Moment:
    """A `YEARLESS` moment given the year that puts it nearest `near` (an absolute moment).

    Anything else is returned as it is. Late December next to early January takes the year
    before, so a job that ran over New Year still reads in order.
    """
    if moment.clock != YEARLESS or not near.absolute:
        return moment
    year = (_EPOCH + timedelta(seconds=near.seconds)).year
    day = _YEARLESS_BASE + timedelta(seconds=moment.seconds)
    best: float | None = None
    for candidate_year in (year - 1, year, year + 1):
        try:
            seconds = _wall_seconds(day.replace(year=candidate_year), 0.0)
        except ValueError:
            continue  # 29 February of a year without one
        if best is None or abs(seconds - near.seconds) < abs(best - near.seconds):
            best = seconds
    # No zone was written: the writer's local time, whatever clock the nearby stamp was on.
    return moment if best is None else Moment(best, LOCAL)


def _as_utc(moment: Moment) -> float:
    if moment.clock == UTC:
        return moment.seconds
    try:
        # The zone of the machine running rlfix: the assumption documented above.
        return (_EPOCH + timedelta(seconds=moment.seconds)).astimezone(timezone.utc).timestamp()
    except (OverflowError, OSError, ValueError):
        return moment.seconds


def difference(earlier: Moment | None, later: Moment | None) -> float | None:
    """`later - earlier` in seconds when both are on one clock, else None (compare by file order)."""
    if earlier is None or later is None:
        return None
    if earlier.clock == later.clock and earlier.scope == later.scope:
        return later.seconds - earlier.seconds
    if earlier.absolute and later.absolute:
        return _as_utc(later) - _as_utc(earlier)
    return None


def epoch(moment: Moment | None) -> float | None:
    """An absolute moment as seconds since 1970-01-01 UTC (a local stamp read in this machine's
    zone, as `difference` does); None for a moment on the clock of one input only."""
    if moment is None or not moment.absolute:
        return None
    return _as_utc(moment)


def wall(moment: Moment) -> datetime | None:
    """The date and time the stamp said, as the writer's clock showed it (year 2000 if it had
    none); None for seconds since boot."""
    if moment.clock == BOOT:
        return None
    base = _YEARLESS_BASE if moment.clock == YEARLESS else _EPOCH
    try:
        return base + timedelta(seconds=moment.seconds)
    except OverflowError:
        return None


def to_datetime(moment: Moment | None) -> datetime | None:
    """An absolute moment as an aware UTC datetime (local stamps read in this machine's zone)."""
    if moment is None or not moment.absolute:
        return None
    try:
        return datetime.fromtimestamp(_as_utc(moment), timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
