"""Time across inputs: years for stamps without one, the earliest line first, and "after".

The streaming stage parses the stamp of each line a report can show (`Evidence.time`, see
`rlfix.clock`) and keeps each input's first dated stamp (`Observations.dated`). Here, once every
input has been read, a stamp without a year (glog, vLLM) takes the year that puts it nearest a
dated stamp of its own input, else of the first input that had one; then each finding's
earliest line is put first. `Evidence.before` is the one rule for "earlier" (time where both
lines have one on the same clock, else reading order), and `happened_after` the one rule for
"a cause cannot come after what it explains".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from rlfix.clock import SAME_MACHINE_SLACK, YEARLESS, Moment, difference, with_year
from rlfix.model import Evidence
from rlfix.observe.tally import Tally


def dated(evidence: Evidence, stamps: Mapping[str, Moment]) -> Evidence:
    """`evidence` with a year for its time, when its stamp had none and one can be inferred."""
    time = evidence.time
    if time is None or time.clock != YEARLESS:
        return evidence
    near = stamps.get(evidence.source) or next(iter(stamps.values()), None)
    if near is None:
        return evidence
    return replace(evidence, time=with_year(time, near))


def _earliest_first(samples: Sequence[Evidence]) -> list[Evidence]:
    out = list(samples)
    earliest = 0
    for i, e in enumerate(out):
        if e.before(out[earliest]):
            earliest = i
    if earliest:
        out.insert(0, out.pop(earliest))
    return out


def with_years(tallies: Mapping[str, Tally], stamps: Mapping[str, Moment]) -> Mapping[str, Tally]:
    """Tallies whose samples have years where they can, each with its earliest sample first.

    The tallies given are not changed (a live `Triage` keeps adding to them): changed ones are copies.
    """
    out: dict[str, Tally] = {}
    for sig_id, tally in tallies.items():
        samples = _earliest_first([dated(e, stamps) for e in tally.samples])
        same = len(samples) == len(tally.samples) and all(a is b for a, b in zip(samples, tally.samples, strict=True))
        out[sig_id] = tally if same else replace(tally, samples=samples)
    return out


def timeline_with_years(
    timeline: Sequence[tuple[str, Evidence]], stamps: Mapping[str, Moment]
) -> tuple[tuple[str, Evidence], ...]:
    """The timeline points with years for their stamps where they can (same order)."""
    return tuple((sig_id, dated(e, stamps)) for sig_id, e in timeline)


def happened_after(cause: Evidence, effects: Iterable[Evidence]) -> bool:
    """Whether `cause` is stamped later than some line of the finding it would explain, beyond the
    jitter of one machine's clocks (`rlfix.clock.SAME_MACHINE_SLACK`).

    Any line will do: the finding first showed no later than each of its lines, so a cause
    stamped after one of them came after the finding began. Lines whose times do not compare
    (no stamp, another input's boot clock) never make it "after".
    """
    for effect in effects:
        gap = difference(effect.time, cause.time)
        if gap is not None and gap > SAME_MACHINE_SLACK:
            return True
    return False
