"""One table of masking rules: what varies between two lines that say the same thing.

Error templates (grouping repeats, the healthy baseline, samples seen on many ranks) replace the
variable spans with placeholders; `rlfix kb draft` turns the same spans into regex fragments.
Drain-style: an ordered list of small regexes, applied to the message only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rlfix.redact import RULES as REDACTION_RULES


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
    # A Ray submission id (`raysubmit_` and 16 letters and digits: Ray's job_manager.generate_job_id) is
    # one id, masked whole: the digits inside it alone would leave `raysubmit_<N>C<N>zZHz…`.
    MaskRule("submission", r"\braysubmit_[A-Za-z0-9]+\b", "raysubmit_<ID>", r"raysubmit_\w+"),
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


#: ASCII digits 1-9 as "1". The rules treat all digits alike (`\d`, `[0-9a-f]`, `\w`) except the
#: "0" of `0x`, which stays; every digit ends up inside a placeholder. So a message and its masked
#: copy share a template, and a warning repeated with other numbers is masked once.
_DIGITS_TO_ONE = bytes.maketrans(b"23456789", b"11111111")


def template(message: str) -> str:
    """The message with numbers, paths, addresses and ids masked, so repeats group together."""
    # Through bytes: `bytes.translate` is a table lookup in C, `str.translate` a dict lookup per
    # character; ASCII digit bytes never occur inside a multi-byte UTF-8 character.
    raw = message.encode("utf-8", "surrogatepass")
    return _template(raw.translate(_DIGITS_TO_ONE).decode("utf-8", "surrogatepass"))


@lru_cache(maxsize=4096)
def _template(message: str) -> str:
    for pattern, placeholder in _SUBSTITUTIONS:
        message = pattern.sub(placeholder, message)
    return message.strip()[:TEMPLATE_CHARS]


def _secrets(message: str) -> list[tuple[int, int]]:
    """Where credentials sit in `message` (the part a redaction rule would replace), merged."""
    spans = []
    for rule in REDACTION_RULES:
        for m in rule.pattern.finditer(message):
            spans.append((m.end("head") if "head" in rule.pattern.groupindex else m.start(), m.end()))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _literal(text: str) -> str:
    out, pos = [], 0
    for m in _VARIABLE.finditer(text):
        out.append(re.escape(text[pos : m.start()]))
        out.append(_FRAGMENTS[m.lastgroup or "num"])
        pos = m.end()
    out.append(re.escape(text[pos:]))
    return "".join(out)


def pattern_for(message: str) -> str:
    """A linear regex matching `message` with its numbers, paths, ids and secrets left variable.

    Drafted from the unmasked line: a secret becomes `\\S+` (it matches the masked example too),
    never the escaped mask, which would only match reports, not logs.
    """
    out, pos = [], 0
    for start, end in _secrets(message):
        out.append(_literal(message[pos:start]))
        out.append(r"\S+")
        pos = end
    out.append(_literal(message[pos:]))
    return "".join(out).replace("\\ ", " ")
