"""Concluding: tallies and a frozen snapshot of observations -> a ranked, immutable `Report`.

`conclude()` is a pure function: it reads what the streaming stage accumulated and changes none
of it, so a live `Triage` can be asked for a report as often as it likes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache

from rlfix.clock import Moment
from rlfix.conclude.actions import with_decision
from rlfix.conclude.annotate import with_exception, with_quantities
from rlfix.conclude.collectives import with_hang
from rlfix.conclude.concepts import with_concepts
from rlfix.conclude.exceptions import with_exception_class
from rlfix.conclude.handled import REASON as HANDLED_REASON
from rlfix.conclude.handled import (
    TEARDOWN_REASON,
    WARNED_REASON,
    split_handled,
    split_teardown,
    warned_and_went_on,
)
from rlfix.conclude.insights import Progress, insights
from rlfix.conclude.mismatch import with_mismatch
from rlfix.conclude.rank import rank
from rlfix.conclude.tail import INFERRED, with_exit_status, with_silent_death, with_tail_exception
from rlfix.conclude.timing import dated, timeline_with_years, with_years
from rlfix.conclude.unrecognized import OpenTraceback, unrecognized
from rlfix.details import ExitStatus
from rlfix.job import JobContext
from rlfix.kb.load import KnowledgeBase
from rlfix.model import Evidence, Severity
from rlfix.observe.collectives import Waiting
from rlfix.observe.tally import Tally
from rlfix.observe.unknown import UnknownErrors
from rlfix.report import Diagnosis, Report, SourceStats
from rlfix.templates import template

__all__ = ["Observations", "conclude"]


@dataclass(frozen=True)
class Observations:
    """Everything the streaming stage saw besides the signature tallies, frozen."""

    context: JobContext
    #: Per root signature id: the stage and the last step when it first showed.
    progress: Mapping[str, Progress]
    unknown: UnknownErrors
    open_traceback: OpenTraceback | None = None
    #: The exception line the input ended with, outside any traceback (a paste may hold only that).
    bare_exception: Evidence | None = None
    #: The error line the input ended with (an ERROR level, `Error:` first), if it did.
    ending_error: Evidence | None = None
    #: Each rank's NCCL watchdog report (the collective it waited in).
    collectives: tuple[Waiting, ...] = ()
    timeline: tuple[tuple[str, Evidence], ...] = ()
    sources: tuple[SourceStats, ...] = ()
    errors: tuple[str, ...] = ()
    engine: str = ""
    candidates: int = 0
    redact: bool = True
    #: Traceback headers the log printed.
    tracebacks: int = 0
    #: How the command ended, when the caller knows (`rlfix run`, `--exit-status`).
    exit_status: ExitStatus | None = None
    #: Per input, its first stamp with a date: the year for its stamps that have none.
    dated: Mapping[str, Moment] = field(default_factory=dict)
    #: Per root signature id, when the job's steps went on after its first line (in the same
    #: input): the step printed last before it (None: none yet) and the last one near the end.
    went_on: Mapping[str, tuple[int | None, int]] = field(default_factory=dict)
    #: Per signature id, the error lines a concept named where no exact pattern matched (the concept tier).
    concepts: Mapping[str, Tally] = field(default_factory=dict)


def conclude(
    tallies: Mapping[str, Tally],
    observed: Observations,
    kb: KnowledgeBase,
    baseline: Report | None = None,
) -> Report:
    """Rank the tallies, explain them, and say what the failure looked like as a whole."""
    kept, discounted = without_baseline(tallies, baseline)
    kept = with_years(kept, observed.dated)
    bare = observed.bare_exception
    kept = with_tail_exception(kept, dated(bare, observed.dated) if bare is not None else None, kb)
    context = observed.context.with_eras(_versioned_flags(kb))
    kept = _named_by_concepts(kept, observed, kb, context)
    printed_errors = bool(
        observed.unknown.frequent or observed.tracebacks or observed.open_traceback or observed.ending_error
    )
    kept = with_silent_death(kept, printed_errors, kb)
    kept = with_exit_status(kept, observed.exit_status, kb)
    kept, aside = _set_aside(kept, observed)
    ranked = [_explain(d, observed, kb, context) for d in rank(kept, kb, context, observed.went_on)]
    # A warning on its own is worth knowing, never the cause: it goes to the notes.
    diagnoses = [d for d in ranked if d.severity is not Severity.WARNING]
    notes = tuple(d for d in ranked if d.severity is Severity.WARNING)
    for tallies, why in aside:
        notes = (*notes, *(_noted(_explain(d, observed, kb, context), why) for d in rank(tallies, kb, context)))
    ended = observed.exit_status
    if ended is not None and not ended.failed:
        # The job is known to have succeeded (exit status 0, Ray's SUCCEEDED): whatever looked
        # fatal in its log did not end it. It is worth knowing, never the cause of a failure.
        notes = (*notes, *(_survived(d, ended) for d in diagnoses))
        diagnoses = []
    if not diagnoses and _failed_unrecognised(observed):
        diagnoses.append(
            unrecognized(observed.unknown, observed.open_traceback, kb, context, observed.redact, observed.ending_error)
        )
    return Report(
        redacted=observed.redact,
        diagnoses=tuple(diagnoses),
        notes=notes,
        context=context,
        sources=observed.sources,
        errors=observed.errors,
        engine=observed.engine,
        candidates=observed.candidates,
        timeline=timeline_with_years(observed.timeline, observed.dated),
        insights=replace(
            insights(diagnoses, observed.progress, observed.unknown, discounted), exit=observed.exit_status
        ),
    )


def _set_aside(
    kept: Mapping[str, Tally], observed: Observations
) -> tuple[dict[str, Tally], list[tuple[dict[str, Tally], str]]]:
    """The roots that did not end the run, set aside with why (rlfix/conclude/handled.py): handled
    import probes, a stop's teardown, warnings the run went far past."""
    lines_in = {s.name: s.lines for s in observed.sources}
    kept, handled = split_handled(kept)
    kept, teardown = split_teardown(kept, observed.unknown.after_stop)
    kept, warned = split_teardown(kept, lambda e: warned_and_went_on(e, lines_in))
    return kept, [(handled, HANDLED_REASON), (teardown, TEARDOWN_REASON), (warned, WARNED_REASON)]


