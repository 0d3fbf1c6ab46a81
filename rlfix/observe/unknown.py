"""Failures the knowledge base does not know: error templates, termination signals, nearest signatures."""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rlfix.kb.load import KnowledgeBase
from rlfix.match.matcher import Hit, Probe, observer_pattern
from rlfix.model import Evidence, Kind, Remediation, Severity, Signature

ERRORLINE = "@error"
TERMINATION = "@exit"
UNRECOGNIZED_ID = "unrecognized-failure"
MAX_TEMPLATES = 500

_ERROR = r"(?i)\b(?:error|fatal|failed|failure|exception|aborted|segmentation fault)\b"
_TERMINATIONS = (
    r"(?i)\bexit(?:ed)?(?: with)? (?:status|code)[ :=]+(?P<code>-?[1-9]\d{0,2})\b",
    r"returned non-zero exit status (?P<code>\d+)",
    r"(?i)\bexitcode\s*:\s*(?P<code>-?[1-9]\d{0,2})\b",
    r"exits with return code = (?P<code>-?[1-9]\d{0,2})",
    r"(?i)\bjob '[^']{1,200}' failed\b",
    r"Error executing job with overrides",
    r"(?:Aborted|Segmentation fault|Bus error) \(core dumped\)",
    r": line \d+: +\d+ Killed\b",
    r"\bKilling subprocess \d+",
)

# Drain-style masking: ordered, each rule a small regex, applied to the message only.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<IP>"),
    (re.compile(r"(?:/[\w.\-@+]+){2,}"), "<PATH>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<HEX>"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<ID>"),
    (re.compile(r"\brank\s*\d+\b", re.IGNORECASE), "rank <N>"),
    (re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"), "<N>"),
)


#: Error-looking lines examined per log for templates (a crash log that prints more is grouped
#: well enough by its first this-many).
ERROR_LINES = 100_000


def unknown_probes() -> list[Probe]:
    probes = [Probe(ERRORLINE, observer_pattern(_ERROR), max_lines=ERROR_LINES)]
    probes += [Probe(TERMINATION, observer_pattern(p)) for p in _TERMINATIONS]
    return probes


def template(message: str) -> str:
    """The message with numbers, paths, addresses and ids masked, so repeats group together."""
    for pattern, mask in _MASKS:
        message = pattern.sub(mask, message)
    return message.strip()[:300]


@dataclass
class TemplateCount:
    template: str
    count: int
    first: Evidence
    last_seq: int


class UnknownTracker:
    """Error-looking lines grouped by template, and the lines that say the job ended badly."""

    def __init__(self) -> None:
        self.templates: OrderedDict[str, TemplateCount] = OrderedDict()
        self.termination: Evidence | None = None
        self.exit_code: str | None = None

    def wants(self, owner: str, message: str) -> bool:
        """Whether a line would be kept as quoted evidence (not just counted)."""
        if owner == TERMINATION:
            return self.termination is None
        return len(self.templates) < MAX_TEMPLATES and template(message) not in self.templates

    def observe(self, hit: Hit, evidence: Evidence) -> None:
        if hit.probe.owner == TERMINATION:
            if self.termination is None:
                self.termination = evidence
            code = hit.match.groupdict().get("code")
            if code and self.exit_code is None:
                self.exit_code = code
            return
        key = template(evidence.message)
        entry = self.templates.get(key)
        if entry is not None:
            entry.count += evidence.repeat
            entry.last_seq = evidence.order
        elif len(self.templates) < MAX_TEMPLATES:
            self.templates[key] = TemplateCount(key, evidence.repeat, evidence, evidence.order)

    @property
    def crashed(self) -> bool:
        return self.termination is not None

    def top_templates(self, limit: int = 5) -> list[TemplateCount]:
        """The most recent error templates, last first: the end of a log is where it died."""
        return sorted(self.templates.values(), key=lambda t: -t.last_seq)[:limit]

    def to_list(self, limit: int = 20) -> list[dict[str, Any]]:
        return [
            {"template": t.template, "count": t.count, "first": {"source": t.first.source, "line": t.first.line}}
            for t in sorted(self.templates.values(), key=lambda t: -t.count)[:limit]
        ]


UNRECOGNIZED = Signature(
    id=UNRECOGNIZED_ID,
    title="Unrecognised failure",
    kind=Kind.ROOT,
    severity=Severity.ERROR,
    summary=(
        "The job ended with a failure that no signature in the knowledge base describes. The evidence is the "
        "last error lines before it ended; `rlfix kb draft` turns them into a new signature."
    ),
    patterns=(),
    confidence=0.3,
    remediation=Remediation(
        steps=(
            "Read the evidence lines below, starting with the first error before the job ended.",
            "Teach rlfix this failure: `rlfix kb draft LOG > my_kb/new.yaml`, edit it, and use `--kb my_kb`.",
        )
    ),
    references=("https://github.com/rlfix/rlfix/blob/main/docs/writing-signatures.md",),
)


@lru_cache(maxsize=8)
def _choices(kb: KnowledgeBase) -> tuple[tuple[str, str], ...]:
    return tuple((sig.id, line) for sig in kb if not sig.fallback for line in (sig.title, *sig.examples.match))


def similar_signatures(kb: KnowledgeBase, text: str, limit: int = 3, cutoff: float = 45.0) -> list[dict[str, Any]]:
    """Known signatures whose examples look most like `text` (rapidfuzz token-set similarity, 0-100)."""
    from rapidfuzz import fuzz, process

    choices = _choices(kb)
    if not text or not choices:
        return []
    scored: dict[str, float] = {}
    for _choice, score, index in process.extract(
        text, [c[1] for c in choices], scorer=fuzz.token_set_ratio, limit=50, score_cutoff=cutoff
    ):
        sig_id = choices[index][0]
        scored[sig_id] = max(scored.get(sig_id, 0.0), float(score))
    best = sorted(scored.items(), key=lambda kv: -kv[1])[:limit]
    return [{"id": sig_id, "score": round(score)} for sig_id, score in best]
