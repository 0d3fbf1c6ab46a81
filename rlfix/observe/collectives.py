"""What each rank said when NCCL's watchdog timed out: which collective it was waiting in.

`[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=BROADCAST, ...)`
is printed once per waiting rank; the rank that differs from the others (behind, or in another
collective), or that never reported at all, is where the hang started.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlfix.model import Evidence, bounded_int

_WAITING = re.compile(
    r"(?:\[(?:PG ID \d+ PG GUID \S+ )?Rank (?P<rank>\d{1,6})\] )?Watchdog caught collective operation timeout: "
    r"WorkNCCL\(SeqNum=(?P<seq>\d{1,18}), OpType=(?P<op>\w{1,40})"
)
#: Ranks remembered (a 4096-GPU job still fits; more is bounded, not an error).
MAX_RANKS = 4096


@dataclass(frozen=True)
class Waiting:
    """One rank's report: the collective it was waiting in when its watchdog fired."""

    rank: int
    op: str
    seq: int
    evidence: Evidence


class CollectiveTracker:
    """The first watchdog report of each rank."""

    def __init__(self) -> None:
        self._by_rank: dict[int, Waiting] = {}

    def observe(self, evidence: Evidence) -> None:
        """Record a line if it is a watchdog timeout report of a rank not seen yet."""
        m = _WAITING.search(evidence.message)
        if m is None:
            return
        rank = bounded_int(m.group("rank")) if m.group("rank") else evidence.rank
        seq = bounded_int(m.group("seq"))
        if rank is None or seq is None or rank in self._by_rank or len(self._by_rank) >= MAX_RANKS:
            return
        self._by_rank[rank] = Waiting(rank, m.group("op"), seq, evidence)

    def snapshot(self) -> tuple[Waiting, ...]:
        """Every rank's report, by rank."""
        return tuple(self._by_rank[r] for r in sorted(self._by_rank))
