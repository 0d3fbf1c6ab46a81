"""A failure no signature knows: the last error lines, how the job ended, the nearest signatures."""

from __future__ import annotations

import re
from functools import lru_cache

from rlfix.conclude.remedies import choose_remedies
from rlfix.details import Details, SimilarSignature, UnrecognizedFailure
from rlfix.job import JobContext
from rlfix.kb.load import KnowledgeBase
from rlfix.model import INVESTIGATE, Evidence, Kind, Line, Remediation, Severity, Signature
from rlfix.observe.unknown import UnknownErrors
from rlfix.redact import redact_secrets
from rlfix.report import Diagnosis

UNRECOGNIZED_ID = "unrecognized-failure"
#: Evidence lines an unrecognised failure shows.
MAX_EVIDENCE = 6

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
    decision=INVESTIGATE,
    remediation=Remediation(
        steps=(
            "Read the evidence lines above, starting with the first error before the job ended.",
            "Teach rlfix this failure: `rlfix kb draft LOG > my_kb/new.yaml`, edit it, and use `--kb my_kb`.",
        )
    ),
    references=("https://github.com/rlfix/rlfix/blob/main/docs/writing-signatures.md",),
)


#: Words every error line uses: sharing them says nothing about which failure it is.
_COMMON_WORDS = frozenset((
    "error", "errors", "failed", "failure", "fatal", "exception", "exceptions", "process", "processes", "exit",
    "exited", "code", "status", "with", "from", "that", "this", "have", "been", "none", "line", "file", "most",
    "recent", "call", "last", "traceback", "raise", "raised", "during", "while", "when", "could", "cannot",
    "unable", "warning", "info", "debug", "worker", "workers",
))  # fmt: skip
_WORD = re.compile(r"[a-z][a-z0-9_]{3,}")


def _telling_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _COMMON_WORDS}


#: A signature is "similar" only when its example shares this many telling words with the line:
#: token-set similarity alone calls a short line ("exit 1") a perfect match of any example that
#: contains its words.
MIN_SHARED_WORDS = 2


@lru_cache(maxsize=8)
def _choices(kb: KnowledgeBase) -> tuple[tuple[str, str], ...]:
    return tuple((sig.id, line) for sig in kb if not sig.fallback for line in (sig.title, *sig.examples.match))


def similar_signatures(
    kb: KnowledgeBase, text: str, limit: int = 3, cutoff: float = 45.0
) -> tuple[SimilarSignature, ...]:
    """Known signatures whose examples look most like `text` (rapidfuzz token-set similarity, 0-100),
    among those sharing at least MIN_SHARED_WORDS telling words with it."""
    from rapidfuzz import fuzz, process

    choices = _choices(kb)
    if not text or not choices:
        return ()
    scored: dict[str, float] = {}
    words = _telling_words(text)
    for choice, score, index in process.extract(
        text, [c[1] for c in choices], scorer=fuzz.token_set_ratio, limit=50, score_cutoff=cutoff
    ):
        if len(words & _telling_words(choice)) < MIN_SHARED_WORDS:
            continue
        sig_id = choices[index][0]
        scored[sig_id] = max(scored.get(sig_id, 0.0), float(score))
    best = sorted(scored.items(), key=lambda kv: -kv[1])[:limit]
    return tuple(SimilarSignature(sig_id, round(score)) for sig_id, score in best)


OpenTraceback = tuple[Line, tuple[str, str, str] | None]


def unrecognized(
    unknown: UnknownErrors,
    open_traceback: OpenTraceback | None,
    kb: KnowledgeBase,
    context: JobContext,
    redact: bool = True,
    ending: Evidence | None = None,
) -> Diagnosis:
    """The diagnosis for a log that ended in a failure no signature matched.

    `ending`, the error line the input ended with, is quoted first: it is the job's own last word
    (issue 22: a Ray job's bare `exit 1` quoted a shared raylet line from its time window first).
    """
    evidence = [first for _template, first in sorted(unknown.recent, key=lambda r: r[1].order)]
    if ending is not None:
        evidence = [ending, *(e for e in evidence if (e.source, e.line) != (ending.source, ending.line))]
    if unknown.termination is not None:
        evidence.append(unknown.termination)
    query = unknown.recent[0][1].message if unknown.recent else ""
    if not query and unknown.termination is not None:
        query = unknown.termination.message
    raised_at = None
    if open_traceback is not None:
        # A traceback whose exception line never came: the log was cut, or the process died mid-print.
        header, (file, line_no, func) = open_traceback[0], open_traceback[1] or ("?", "?", "?")
        text = redact_secrets(header.text) if redact else header.text
        evidence.insert(0, Evidence(header.source, header.number, text[:600], header.message))
        raised_at = f"{file}:{line_no} in {func}"
        query = query or f"{func} {file}"
    templates = tuple(t for t, _first in unknown.recent)
    return Diagnosis(
        signature=UNRECOGNIZED,
        evidence=tuple(evidence[:MAX_EVIDENCE]),
        count=sum(t.count for t in templates) or 1,
        confidence=UNRECOGNIZED.confidence,
        reasons=("the job ended with a failure, but no signature in the knowledge base matched",),
        remedies=choose_remedies(UNRECOGNIZED, context),
        details=Details(
            unrecognized=UnrecognizedFailure(unknown.exit_code, templates, raised_at),
            similar=similar_signatures(kb, query),
        ),
    )
