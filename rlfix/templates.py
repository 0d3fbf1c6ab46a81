"""One table of masking rules: what varies between two lines that say the same thing.

Error templates (grouping repeats, the healthy baseline, samples seen on many ranks) replace the
variable spans with placeholders; `rlfix kb draft` turns the same spans into regex fragments.
Drain-style: an ordered list of small regexes, applied to the message only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class MaskRule:
    """A span that varies between otherwise equal messages."""

    name: str
    regex: str
    placeholder: str
    #: What `kb draft` writes in its place (None: the span is kept literally in drafts).
    fragment: str | None
    flags: int = 0


MASK_RULES: tuple[MaskRule, ...] = (
    MaskRule("ip", r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "<IP>", r"[\d.:]+"),
    MaskRule("path", r"(?:/[\w.\-@+]+){2,}", "<PATH>", r"\S+"),
    MaskRule("hex", r"\b0x[0-9a-fA-F]+\b", "<HEX>", r"0x[0-9a-fA-F]+"),
    MaskRule("id", r"\b[0-9a-f]{12,}\b", "<ID>", r"[0-9a-f]+"),
    # "[Rank 3]" and "[Rank 4]" are the same line from two ranks; a draft keeps the word.
    MaskRule("rank", r"\brank\s*\d+\b", "rank <N>", None, re.IGNORECASE),
    MaskRule("num", r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", "<N>", r"[-+]?[\d.]+(?:e[-+]?\d+)?"),
)

_SUBSTITUTIONS = tuple((re.compile(rule.regex, rule.flags), rule.placeholder) for rule in MASK_RULES)
_VARIABLE = re.compile("|".join(f"(?P<{r.name}>{r.regex})" for r in MASK_RULES if r.fragment is not None))
_FRAGMENTS = {r.name: r.fragment for r in MASK_RULES if r.fragment is not None}

#: Longest template kept: enough to tell errors apart, bounded for pathological lines.
TEMPLATE_CHARS = 300


def template(message: str) -> str:
    """The message with numbers, paths, addresses and ids masked, so repeats group together."""
    for pattern, placeholder in _SUBSTITUTIONS:
        message = pattern.sub(placeholder, message)
    return message.strip()[:TEMPLATE_CHARS]


def pattern_for(message: str) -> str:
    """A linear regex matching `message` with its numbers, paths and ids left variable."""
    out, pos = [], 0
    for m in _VARIABLE.finditer(message):
        out.append(re.escape(message[pos : m.start()]))
        out.append(_FRAGMENTS[m.lastgroup or "num"])
        pos = m.end()
    out.append(re.escape(message[pos:]))
    return "".join(out).replace("\\ ", " ")
