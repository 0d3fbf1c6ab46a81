"""The culprit in a collective hang: the rank whose watchdog report differs, or that sent none."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from rlfix.details import CollectiveHang
from rlfix.observe.collectives import Waiting
from rlfix.report import Diagnosis

#: Ranks listed by name before the rest are counted.
LISTED = 8


def _ranks(ranks: Sequence[int]) -> str:
    shown = ", ".join(str(r) for r in ranks[:LISTED])
    more = f" and {len(ranks) - LISTED} more" if len(ranks) > LISTED else ""
    return f"rank{'s' if len(ranks) > 1 else ''} {shown}{more}"


def find_hang(waiting: Sequence[Waiting], world_size: int | None) -> CollectiveHang | None:
    """Compare what each rank waited in; None when fewer than two ranks reported and none is missing."""
    if not waiting:
        return None
    counts = Counter((w.op, w.seq) for w in waiting)
    (op, seq), _n = counts.most_common(1)[0]
    majority = [w.rank for w in waiting if (w.op, w.seq) == (op, seq)]
    odd = [w for w in waiting if (w.op, w.seq) != (op, seq)]
    reported = {w.rank for w in waiting}
    missing = [r for r in range(world_size or 0) if r not in reported] if world_size and world_size <= 65536 else []
    if len(waiting) < 2 and not missing:
        return None
    return CollectiveHang(
        op=op,
        seq=seq,
        waiting=tuple(majority),
        odd=tuple((w.rank, w.op, w.seq) for w in odd),
        silent=tuple(missing),
    )


def with_hang(diag: Diagnosis, waiting: Sequence[Waiting], world_size: int | None) -> Diagnosis:
    """The NCCL-timeout diagnosis (top level or folded) with the hang's culprit named."""
    hang = find_hang(waiting, world_size)
    if hang is None:
        return diag
    if diag.values.get("seq") is not None and diag.values.get("op") is not None:
        return replace(diag, details=replace(diag.details, hang=hang))
    folded = tuple(with_hang(f, waiting, world_size) for f in diag.folded)
    return replace(diag, folded=folded) if folded != diag.folded else diag


__all__ = ["find_hang", "with_hang"]