def _failed_unrecognised(observed: Observations) -> bool:
    """Whether a log no signature explains still shows a failure: it ended in an error line or a
    job-ending line, or in an open traceback, or its command is known to have failed with error
    lines in it. A job known to have succeeded never has."""
    ended = observed.exit_status
    if ended is not None and not ended.failed:
        return False
    ending = observed.ending_error
    # What a process prints while it stops because it was told to (SIGTERM received, Ctrl-C) is
    # its teardown: an operator's stop is not a failure nobody recognised.
    ended_badly = observed.unknown.crashed or (ending is not None and not observed.unknown.after_stop(ending))
    # Known to have failed, with error lines but none at its very end: still never "healthy".
    failed_with_errors = ended is not None and ended.failed and bool(observed.unknown.recent)
    return ended_badly or observed.open_traceback is not None or failed_with_errors


def _named_by_concepts(
    kept: Mapping[str, Tally], observed: Observations, kb: KnowledgeBase, context: JobContext
) -> Mapping[str, Tally]:
    """The concept tier's findings joined to the others where they count (rlfix/conclude/concepts.py)."""
    if not observed.concepts:
        return kept
    named = _fallback_named(kept, kb, context)
    return with_concepts(kept, with_years(observed.concepts, observed.dated), _failed_unrecognised(observed), named)


def _fallback_named(kept: Mapping[str, Tally], kb: KnowledgeBase, context: JobContext) -> bool:
    """Whether the uncaught exception's class, raise site or packages name a signature (then it is
    re-read as that one, and no concept speaks for its line)."""
    tally = next((t for t in kept.values() if t.signature.fallback), None)
    if tally is None:
        return False
    diag = Diagnosis(tally.signature, tuple(tally.samples), tally.count, values=dict(tally.values))
    return _reread(diag, kb, context).id != tally.signature.id


def _reread(diag: Diagnosis, kb: KnowledgeBase, context: JobContext) -> Diagnosis:
    """The fallback read by its exception: class, raise site, the packages it was raised between."""
    return with_exception_class(with_mismatch(with_exception(diag, kb), kb, context), kb)


def _survived(diag: Diagnosis, ended: ExitStatus) -> Diagnosis:
    """A finding of a job that succeeded anyway, as a note that says so."""
    return _noted(diag, f"the job succeeded ({ended.describe()}): this did not end it")


def _noted(diag: Diagnosis, reason: str) -> Diagnosis:
    """A finding kept as a note, with the reason it is not the cause first."""
    return replace(diag, confidence=min(diag.confidence, 0.3), reasons=(reason, *diag.reasons))


def _explain(diag: Diagnosis, observed: Observations, kb: KnowledgeBase, context: JobContext) -> Diagnosis:
    """Typed details for a ranked diagnosis: exception, version mismatch, quantities, collective hang."""
    diag = with_quantities(_reread(diag, kb, context))
    if INFERRED in diag.values:
        reasons = [f"inferred: {diag.values[INFERRED]}"]
        if "check" in diag.values:
            reasons.append(f"to confirm: {diag.values['check']}")
        diag = replace(diag, confidence=min(diag.confidence, 0.5), reasons=(*reasons, *diag.reasons))
    return with_decision(with_hang(diag, observed.collectives, context.world_size))


def without_baseline(tallies: Mapping[str, Tally], baseline: Report | None) -> tuple[Mapping[str, Tally], list[str]]:
    """Drop signatures whose every sample also shows in the healthy baseline run."""
    if baseline is None:
        return tallies, []
    healthy = {(sig_id, template(e.message)) for sig_id, e in baseline.timeline}
    kept: dict[str, Tally] = {}
    dropped: list[str] = []
    for sig_id, tally in tallies.items():
        if all((sig_id, template(e.message)) in healthy for e in tally.samples):
            dropped.append(sig_id)
        else:
            kept[sig_id] = tally
    return kept, dropped


@lru_cache(maxsize=8)
def _versioned_flags(kb: KnowledgeBase) -> tuple[tuple[str, str, str], ...]:
    return tuple(
        (f.framework, f.versions, f.key) for sig in kb for f in sig.remediation.flags if f.versions is not None
    )
