"""Derive the literals a regex requires, so a log can be scanned for them before any regex runs."""

from __future__ import annotations

import importlib
import re
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


def _required(items: Any) -> tuple[str, ...] | None:
    """Return a set of alternatives, one of which occurs in every match of `items`."""
    options: list[tuple[str, ...]] = []
    run: list[str] = []

    def close_run() -> None:
        if run:
            options.append(("".join(run),))
            run.clear()

    for op, arg in items:
        if op is _sre.LITERAL:
            run.append(chr(arg))
        elif op in _ZERO_WIDTH:
            continue
        elif op is _sre.SUBPATTERN:
            sub = arg[-1]
            # A group that is itself a plain literal keeps the run going.
            if all(o is _sre.LITERAL for o, _ in sub):
                run.extend(chr(a) for _, a in sub)
                continue
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


def parse(pattern: str) -> tuple[Any, str | None]:
    """Parse with the stdlib parser: (tree, None), or (None, error) for syntax it does not know."""
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
