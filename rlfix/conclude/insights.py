"""The story of a failure: stage, last step, the first failing place and the collateral after it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rlfix.details import FirstFailure, Insights
from rlfix.model import Kind
from rlfix.observe.progress import stage_named_in
from rlfix.observe.unknown import UnknownErrors
from rlfix.report import Diagnosis

Progress = tuple[str | None, int | None]


def insights(
    diagnoses: Sequence[Diagnosis],
    progress: Mapping[str, Progress],
    unknown: UnknownErrors,
    discounted: Sequence[str],
) -> Insights:
    """What the report says about the failure as a whole."""
    top = next((d for d in diagnoses if d.kind is Kind.ROOT), diagnoses[0] if diagnoses else None)
    if top is None:
        return Insights(error_templates=unknown.frequent, discounted_by_baseline=tuple(discounted))
    stage, step = progress.get(top.id, (None, None))
    first = top.first
    collateral = {e.where for sub in top.folded for e in sub.evidence if e.where and e.where != first.where}
    return Insights(
        stage=stage_named_in([e.text for e in top.evidence]) or stage,
        last_step=step,
        first_failure=FirstFailure(top.id, first.source, first.line, first.rank, first.worker, first.node),
        collateral=tuple(sorted(collateral)),
        error_templates=unknown.frequent,
        discounted_by_baseline=tuple(discounted),
    )
