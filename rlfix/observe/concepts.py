"""The word tier's streaming half: what an error-shaped line no exact pattern matched is, read once
per template, for a bounded number of templates. A known message (the line is one a framework's
source prints, rlfix/match/messages.py) is asked first, then the concepts (rlfix/match/concepts.py);
rlfix/conclude/concepts.py decides when their findings count."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlfix.kb.load import KnowledgeBase
from rlfix.match.concepts import Named, concept_index
from rlfix.match.messages import message_index
from rlfix.model import Line
from rlfix.observe.tally import Tally

if TYPE_CHECKING:
    from rlfix.match.matcher import Hit

#: Distinct error-shaped lines (by template and raising frame) the concept tier reads per triage:
#: its cost is bounded by this however many error lines a log prints (docs/performance.md).
CONCEPT_LINES = 2000


class ConceptTier:
    """What known messages and concepts named so far: per signature id, a tally of the lines (with
    the known message or concept that named them)."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self._kb = kb
        self._index = concept_index(kb)
        self._named: dict[str, Named | None] = {}
        self._reads = CONCEPT_LINES
        self.tallies: dict[str, Tally] = {}
        #: The line the last specific signature hit was on: the tier never reads that line (hits of
        #: one line come signature hits first, see `Matcher`).
        self.exact: Line | None = None
        #: The last exception line a traceback closed, with what the traceback said (raising frame).
        self.raised: tuple[Line, dict[str, str]] | None = None
        #: The latest line past the budget, unread: (hit, order, key, text, raised values).
        self.last: tuple[Hit, int, str, str, dict[str, str]] | None = None

    def __bool__(self) -> bool:
        return bool(self._index) or bool(self._kb.messages)

    def spent(self, key: str) -> bool:
        """Whether reading a line of this template would go past the budget."""
        return self._reads <= 0 and key not in self._named

    def name(self, key: str, text: str, spend: bool = True) -> Named | None:
        """The known message `text` is, else the concept it holds, `key` being its template (lines
        of one template are read once).
        Past the budget: None, unless `spend` is False (the one line read past it, at report time)."""
        if key in self._named:
            return self._named[key]
        if spend and self._reads <= 0:
            return None
        self._reads -= spend
        # Indexed when a line is first read (once per knowledge base and process): most runs never
        # read one, and need not pay for the index at start-up.
        known = message_index(self._kb).name(text) if self._kb.messages else None
        named = self._named[key] = Named(known.sig_id, known) if known is not None else self._index.name(text)
        return named
