"""The concept tier: a cause named by its vocabulary when no exact pattern knows the wording.

A concept (`Concept`, `concepts:` in the YAML) is a few cue sets of literal terms; a text holds the
concept when it holds a term of every cue set and no `none_of` term. Terms are compared
case-insensitively; a term of `SHORT_TERM` characters or fewer counts only as a whole word (its
neighbours are not letters, digits or `_`), so `OOM` is not found in `zoom`, `GPU` in `GPUDirect`
nor `NCCL` in `TORCH_NCCL_DEBUG`, while a longer term is found anywhere (`allocat` in `allocation`).

No regex is built from a term, so the cost is bounded by the text's length times the terms tried:
`str.find` per term, a cue set stops at its first term found, and a concept at its first cue set
with none. `ConceptIndex.name()` is called only on the error-shaped lines the structural detector
keeps (rlfix/observe/unknown.py), once per distinct line template, never on every line of a log.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from rlfix.kb.load import KnowledgeBase
from rlfix.model import Concept, Signature

#: Terms this short (or shorter) match only as whole words.
SHORT_TERM = 4


def _holds(text: str, term: str) -> bool:
    """Whether lowercased `text` holds lowercased `term` (as a whole word when it is short: no word
    character next to an end of the term that is a letter or digit, so `.so` is found in `libx.so.1`
    and `sm_` in `sm_80`)."""
    at = text.find(term)
    if len(term) > SHORT_TERM or at < 0:
        return at >= 0
    left, right = term[0].isalnum(), term[-1].isalnum()
    while at >= 0:
        end = at + len(term)
        if (not left or at == 0 or not _word(text[at - 1])) and (not right or end == len(text) or not _word(text[end])):
            return True
        at = text.find(term, at + 1)
    return False


def _word(char: str) -> bool:
    """A character of a word: a letter, a digit or `_` (so `NCCL` is not a word of `TORCH_NCCL_DEBUG`)."""
    return char.isalnum() or char == "_"


@dataclass(frozen=True)
class _Compiled:
    sig_id: str
    concept: Concept
    cues: tuple[tuple[str, ...], ...]
    none_of: tuple[str, ...]

    def holds(self, text: str) -> bool:
        return all(any(_holds(text, t) for t in cue) for cue in self.cues) and not any(
            _holds(text, t) for t in self.none_of
        )


def _compiled(sig_id: str, concept: Concept) -> _Compiled:
    return _Compiled(
        sig_id,
        concept,
        tuple(tuple(t.lower() for t in cue) for cue in concept.cues),
        tuple(t.lower() for t in concept.none_of),
    )


def holds(concept: Concept, text: str) -> bool:
    """Whether `text` holds `concept` (a term of every cue set, no `none_of` term)."""
    return _compiled("", concept).holds(text.lower())


@dataclass(frozen=True)
class Named:
    """What a concept said about a text: the signature it names and the concept that named it."""

    sig_id: str
    concept: Concept


class ConceptIndex:
    """Every concept of a knowledge base, tried most confident first (the most cue sets, then the
    knowledge base's order, break ties)."""

    def __init__(self, signatures: Iterable[Signature]) -> None:
        found = [_compiled(sig.id, c) for sig in signatures if not sig.fallback for c in sig.concepts]
        self._concepts = sorted(found, key=lambda c: (-c.concept.confidence, -len(c.cues)))

    def __bool__(self) -> bool:
        return bool(self._concepts)

    def name(self, text: str) -> Named | None:
        """The first concept (in the index's order) that `text` holds, or None. `text` is an error
        line, or the line and what its traceback said (the raising frame), joined by a newline."""
        lowered = text.lower()
        for c in self._concepts:
            if c.holds(lowered):
                return Named(c.sig_id, c.concept)
        return None


@lru_cache(maxsize=8)
def concept_index(kb: KnowledgeBase) -> ConceptIndex:
    """The concepts of a knowledge base, indexed once per knowledge base."""
    return ConceptIndex(kb)
