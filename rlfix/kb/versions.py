"""Version ranges for remediation flags: `>=0.10.2`, `<0.10.2,>=0.8`, `==0.7.*`."""

from __future__ import annotations

import re

_PART = re.compile(r"\d+")
# A clause: operator, release, then an optional pre/post/dev tag (compared by release only) or `.*`.
_CLAUSE = re.compile(r"^\s*(==|!=|>=|<=|>|<|~=)?\s*v?(\d+(?:\.\d+)*)(?:\.?(?:post|rc|dev|a|b)\d*)*(\.\*)?\s*$")


def parse_version(text: str) -> tuple[int, ...]:
    """The numeric release part of a version string: `0.10.2.post1` -> (0, 10, 2)."""
    head = re.match(r"v?(\d+(?:\.\d+)*)", text.strip())
    if not head:
        return ()
    return tuple(int(p) for p in head.group(1).split("."))


def _cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    width = max(len(a), len(b))
    a, b = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    return (a > b) - (a < b)


def version_in(version: str, spec: str | None) -> bool:
    """Whether `version` satisfies every comma-separated clause of `spec` (None: always)."""
    if not spec:
        return True
    have = parse_version(version)
    if not have:
        return False
    for clause in spec.split(","):
        m = _CLAUSE.match(clause)
        if not m:
            return False
        op, want_text, wildcard = m.group(1) or "==", m.group(2), m.group(3)
        want = parse_version(want_text)
        if wildcard or op == "~=":
            prefix = want if wildcard else want[:-1]
            ok = have[: len(prefix)] == prefix and (op != "~=" or _cmp(have, want) >= 0)
            if op == "!=":
                ok = not ok
        else:
            c = _cmp(have, want)
            ok = {"==": c == 0, "!=": c != 0, ">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0}[op]
        if not ok:
            return False
    return True


def valid_range(spec: str) -> bool:
    """Whether `spec` is a version range `version_in` understands (comma-separated clauses)."""
    return all(_CLAUSE.match(part) for part in spec.split(","))
