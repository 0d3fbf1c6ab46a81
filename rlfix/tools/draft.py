"""`rlfix kb draft`: turn an unrecognised failure into a signature skeleton a user can finish."""

from __future__ import annotations

import re

import yaml

from rlfix.errors import UsageError
from rlfix.observe.unknown import UNRECOGNIZED_ID
from rlfix.redact import RULES, redact_secrets
from rlfix.render import safe
from rlfix.report import Diagnosis, Report

# Masked spans become these regex fragments; everything else is escaped literally.
_VARIABLE = re.compile(
    r"(?P<ip>\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b)|(?P<path>(?:/[\w.\-@+]+){2,})|(?P<hex>\b0x[0-9a-fA-F]+\b)"
    r"|(?P<id>\b[0-9a-f]{12,}\b)|(?P<num>[-+]?\d+(?:\.\d+)?)"
)
_FRAGMENT = {"ip": r"[\d.:]+", "path": r"\S+", "hex": r"0x[0-9a-fA-F]+", "id": r"[0-9a-f]+", "num": r"[-+]?[\d.]+"}


def _secrets(message: str) -> list[tuple[int, int]]:
    """Where credentials sit in `message` (the part a redaction rule would replace), merged."""
    spans = []
    for rule in RULES:
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
        out.append(_FRAGMENT[m.lastgroup or "num"])
        pos = m.end()
    out.append(re.escape(text[pos:]))
    return "".join(out)


def pattern_for(message: str) -> str:
    """A linear regex matching `message` with its numbers, paths, ids and secrets left variable.

    Drafted from the unmasked line: a secret becomes `\\S+` (it matches the masked example too),
    never the escaped mask `\\*\\*\\*`, which would only match reports, not logs.
    """
    out, pos = [], 0
    for start, end in _secrets(message):
        out.append(_literal(message[pos:start]))
        out.append(r"\S+")
        pos = end
    out.append(_literal(message[pos:]))
    return "".join(out).replace("\\ ", " ")


def _target(report: Report) -> Diagnosis:
    for diag in report.diagnoses:
        if diag.id == UNRECOGNIZED_ID or diag.signature.fallback:
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
    title = redact_secrets(str(diag.details.get("exception") or message[:60]))
    entry = {
        "id": sig_id,
        "title": f"TODO: name this failure ({title})",
        "kind": "root",
        "severity": "fatal",
        "summary": "TODO: what happened and why, in one to three sentences.",
        "patterns": [{"regex": pattern_for(message)}],
        "remediation": {
            "steps": ["TODO: the first thing to try."],
            "flags": [{"framework": "any", "env": "TODO_NAME=value", "purpose": "fix"}],
        },
        "references": ["TODO: link to the source file that prints this line, or the upstream issue"],
        "examples": {"match": [redact_secrets(evidence.text)], "no_match": []},
    }
    header = (
        # A file name may hold a newline or a YAML line break: escaped, it cannot end the comment.
        f"# Drafted by `rlfix kb draft` from {safe.one_line(redact_secrets(evidence.source))}:{evidence.line}.\n"
        "# Fill in every TODO, run `rlfix kb lint --kb DIR`, then `rlfix diagnose --kb DIR LOG`.\n"
        "# docs/writing-signatures.md explains each field.\n"
    )
    return header + yaml.safe_dump({"signatures": [entry]}, sort_keys=False, allow_unicode=False, width=100)
