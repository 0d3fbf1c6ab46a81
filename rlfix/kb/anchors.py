"""Derive the literals a regex requires, so a log can be scanned for them before any regex runs."""

from __future__ import annotations

import importlib
import re
from functools import lru_cache
from typing import Any

# The stdlib's regex parser is private (re._parser since 3.11, sre_parse before); its API has
# been stable for decades and it is what tells us which literals a pattern requires.
try:
    _sre_parse: Any = importlib.import_module("re._parser")
    _sre: Any = importlib.import_module("re._constants")
except ImportError:  # pragma: no cover - Python 3.10
    _sre_parse = importlib.import_module("sre_parse")
    _sre = importlib.import_module("sre_constants")

#: Shortest literal worth scanning for; shorter ones make nearly every line a candidate.
MIN_ANCHOR = 3

# Zero-width assertions (^, $, \b) do not consume characters, so a literal run continues across them.
_ZERO_WIDTH = {_sre.AT}


def _score(option: tuple[str, ...]) -> tuple[int, int]:
    """Prefer long literals, and few of them: every alternative is one more way to be a candidate."""
    return (min(len(s) for s in option) - (len(option) - 1), -len(option))


def _best(options: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    options = [o for o in options if o and all(o)]
    usable = [o for o in options if min(len(s) for s in o) >= MIN_ANCHOR]
    candidates = usable or options
    return max(candidates, key=_score) if candidates else None


#: Most spellings a literal run may fan out to across small groups (`(?:is )?(?:full|out of memory)`).
MAX_SPELLINGS = 8


def _spellings(items: Any) -> list[str] | None:
    """Every string `items` can match, when that is a few literals (else None)."""
    found = [""]
    for op, arg in items:
        if op is _sre.LITERAL:
            found = [f + chr(arg) for f in found]
            continue
        if op in _ZERO_WIDTH:
            continue
        if op is _sre.SUBPATTERN:
            inner = _spellings(arg[-1])
        elif op is _sre.BRANCH:
            branches = [_spellings(alt) for alt in arg[1]]
            inner = None if any(b is None for b in branches) else [x for b in branches for x in b or ()]
        elif op is _sre.IN and len(arg) <= 4 and all(o is _sre.LITERAL for o, _ in arg):
            inner = [chr(c) for _, c in arg]  # `[_ ]`: a few characters, each a spelling
        elif op is _sre.MAX_REPEAT and arg[0] == 0 and arg[1] == 1:
            optional = _spellings(arg[2])
            inner = None if optional is None else ["", *optional]
        else:
            return None
        if inner is None or len(found) * len(inner) > MAX_SPELLINGS:
            return None
        found = [f + i for f in found for i in inner]
    return list(dict.fromkeys(found))


def _required(items: Any) -> tuple[str, ...] | None:
    """Return a set of alternatives, one of which occurs in every match of `items`."""
    options: list[tuple[str, ...]] = []
    # The literal run so far, in every spelling small groups inside it allow.
    run: list[str] = [""]

    def close_run() -> None:
        if run != [""]:
            options.append(tuple(dict.fromkeys(run)))
        run[:] = [""]

    for op, arg in items:
        spelled = _spellings([(op, arg)]) if op is not _sre.LITERAL else [chr(arg)]
        if spelled is not None and len(run) * len(spelled) <= MAX_SPELLINGS:
            run[:] = [r + s for r in run for s in spelled]
            continue
        if op in _ZERO_WIDTH:
            continue
        elif op is _sre.SUBPATTERN:
            sub = arg[-1]
            close_run()
            inner = _required(sub)
            if inner:
                options.append(inner)
        elif op is _sre.BRANCH:
            close_run()
            alternatives: list[str] = []
            for alt in arg[1]:
                inner = _required(alt)
                if not inner:
                    alternatives = []
                    break
                alternatives.extend(inner)
            if alternatives:
                options.append(tuple(dict.fromkeys(alternatives)))
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", None)):
            close_run()
            low, _high, sub = arg
            if low >= 1:
                inner = _required(sub)
                if inner:
                    options.append(inner)
        else:
            close_run()
    close_run()
    return _best(options)


@lru_cache(maxsize=2048)
def parse(pattern: str) -> tuple[Any, str | None]:
    """Parse with the stdlib parser: (tree, None), or (None, error) for syntax it does not know.

    Cached: loading checks each pattern's syntax and then derives its anchors from the same tree
    (the parser is pure Python, a third of the knowledge base's load time). Callers only read it.
    """
    try:
        return _sre_parse.parse(pattern), None
    except (re.error, OverflowError, RecursionError) as exc:
        return None, str(exc)


def capture_groups(pattern: str) -> int | None:
    """Number of capturing groups, or None when the stdlib parser cannot read the pattern."""
    tree, _error = parse(pattern)
    return None if tree is None else int(tree.state.groups) - 1


def derive_anchors(pattern: str) -> tuple[tuple[str, ...], bool]:
    """Literals one of which every match of `pattern` contains, and whether they are caseless.

    Returns an empty tuple when no literal of at least MIN_ANCHOR characters can be derived
    (the caller then needs an explicit anchor). Patterns the stdlib parser cannot read
    (syntax only the `regex` module knows) also give an empty tuple.
    """
    parsed, _error = parse(pattern)
    if parsed is None:
        return (), False
    caseless = bool(parsed.state.flags & re.IGNORECASE)
    found = _required(list(parsed))
    if not found or min(len(s) for s in found) < MIN_ANCHOR:
        return (), caseless
    if caseless:
        found = tuple(dict.fromkeys(s.lower() for s in found))
    return found, caseless
