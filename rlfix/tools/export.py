"""Export every signature pattern for other tools: POSIX ERE for `grep -E -f`, or Python regex.

The ERE export translates the parsed regex rather than the source text, so what ERE lacks is
spelled out: `\\d \\s \\w` become `[[:digit:]] [[:space:]] [[:alnum:]_]`, non-capturing, named
and inline-flag groups become plain groups, lazy quantifiers become greedy ones (the same lines
match), case-insensitive parts become `[aA]` classes, and `\\b` at either end of a pattern (or
between a word and a non-word character) becomes a bracket test or nothing. A pattern that cannot
be expressed exactly (look-arounds, back-references, atomic groups, possessive quantifiers, `\\B`,
a `\\b` next to something unknown, a non-ASCII class member) is exported as its anchor literals
instead, escaped; every line that matches the pattern contains one of them, so grep then counts a
superset of rlfix's candidate lines. grep also sees raw lines, while rlfix matches the line after
stripping Ray/torchrun prefixes, ANSI colour and `\\r` redraws, so `^` can differ on prefixed lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import regex

from rlfix.kb import anchors
from rlfix.kb.load import KnowledgeBase
from rlfix.model import Pattern

# The stdlib regex parser and its opcodes (private modules; rlfix.kb.anchors picks them per version).
_sre: Any = anchors.__dict__["_sre"]
_sre_parse: Any = anchors.__dict__["_sre_parse"]

DIALECTS = ("ere", "python")

_ERE_SPECIAL = set(".[]()*+?{}|^$\\")
_WORD = "[[:alnum:]_]"
_NOT_WORD = "[^[:alnum:]_]"
_CATEGORIES = {
    _sre.CATEGORY_DIGIT: ("[:digit:]", False),
    _sre.CATEGORY_NOT_DIGIT: ("[:digit:]", True),
    _sre.CATEGORY_SPACE: ("[:space:]", False),
    _sre.CATEGORY_NOT_SPACE: ("[:space:]", True),
    _sre.CATEGORY_WORD: ("[:alnum:]_", False),
    _sre.CATEGORY_NOT_WORD: ("[:alnum:]_", True),
}


class Inexact(Exception):
    """The pattern has no exact POSIX ERE form."""


def export_patterns(kb: KnowledgeBase, dialect: str = "ere") -> list[str]:
    """Every signature pattern in `kb`, one string each, deduplicated, in knowledge-base order.

    `dialect="ere"` gives POSIX extended regexes for `LC_ALL=C grep -E -f`; patterns ERE cannot
    express exactly are replaced by their anchor literals (see the module docstring).
    `dialect="python"` gives `regex`/`re` syntax with `(?i)` for caseless patterns.
    """
    if dialect not in DIALECTS:
        from rlfix.errors import UsageError

        raise UsageError(f"unknown dialect {dialect!r}; use one of: {', '.join(DIALECTS)}")
    out: dict[str, None] = {}
    for sig in kb:
        for pattern in sig.patterns:
            for line in pattern_to_ere(pattern) if dialect == "ere" else [_python(pattern)]:
                out[line] = None
    return list(out)


def _python(pattern: Pattern) -> str:
    source = regex.escape(pattern.source) if pattern.literal else pattern.source
    return f"(?i){source}" if pattern.ignore_case and not source.startswith("(?i)") else source


def pattern_to_ere(pattern: Pattern) -> list[str]:
    """One ERE for `pattern`, or its escaped anchor literals when no exact ERE exists."""
    if pattern.literal:
        return [_literal_ere(pattern.source, pattern.ignore_case)]
    try:
        return [regex_to_ere(pattern.source, pattern.ignore_case)]
    except Inexact:
        return [_literal_ere(anchor, pattern.ignore_case) for anchor in pattern.anchors]


def regex_to_ere(source: str, ignore_case: bool = False) -> str:
    """Translate a Python regex to an equivalent POSIX ERE, or raise `Inexact`."""
    if "\n" in source:
        raise Inexact("a newline cannot appear in a grep pattern file")
    try:
        parsed = _sre_parse.parse(source)
    except Exception as exc:  # syntax only the `regex` module knows, or limits of the parser
        raise Inexact(str(exc)) from exc
    caseless = ignore_case or bool(parsed.state.flags & _sre.SRE_FLAG_IGNORECASE)
    text = _Translator().seq(list(parsed), caseless, at_start=True, at_end=True)
    if not text:
        raise Inexact("empty pattern")
    return text


def _literal_ere(text: str, caseless: bool) -> str:
    return "".join(_char(ord(c), caseless) for c in text)


def _char(code: int, caseless: bool) -> str:
    c = chr(code)
    if c == "\n":
        raise Inexact("newline")
    if caseless and c.isalpha():
        if not c.isascii():
            raise Inexact("caseless non-ASCII letter")
        return f"[{c.lower()}{c.upper()}]"
    return "\\" + c if c in _ERE_SPECIAL else c


def _is_word_char(code: int) -> bool:
    c = chr(code)
    return c.isalnum() or c == "_"


class _Translator:
    """Walks the stdlib parse tree and emits ERE text."""

    def seq(self, items: Sequence[tuple[Any, Any]], caseless: bool, at_start: bool, at_end: bool) -> str:
        parts: list[str] = []
        for i, (op, arg) in enumerate(items):
            first = at_start and all(o is _sre.AT for o, _ in items[:i])
            last = at_end and all(o is _sre.AT for o, _ in items[i + 1 :])
            if op is _sre.AT:
                parts.append(self.at(arg, items[:i], items[i + 1 :], first, last))
            else:
                parts.append(self.item(op, arg, caseless, first, last))
        return "".join(parts)

    def at(
        self, code: Any, before: Sequence[tuple[Any, Any]], after: Sequence[tuple[Any, Any]], first: bool, last: bool
    ) -> str:
        if code in (_sre.AT_BEGINNING, _sre.AT_BEGINNING_STRING):
            return "^"
        if code in (_sre.AT_END, _sre.AT_END_STRING):
            return "$"
        if code is not _sre.AT_BOUNDARY:
            raise Inexact(f"assertion {code}")
        left = _edge(before, last_char=True)
        right = _edge(after, last_char=False)
        # `\b` is a test on the characters either side; it becomes a bracket test only where
        # consuming that character cannot steal it from a neighbouring part of the pattern.
        if left is not None and right is not None and left != right:
            return ""
        if first and right == "word":
            return f"(^|{_NOT_WORD})"
        if last and left == "word":
            return f"({_NOT_WORD}|$)"
        raise Inexact("\\b next to an unknown character")

    def item(self, op: Any, arg: Any, caseless: bool, first: bool, last: bool) -> str:
        if op is _sre.LITERAL:
            return _char(arg, caseless)
        if op is _sre.NOT_LITERAL:
            return self.charset([(_sre.NEGATE, None), (_sre.LITERAL, arg)], caseless)
        if op is _sre.ANY:
            return "."
        if op is _sre.IN:
            return self.charset(arg, caseless)
        if op is _sre.SUBPATTERN:
            _group, add_flags, del_flags, sub = arg
            if add_flags & ~_sre.SRE_FLAG_IGNORECASE & ~_sre.SRE_FLAG_UNICODE:
                raise Inexact("inline flags")
            inner_case = (caseless or bool(add_flags & _sre.SRE_FLAG_IGNORECASE)) and not (
                del_flags & _sre.SRE_FLAG_IGNORECASE
            )
            inner = self.seq(list(sub), inner_case, first, last)
            return f"({inner})" if inner else ""
        if op is _sre.BRANCH:
            alternatives = [self.seq(list(alt), caseless, first, last) for alt in arg[1]]
            present = [a for a in alternatives if a]
            if not present:
                return ""
            group = "(" + "|".join(present) + ")"
            return group + "?" if len(present) < len(alternatives) else group
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            low, high, sub = arg
            # Laziness changes what is captured, never whether a line matches.
            # Only a part that occurs at most once can own an edge of the pattern.
            inner = self.seq(list(sub), caseless, first and high == 1, last and high == 1)
            if not inner:
                return ""
            if not _single_atom(inner):
                inner = f"({inner})"
            return inner + _quantifier(low, high)
        raise Inexact(f"no ERE form for {op}")

    def charset(self, members: Sequence[tuple[Any, Any]], caseless: bool) -> str:
        negate = bool(members) and members[0][0] is _sre.NEGATE
        chars: set[int] = set()
        ranges: list[tuple[int, int]] = []
        classes: list[str] = []
        for op, arg in members[1:] if negate else members:
            if op is _sre.LITERAL:
                chars.add(arg)
            elif op is _sre.RANGE:
                ranges.append(arg)
            elif op is _sre.CATEGORY:
                name, negated = _CATEGORIES.get(arg, ("", True))
                if negated:
                    if negate or len(members) > 1 or not name:
                        raise Inexact("negated class inside a set")
                    return f"[^{name}]"
                classes.append(name)
            else:
                raise Inexact(f"set member {op}")
        if caseless:
            chars |= {ord(chr(c).swapcase()) for c in chars if chr(c).isascii() and chr(c).isalpha()}
            for lo, hi in list(ranges):
                a, b = chr(lo), chr(hi)
                if a.isascii() and b.isascii() and a.isalpha() and b.isalpha() and a.islower() == b.islower():
                    ranges.append((ord(a.swapcase()), ord(b.swapcase())))
                elif any(chr(c).isascii() and chr(c).isalpha() for c in range(lo, min(hi, 127) + 1)):
                    raise Inexact("caseless range over letters")
        if any(c > 127 for c in chars) or any(hi > 127 for _, hi in ranges) or 10 in chars:
            raise Inexact("non-ASCII or newline in a set")
        body = "".join(classes)
        body += "".join(f"{_set_char(lo)}-{_set_char(hi)}" for lo, hi in ranges)
        specials = {ord("]"), ord("^"), ord("-")}
        body += "".join(chr(c) for c in sorted(chars - specials))
        if ord("^") in chars:
            body += "^"
        if ord("]") in chars:
            body = "]" + body
        if ord("-") in chars:
            body += "-"
        if body == "^":
            return "\\^" if not negate else "[^^]"
        return f"[{'^' if negate else ''}{body}]"


def _set_char(code: int) -> str:
    if chr(code) in "]^-[":
        raise Inexact("bracket metacharacter at a range end")
    return chr(code)


def _single_atom(text: str) -> bool:
    if len(text) == 1 or (len(text) == 2 and text[0] == "\\"):
        return True
    if text.startswith("[") and text.endswith("]"):
        # One bracket expression, not two side by side: its first `]` (after the optional
        # `^`, a leading `]` and any `[:name:]`) must be the last character.
        body = text[1:-1]
        i = 1 if body.startswith("^") else 0
        i += 1 if body[i : i + 1] == "]" else 0
        while i < len(body):
            if body.startswith("[:", i):
                i = body.index(":]", i) + 2
            elif body[i] == "]":
                return False
            else:
                i += 1
        return True
    return False


def _quantifier(low: int, high: int) -> str:
    unbounded = high is _sre.MAXREPEAT or high >= 0xFFFF
    if (low, unbounded) == (0, True):
        return "*"
    if (low, unbounded) == (1, True):
        return "+"
    if (low, high) == (0, 1):
        return "?"
    if unbounded:
        return f"{{{low},}}"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _edge(items: Sequence[tuple[Any, Any]], last_char: bool) -> str | None:
    """'word' or 'nonword' when the character next to a position is known, else None."""
    seq = list(items)
    if last_char:
        seq.reverse()
    for op, arg in seq:
        if op is _sre.AT:
            continue
        if op is _sre.LITERAL:
            return "word" if _is_word_char(arg) else "nonword"
        if op is _sre.SUBPATTERN:
            return _edge(list(arg[-1]), last_char)
        if op is _sre.BRANCH:
            kinds = {_edge(list(alt), last_char) for alt in arg[1]}
            return kinds.pop() if len(kinds) == 1 else None
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and arg[0] >= 1:
            return _edge(list(arg[2]), last_char)
        if op is _sre.IN:
            return _set_kind(arg)
        return None
    return None


def _set_kind(members: Sequence[tuple[Any, Any]]) -> str | None:
    if members and members[0][0] is _sre.NEGATE:
        return None
    kinds: set[str] = set()
    for op, arg in members:
        if op is _sre.LITERAL:
            kinds.add("word" if _is_word_char(arg) else "nonword")
        elif op is _sre.RANGE:
            lo, hi = arg
            kinds |= {"word" if _is_word_char(c) else "nonword" for c in range(lo, hi + 1)}
        elif op is _sre.CATEGORY and arg in (_sre.CATEGORY_DIGIT, _sre.CATEGORY_WORD):
            kinds.add("word")
        else:
            return None
    return kinds.pop() if len(kinds) == 1 else None
