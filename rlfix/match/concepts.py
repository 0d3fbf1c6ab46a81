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

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from rlfix.kb.load import KnowledgeBase
from rlfix.model import Concept, KnownMessage, Signature

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


#: A whole word of a text: a run of letters, digits and `_` (what `_word` calls word characters).
_TOKEN = re.compile(r"\w+")
#: A short term that is a word by itself is found by looking it up among the text's words.
_PLAIN_WORD = re.compile(r"[^\W_](?:\w*[^\W_])?")


@dataclass(frozen=True)
class _Cue:
    """One cue set (or `none_of`), split by how its terms are found: short plain words by a set
    lookup among the text's words, longer terms as substrings, the rest by `_holds`."""

    words: frozenset[str]
    subs: tuple[str, ...]
    odd: tuple[str, ...]

    def held(self, text: str, words: frozenset[str]) -> bool:
        if not self.words.isdisjoint(words):
            return True
        for term in self.subs:
            if term in text:
                return True
        return any(_holds(text, term) for term in self.odd)


def _cue(terms: tuple[str, ...]) -> _Cue:
    lowered = [t.lower() for t in terms]
    short = [t for t in lowered if len(t) <= SHORT_TERM]
    words = frozenset(t for t in short if _PLAIN_WORD.fullmatch(t))
    odd = tuple(t for t in short if t not in words)
    return _Cue(words, tuple(t for t in lowered if len(t) > SHORT_TERM), odd)


@dataclass(frozen=True)
class _Compiled:
    sig_id: str
    concept: Concept
    #: Cheapest first: a cue set of plain words fails by one set operation.
    cues: tuple[_Cue, ...]
    none_of: _Cue

    def holds(self, text: str, words: frozenset[str]) -> bool:
        return all(cue.held(text, words) for cue in self.cues) and not self.none_of.held(text, words)


def _compiled(sig_id: str, concept: Concept) -> _Compiled:
    cues = sorted((_cue(c) for c in concept.cues), key=lambda c: len(c.subs) + 4 * len(c.odd))
    return _Compiled(sig_id, concept, tuple(cues), _cue(concept.none_of))


def _words(lowered: str) -> frozenset[str]:
    return frozenset(_TOKEN.findall(lowered))


def holds(concept: Concept, text: str) -> bool:
    """Whether `text` holds `concept` (a term of every cue set, no `none_of` term)."""
    lowered = text.lower()
    return _compiled("", concept).holds(lowered, _words(lowered))


@dataclass(frozen=True)
class Named:
    """What the word tier said about a text: the signature it names and the concept or known
    message (rlfix/match/messages.py) that named it."""

    sig_id: str
    concept: Concept | KnownMessage


class ConceptIndex:
    """Every concept of a knowledge base, tried most confident first (the most cue sets, then the
    knowledge base's order, break ties)."""

    def __init__(self, signatures: Iterable[Signature]) -> None:
        found = [_compiled(sig.id, c) for sig in signatures if not sig.fallback for c in sig.concepts]
        self._concepts = sorted(found, key=lambda c: (-c.concept.confidence, -len(c.concept.cues)))
        # Which concepts a term of their cheapest cue set brings into question: a text is looked up
        # once for all of them, and only the concepts one of its terms names are tried in full.
        self._by_term: dict[str, list[int]] = {}
        for i, c in enumerate(self._concepts):
            for term in (*c.cues[0].words, *c.cues[0].subs):
                self._by_term.setdefault(term, []).append(i)
        self._words = frozenset(t for c in self._concepts for t in c.cues[0].words)
        self._subs = tuple(sorted({t for c in self._concepts for t in c.cues[0].subs}))
        self._always = [i for i, c in enumerate(self._concepts) if c.cues[0].odd]

    def __bool__(self) -> bool:
        return bool(self._concepts)

    def name(self, text: str) -> Named | None:
        """The first concept (in the index's order) that `text` holds, or None. `text` is an error
        line, or the line and what its traceback said (the raising frame), joined by a newline."""
        lowered = text.lower()
        words = _words(lowered)
        tried = set(self._always)
        for term in (*(self._words & words), *(t for t in self._subs if t in lowered)):
            tried.update(self._by_term[term])
        for i in sorted(tried):
            c = self._concepts[i]
            if c.holds(lowered, words):
                return Named(c.sig_id, c.concept)
        return None


@lru_cache(maxsize=8)
def concept_index(kb: KnowledgeBase) -> ConceptIndex:
    """The concepts of a knowledge base, indexed once per knowledge base."""
    return ConceptIndex(kb)
