"""How many copies of an atom a regex's counted repeats make the compiler build.

`regex` (like `re`) compiles `x{1000}` into a thousand copies of `x`, and nested counts multiply:
`((a{1000}){1000}){1000}` is 10^9 copies, a 60-byte pattern that takes gigabytes to compile. A
knowledge base from `--kb` (or a planted cache) must not be able to do that, so the loader refuses
patterns whose counts multiply past `MAX_EXPANSION`, before anything compiles them.
"""

from __future__ import annotations

import re

#: The most copies of one atom that nested counted repeats may make.
MAX_EXPANSION = 10_000
#: Digits read of one count: any more is already far beyond the limit.
_MAX_DIGITS: int = 7
_COUNT = re.compile(r"\{([0-9]*)(?:,([0-9]*))?\}")


def expansion(source: str) -> int:
    """The largest product of nested counted repeats in `source` (1 when it has none).

    A light scan, not a parser: escapes and character classes are skipped, groups nest, and a
    count after an atom or a group multiplies what that atom or group already holds.
    """
    groups = [1]  # the largest product seen inside each open group
    last = 1  # the product held by the atom or group just before the current position
    i = 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            i, last = i + 2, 1
        elif char == "[":
            i, last = _class_end(source, i), 1
        elif char == "(":
            groups.append(1)
            i += 1
        elif char == ")":
            last = groups.pop() if len(groups) > 1 else 1
            groups[-1] = max(groups[-1], last)
            i += 1
        elif char == "{" and (count := _COUNT.match(source, i)) is not None:
            last *= _count(count)
            groups[-1] = max(groups[-1], last)
            i = count.end()
        else:
            i, last = i + 1, 1
    return max(groups)


def _count(match: re.Match[str]) -> int:
    """The larger bound of `{m}`, `{m,}` or `{m,n}` (`{m,}` compiles m copies and a loop)."""
    numbers = [text for text in match.groups() if text]
    if any(len(text.lstrip("0")) > _MAX_DIGITS for text in numbers):
        return int(10**_MAX_DIGITS)
    largest: int = max((int(text) for text in numbers), default=1)
    return largest or 1


def _class_end(source: str, start: int) -> int:
    """The position after the character class opening at `start` (`[]...]` and escapes included)."""
    i = start + 1
    if i < len(source) and source[i] == "^":
        i += 1
    if i < len(source) and source[i] == "]":
        i += 1
    while i < len(source) and source[i] != "]":
        i += 2 if source[i] == "\\" else 1
    return i + 1
