"""The concept tier in the conclusions: a failure worded as no pattern knows it, named by its vocabulary.

The streaming stage names error-shaped lines that no exact pattern matched by the concepts of the
knowledge base (rlfix/match/concepts.py), into tallies of their own. They join the findings here,
under two rules:

- a concept never makes a failure: its findings count only when the log already shows one (a
  finding that is not a warning, an error line or a crash line the log ended with, a traceback
  left open, a failed exit status). A healthy run that logged a handled error stays healthy;
- an exact pattern wins: a signature one of whose patterns matched anywhere keeps that finding,
  and its concept's lines add nothing; and where exact patterns found a root, a concept adds one
  only when it came before every such root and explains one of them (a host OOM worded as no
  pattern knows, then the NCCL timeouts of the other ranks): the cause of their cascade. An
  exception line no pattern names (`python-exception`) is not an exact root, unless its class,
  raise site or the two packages it was raised between name the failure
  (rlfix/conclude/exceptions.py, mismatch.py): those rules are more specific than words.
"""

from __future__ import annotations

from collections.abc import Mapping

from rlfix.model import Kind, KnownMessage, Severity
from rlfix.observe.tally import Tally


def with_concepts(
    tallies: Mapping[str, Tally], named: Mapping[str, Tally], failed: bool, fallback_named: bool = False
) -> Mapping[str, Tally]:
    """The tallies, plus what concepts named for signatures no exact pattern found (when `failed`,
    or when a finding that is not a warning shows the log failed). `fallback_named`: the uncaught
    exception's class, raise site or packages name a signature. Returns a new mapping."""
    if not named:
        return tallies
    shown = failed or any(t.signature.severity is not Severity.WARNING for t in tallies.values())
    if not shown:
        return tallies
    roots = [
        t for t in tallies.values() if t.signature.kind is Kind.ROOT and (fallback_named or not t.signature.fallback)
    ]
    extra = {
        sig_id: tally
        for sig_id, tally in named.items()
        if sig_id not in tallies and (not roots or _began_cascade(tally, roots))
    }
    return {**tallies, **extra} if extra else tallies


def _began_cascade(tally: Tally, roots: list[Tally]) -> bool:
    """Whether a concept's finding came before every exact root and explains one of them."""
    explains = set(tally.signature.explains)
    first = all(tally.first.before(r.first) for r in roots)
    return first and any(r.signature.id in explains for r in roots)


def concept_reason(tally: Tally) -> str | None:
    """The reason a finding named by a concept or a known message gives (None for an exact one)."""
    if tally.concept is None:
        return None
    if isinstance(tally.concept, KnownMessage):
        return "no exact pattern matched: a message its framework's source prints for this cause"
    return "no exact pattern matched: named by a concept of this signature, so less sure"
