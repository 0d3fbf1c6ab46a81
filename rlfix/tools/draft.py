"""`rlfix kb draft`: turn an unrecognised failure into a signature skeleton a user can finish."""

from __future__ import annotations

import re

import yaml

from rlfix import safe
from rlfix.conclude.unrecognized import UNRECOGNIZED_ID
from rlfix.errors import UsageError
from rlfix.redact import redact_secrets
from rlfix.report import Diagnosis, Report
from rlfix.templates import pattern_for

#: Evidence is cut to this many characters where it is read (rlfix.core.EVIDENCE_CHARS).
_CUT_AT = 600
# A run of token characters at a cut edge: what is left of a secret the cut went through.
_EDGE_TAIL = re.compile(r"[A-Za-z0-9_+/=.-]{6,}(?=…?$)")
_EDGE_HEAD = re.compile(r"^…?[A-Za-z0-9_+/=.-]{6,}")


def _mask_cut(text: str, cut_end: bool, cut_start: bool = False) -> str:
    """`text` masked, and at an edge where it was cut, the token the cut went through masked too:
    half a secret is recognised by no rule (second audit, M5)."""
    text = redact_secrets(text)
    if cut_end:
        text = _EDGE_TAIL.sub("***", text, count=1)
    if cut_start:
        text = _EDGE_HEAD.sub("…***", text, count=1)
    return text


def _target(report: Report) -> Diagnosis:
    for diag in report.diagnoses:
        # A cause only a concept named has no exact pattern for its wording yet: draft one.
        if diag.id == UNRECOGNIZED_ID or diag.signature.fallback or diag.concept is not None:
            return diag
    if report.diagnoses:
        raise UsageError(f"the log is already diagnosed as {report.diagnoses[0].id}; nothing to draft")
    raise UsageError("no failure found in the log to draft a signature from")


def draft_signature(report: Report, sig_id: str = "my-new-failure") -> str:
    """YAML for a new signature, from the unrecognised failure or uncaught exception in `report`.

    `report` should come from an unredacted triage (as `rlfix kb draft` makes it): the pattern is
    built from the real line with its secrets made variable, and the example quoted is masked.
    """
    diag = _target(report)
    evidence = diag.evidence[0]
    message = evidence.message
    cut = len(message) >= _CUT_AT
    if cut:
        # The line was cut where it was read: its last token may be half a secret. It is not drafted.
        message = _EDGE_TAIL.sub("", message, count=1)
    exception = diag.details.exception
    # Masked first, then cut: a cut through a secret would leave a part no rule recognises.
    title = (exception.exception if exception is not None else None) or _mask_cut(message, cut)[:60]
    title = redact_secrets(title)
    entry = {
        "id": sig_id,
        "title": f"TODO: name this failure ({title})",
        "kind": "root",
        "severity": "fatal",
        # Investigate until someone decides: a draft must never make a failure look retryable.
        "action": "investigate",
        "owner": "unknown",
        "reason": "TODO: why this action (retry only what is transient; see docs/writing-signatures.md).",
        "summary": "TODO: what happened and why, in one to three sentences.",
        "patterns": [{"regex": pattern_for(message)}],
        "remediation": {
            "steps": ["TODO: the first thing to try."],
            "flags": [{"framework": "any", "env": "TODO_NAME=value", "purpose": "fix"}],
        },
        "references": ["TODO: link to the source file that prints this line, or the upstream issue"],
        "examples": {
            "match": [_mask_cut(evidence.text, evidence.text.endswith("…"), evidence.text.startswith("…"))],
            "no_match": [],
        },
    }
    header = (
        # A file name may hold a newline or a YAML line break: escaped, it cannot end the comment.
        f"# Drafted by `rlfix kb draft` from {safe.one_line(redact_secrets(evidence.source))}:{evidence.line}.\n"
        "# Fill in every TODO, run `rlfix kb lint --kb DIR`, then `rlfix diagnose --kb DIR LOG`.\n"
        "# docs/writing-signatures.md explains each field.\n"
    )
    return header + yaml.safe_dump({"signatures": [entry]}, sort_keys=False, allow_unicode=False, width=100)
