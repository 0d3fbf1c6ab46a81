"""Known messages matched: is an error line one a framework's source is known to print?

A line is a known message when it holds the template's literal parts in order (the values between
them are whatever the program filled in). No regex is built from a template: each part is found by
`str.find` from where the previous one ended, so the cost is linear in the line, never backtracks,
and a template's text needs no escaping.

Templates are looked up, not all tried: each is filed under the rarest of its whole words across
the knowledge base, and a line is tried only against the templates filed under one of its words.
Like the concept tier, this is asked only about error-shaped lines no exact pattern matched, once
per line template (rlfix/observe/concepts.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

from rlfix.kb.load import KnowledgeBase
from rlfix.kb.messages import WORD
from rlfix.model import KnownMessage

#: Characters of a line a message is looked for in: a message's first line is far shorter, and a
#: line may be a megabyte (the tier reads up to 2,000 of them).
MAX_TEXT = 4096


def holds(message: KnownMessage, text: str) -> bool:
    """Whether `text` holds the message's literal parts, in order."""
    at = 0
    for part in message.parts:
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


class MessageIndex:
    """The known messages of a knowledge base, filed by their rarest word."""

    def __init__(self, messages: Iterable[KnownMessage]) -> None:
        known = [m for m in messages if m.words]
        frequency = Counter(w for m in known for w in set(m.words))
        self._by_word: dict[str, list[KnownMessage]] = {}
        for m in known:
            rarest = min(m.words, key=lambda w: (frequency[w], -len(w)))
            self._by_word.setdefault(rarest, []).append(m)

    def __bool__(self) -> bool:
        return bool(self._by_word)

    def name(self, text: str) -> KnownMessage | None:
        """The known message `text` is (the one with the most literal text when several fit), or None."""
        text = text[:MAX_TEXT]
        fits = [
            m
            for word in {w.lower() for w in WORD.findall(text)} & self._by_word.keys()
            for m in self._by_word[word]
            if holds(m, text)
        ]
        return max(fits, key=lambda m: (len(m.template), m.template, m.source), default=None)


@lru_cache(maxsize=8)
def message_index(kb: KnowledgeBase) -> MessageIndex:
    """The known messages of a knowledge base, indexed once per knowledge base."""
    return MessageIndex(kb.messages)
