"""Rank what matched: roots before symptoms, symptoms folded under the root that explains them.

The rules, in order (docs/ranking.md explains them with examples):
1. A root that `supersedes` another present root absorbs it (specific beats generic).
2. A root absorbs every present symptom it `explains`; it absorbs a root it `explains` only
   when its own first evidence comes earlier (an NCCL timeout after a CUDA error on another
   rank is collateral; an NCCL timeout on its own is the cause).
3. The fallback (`python-exception`) is folded under any other root that is present, unless it
   explains that root and came first (a KeyError on rank 2, then NCCL timeouts on the others).
4. What remains is ordered: roots, then symptoms; roots the job outlived last among roots;
   fatal before error before warning; then the earliest first evidence (the first rank to die
   is usually the cause).
5. A root the job outlived (its training steps went on after the root's first line, in the same
   input: a transient warning of Ray's autoscaler, an error a retry got past) did not stop it,
   when another root is present that the job did not outlive. It is ranked after such roots,
   with a lower confidence, is not "the earliest fatal error", and a finding another root also
   explains is folded under that one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from functools import cmp_to_key
from typing import Any

from rlfix.conclude.concepts import concept_reason
from rlfix.conclude.remedies import choose_remedies
from rlfix.conclude.timing import happened_after
from rlfix.job import JobContext
from rlfix.kb.load import KnowledgeBase
from rlfix.model import Evidence, Kind, KnownMessage, Severity
from rlfix.observe.tally import Tally
from rlfix.report import Diagnosis


def _parents(tallies: Mapping[str, Tally], kb: KnowledgeBase, outlived: Collection[str] = ()) -> dict[str, str]:
    """Which present signature each present signature is folded under (if any)."""
    first = {sig_id: t.first for sig_id, t in tallies.items()}
    candidates: dict[str, list[str]] = {}

    def earlier(a: str, b: str) -> bool:
        # A concept reads a line an uncaught exception's fallback may also hold: one line is not
        # earlier than itself.
        same = (first[a].source, first[a].line) == (first[b].source, first[b].line)
        if same and (tallies[a].concept is not None or tallies[b].concept is not None):
            return False
        return first[a].before(first[b])

    def offer(child: str, parent: str) -> None:
        if child != parent and child in tallies:
            candidates.setdefault(child, []).append(parent)

    for sig_id, tally in tallies.items():
        sig = tally.signature
        if sig.severity is Severity.WARNING:
            # A warning is never a cause; followed by a failure it explains, it is part of that story.
            for target in sig.explains:
                if target in tallies and earlier(sig_id, target) and not _is_warning(tallies[target]):
                    offer(sig_id, target)
            continue
        if sig.kind is not Kind.ROOT:
            continue
        for target in sig.supersedes:
            offer(target, sig_id)
        for target in _explained(sig_id, tallies, kb, earlier):
            offer(target, sig_id)

    specific_roots = [s for s, t in tallies.items() if t.signature.kind is Kind.ROOT and not t.signature.fallback]
    for sig_id, tally in tallies.items():
        if tally.signature.fallback:
            for root in specific_roots:
                # An uncaught exception that came before, say, an NCCL timeout it explains is the cause.
                if sig_id not in candidates.get(root, []):
                    offer(sig_id, root)

    return _without_cycles(_choose(candidates, first, outlived), first)


def _choose(
    candidates: Mapping[str, list[str]], first: Mapping[str, Evidence], outlived: Collection[str]
) -> dict[str, str]:
    """One parent per child: the earliest of its candidates, not counting roots the job went on
    after when another candidate remains (what another root also explains belongs to that one)."""
    return {
        child: _earliest([p for p in options if p not in outlived] or options, first)
        for child, options in candidates.items()
    }


def _without_cycles(parents: dict[str, str], first: Mapping[str, Evidence]) -> dict[str, str]:
    """Break cycles (a supersedes b supersedes a): the later of the two stays top-level."""
    for child in list(parents):
        seen = {child}
        node = parents.get(child)
        while node is not None:
            if node in seen:
                parents.pop(_latest(seen, first), None)
                break
            seen.add(node)
            node = parents.get(node)
    return parents


def _explained(
    sig_id: str, tallies: Mapping[str, Tally], kb: KnowledgeBase, earlier: Callable[[str, str], bool]
) -> Iterator[str]:
    """The present findings root `sig_id` explains: every symptom (any root, with `order_free`),
    another root only when this one came first; never one that happened before this root did."""
    sig = tallies[sig_id].signature
    for target in sig.explains:
        target_sig = kb.get(target)
        if target not in tallies or target_sig is None:
            continue
        if happened_after(tallies[sig_id].first, tallies[target].samples):
            continue  # a memory-monitor kill 37 s after a worker's SIGKILL did not cause it
        if target_sig.kind is Kind.SYMPTOM or sig.order_free or earlier(sig_id, target):
            yield target


def _by_time(first: Mapping[str, Evidence]) -> Callable[[str], Any]:
    """A sort key for ids: the id whose first line came first (`Evidence.before`, by time where it compares)."""

    def compare(a: str, b: str) -> int:
        return _cmp(first[a], first[b])

    return cmp_to_key(compare)


def _earliest(ids: Iterable[str], first: Mapping[str, Evidence]) -> str:
    return min(ids, key=_by_time(first))


def _latest(ids: Iterable[str], first: Mapping[str, Evidence]) -> str:
    return max(ids, key=_by_time(first))


def _cmp(a: Evidence, b: Evidence) -> int:
    return -1 if a.before(b) else 1 if b.before(a) else 0


def _is_fatal(tally: Tally) -> bool:
    return tally.signature.severity is Severity.FATAL


def _is_warning(tally: Tally) -> bool:
    return tally.signature.severity is Severity.WARNING


def _top(sig_id: str, parents: Mapping[str, str]) -> str:
    seen = set()
    while sig_id in parents and sig_id not in seen:
        seen.add(sig_id)
        sig_id = parents[sig_id]
    return sig_id


def _outlived(
    tallies: Mapping[str, Tally], went_on: Mapping[str, tuple[int | None, int]]
) -> dict[str, tuple[int | None, int]]:
    """The roots the job went on after, when another root is present that it did not go on after.

    Steps going on are no proof on their own: rollout workers of a Ray job keep stepping while
    the reward actor waits for a GPU forever, and a NaN loss is printed step after step. Only
    against a root the job stopped at do they tell which of the two ended it.
    """
    # A warning is never a cause anyway: that the job went on after it says nothing new.
    outlived = {s: steps for s, steps in went_on.items() if s in tallies and not _is_warning(tallies[s])}
    stopped_at = [
        s
        for s, t in tallies.items()
        if t.signature.kind is Kind.ROOT and not t.signature.fallback and not _is_warning(t) and s not in outlived
    ]
    return outlived if stopped_at else {}


def _by_rank(a: Tally, b: Tally, outlived: Collection[str] = ()) -> int:
    """Roots before symptoms, outlived roots last among roots, fatal before error before warning,
    then the earliest first."""
    key_a = (0 if a.signature.kind is Kind.ROOT else 1, a.signature.id in outlived, -a.signature.severity.weight)
    key_b = (0 if b.signature.kind is Kind.ROOT else 1, b.signature.id in outlived, -b.signature.severity.weight)
    if key_a != key_b:
        return -1 if key_a < key_b else 1
    return _cmp(a.first, b.first)


def rank(
    tallies: Mapping[str, Tally],
    kb: KnowledgeBase,
    context: JobContext,
    went_on: Mapping[str, tuple[int | None, int]] | None = None,
) -> tuple[Diagnosis, ...]:
    """Turn per-signature tallies into ranked diagnoses with confidences and reasons.

    `went_on`: the roots the job outlived, with the step before each and the last step (rule 5).
    """
    if not tallies:
        return ()
    outlived = _outlived(tallies, went_on or {})
    parents = _parents(tallies, kb, outlived)
    folded: dict[str, list[str]] = {}
    for child in parents:
        folded.setdefault(_top(child, parents), []).append(child)
    first = {sig_id: t.first for sig_id, t in tallies.items()}

    def by_rank(a: str, b: str) -> int:
        return _by_rank(tallies[a], tallies[b], outlived)

    top_ids = sorted((s for s in tallies if s not in parents), key=cmp_to_key(by_rank))
    earliest_fatal, earliest = _earliest_fatal(top_ids, tallies, outlived)

    out = []
    for sig_id in top_ids:
        children = sorted(folded.get(sig_id, []), key=_by_time(first))
        sub = tuple(_diagnosis(tallies[c], (), context, [_folded_reason(tallies[c], sig_id)], 0.0) for c in children)
        # Which fatal error came first says nothing about one the job went on after.
        reasons, bonus = _reasons(
            tallies[sig_id], children, tallies, None if sig_id in outlived else earliest_fatal, earliest
        )
        if sig_id in outlived:
            before, last = outlived[sig_id]
            since = f"from step {before}" if before is not None else "from before the first step"
            reasons.insert(1, f"the job went on after it ({since} to step {last}): not what stopped it")
            bonus -= OUTLIVED_PENALTY
        out.append(_diagnosis(tallies[sig_id], sub, context, reasons, bonus))
    return tuple(out)


def _earliest_fatal(
    top_ids: list[str], tallies: Mapping[str, Tally], outlived: Collection[str]
) -> tuple[str | None, str]:
    """The earliest fatal root not folded under another (and not one the job went on after, if
    another remains), and how to call it."""
    fatal = [s for s in top_ids if tallies[s].signature.kind is Kind.ROOT and _is_fatal(tallies[s])]
    stopped = [s for s in fatal if s not in outlived]
    first = {s: tallies[s].first for s in fatal}
    earliest = _earliest(stopped or fatal, first) if fatal else None
    if earliest is not None and stopped and any(first[s].before(first[earliest]) for s in fatal if s in outlived):
        return earliest, "earliest fatal error the job did not go on after"
    return earliest, "earliest fatal error in the log"


#: What a root the job outlived loses in confidence.
OUTLIVED_PENALTY = 0.3


def _folded_reason(child: Tally, parent: str) -> str:
    if _is_warning(child):
        return f"a warning that came before {parent}"
    return f"accounted for by {parent}"


def _reasons(
    tally: Tally,
    children: list[str],
    tallies: Mapping[str, Tally],
    earliest_fatal: str | None,
    earliest: str = "earliest fatal error in the log",
) -> tuple[list[str], float]:
    sig = tally.signature
    reasons: list[str] = []
    bonus = 0.0
    if sig.fallback:
        reasons.append("fallback: an uncaught exception that no more specific signature explains")
    elif sig.kind is Kind.ROOT:
        reasons.append(f"root cause ({sig.severity.value})")
    else:
        reasons.append("symptom with no recognised root cause in the log: the cause may be elsewhere")
    named = concept_reason(tally)
    if named is not None:
        reasons.append(named)
    warned = [c for c in children if _is_warning(tallies[c])]
    superseded = [c for c in children if c not in warned and (c in sig.supersedes or tallies[c].signature.fallback)]
    explained = [c for c in children if c not in superseded and c not in warned]
    if warned:
        reasons.append(f"preceded by warning{'s' if len(warned) > 1 else ''} {', '.join(warned)}")
    if superseded:
        reasons.append(f"more specific than {', '.join(superseded)}")
    if explained:
        n = len(explained)
        reasons.append(f"explains {n} other finding{'s' if n > 1 else ''}: {', '.join(explained)}")
        bonus += min(0.1, 0.03 * n)
    first = tally.first
    where = f"{first.source}:{first.line}" + (f", {first.where}" if first.where else "")
    if earliest_fatal is not None and sig.kind is Kind.ROOT:
        if earliest_fatal == tally.signature.id:
            reasons.append(f"{earliest} ({where})")
            bonus += 0.05
        elif sig.severity is Severity.FATAL:
            other = tallies[earliest_fatal].first
            reasons.append(f"another fatal error came first ({earliest_fatal} at {other.source}:{other.line})")
            bonus -= 0.15
    if len(tally.ranks) > 1:
        reasons.append(f"seen on {len(tally.ranks)} ranks")
    elif len(tally.workers) > 1:
        reasons.append(f"seen in {len(tally.workers)} workers")
    if tally.count > 1:
        reasons.append(f"{tally.count} matching lines")
    return reasons, bonus


def _diagnosis(
    tally: Tally, folded: tuple[Diagnosis, ...], context: JobContext, reasons: list[str], bonus: float
) -> Diagnosis:
    sig = tally.signature
    concept = tally.concept
    confidence = max(0.05, min(0.99, sig.confidence + bonus))
    if concept is not None:
        # Never surer than its concept (or known message) says: less sure than an exact pattern.
        confidence = max(0.05, min(concept.confidence, concept.confidence + bonus))
    known = concept if isinstance(concept, KnownMessage) else None
    return Diagnosis(
        signature=sig,
        evidence=tuple(tally.samples),
        count=tally.count,
        ranks=tuple(sorted(tally.ranks)),
        workers=tuple(sorted(tally.workers)),
        nodes=tuple(sorted(tally.nodes)),
        values=dict(tally.values),
        confidence=confidence,
        reasons=tuple(reasons),
        folded=folded,
        remedies=choose_remedies(sig, context),
        concept=concept.name if concept is not None and known is None else None,
        known_message=known.name if known is not None else None,
    )
