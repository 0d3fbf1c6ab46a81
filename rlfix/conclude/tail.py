"""A crash is read from the end of the log.

A paste is often only the last lines: `ZeroDivisionError: division by zero`, a traceback cut off
above its first line. When the input ends with a bare exception line (`rlfix.observe.tail` decides
that, reading what follows it once) and no root cause explains it, it is the diagnosis. An exception
printed in the middle of a run that then went on (a caught and logged error) is not.
"""

from __future__ import annotations

from collections.abc import Mapping

from rlfix.kb.load import KnowledgeBase
from rlfix.model import Evidence, Kind
from rlfix.observe.tally import Tally


def with_tail_exception(tallies: Mapping[str, Tally], bare: Evidence | None, kb: KnowledgeBase) -> Mapping[str, Tally]:
    """The tallies, plus the fallback for the bare exception the log ends with, when no root explains it.

    Returns a new mapping; the tallies passed in are not changed.
    """
    if bare is None or any(t.signature.kind is Kind.ROOT for t in tallies.values()):
        return tallies
    fallback = next((sig for sig in kb if sig.fallback), None)
    if fallback is None or fallback.id in tallies:
        return tallies
    tally = Tally(fallback)
    tally.add(bare)
    return {**tallies, fallback.id: tally}
