"""The concept tier's streaming half: which error-shaped lines no exact pattern matched a concept
names, read once per template, for a bounded number of templates (rlfix/match/concepts.py has the
rule; rlfix/conclude/concepts.py decides when its findings count)."""

from __future__ import annotations

from rlfix.kb.load import KnowledgeBase
from rlfix.match.concepts import Named, concept_index
from rlfix.model import Line
from rlfix.observe.tally import Tally

#: Distinct error-shaped lines (by template and raising frame) the concept tier reads per triage:
#: its cost is bounded by this however many error lines a log prints (docs/performance.md).
CONCEPT_LINES = 2000


class ConceptTier:
    """What concepts named so far: per signature id, a tally of the lines (with the concept)."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self._index = concept_index(kb)
        self._named: dict[str, Named | None] = {}
        self._reads = CONCEPT_LINES
        self.tallies: dict[str, Tally] = {}
        #: The line the last specific signature hit was on: the tier never reads that line (hits of
        #: one line come signature hits first, see `Matcher`).
        self.exact: Line | None = None
        #: The last exception line a traceback closed, with what the traceback said (raising frame).
        self.raised: tuple[Line, dict[str, str]] | None = None

    def __bool__(self) -> bool:
        return bool(self._index)

    def name(self, key: str, text: str) -> Named | None:
        """The concept `text` holds, `key` being its template (lines of one template are read once)."""
        if key in self._named:
            return self._named[key]
        if self._reads <= 0:
            return None
        self._reads -= 1
        named = self._named[key] = self._index.name(text)
        return named
