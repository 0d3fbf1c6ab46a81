"""`rlfix kb draft`: turn an unrecognised failure into a signature skeleton a user can finish."""

from __future__ import annotations

import yaml

from rlfix import safe
from rlfix.conclude.unrecognized import UNRECOGNIZED_ID
from rlfix.errors import UsageError
from rlfix.redact import redact_secrets
from rlfix.report import Diagnosis, Report
from rlfix.templates import pattern_for


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
    exception = diag.details.exception
    title = redact_secrets((exception.exception if exception is not None else None) or message[:60])
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
