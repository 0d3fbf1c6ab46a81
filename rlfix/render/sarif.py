"""A report as SARIF 2.1.0, the format code-scanning tools and CI dashboards read. Formatting only.

One run of the tool `rlfix`; one rule per signature the report names (its title, summary, the
remedy as help text, the first reference as help URI); one result per finding: every diagnosis,
every symptom it explains (level `note`, pointing at its root) and every note. A result's location
is the log file and the line of the finding's first evidence; its other evidence lines are related
locations. Levels come from severity: fatal and error -> `error`, warning -> `warning`. Validated
in tests against the official schema (tests/data/sarif-schema-2.1.0.json).
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote

from rlfix import safe
from rlfix.model import Evidence, Severity, Signature
from rlfix.report import Diagnosis, Report
from rlfix.version import __version__

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/rlfix/rlfix"
_LEVEL = {Severity.FATAL: "error", Severity.ERROR: "error", Severity.WARNING: "warning"}
#: Other evidence lines of a finding given as related locations.
MAX_RELATED = 4


def render_sarif(report: Report, **_: Any) -> str:
    """The SARIF 2.1.0 log of `report` (JSON, one run)."""
    findings = list(_findings(report))
    rules: dict[str, int] = {}
    for d, _root in findings:
        rules.setdefault(d.id, len(rules))
    signatures = {d.id: d.signature for d, _root in findings}
    run = {
        "tool": {
            "driver": {
                "name": "rlfix",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_rule(signatures[sig_id]) for sig_id in rules],
            }
        },
        "results": [_result(d, root, rules[d.id]) for d, root in findings],
        "columnKind": "unicodeCodePoints",
    }
    log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _findings(report: Report) -> list[tuple[Diagnosis, Diagnosis | None]]:
    """(finding, the root that explains it) for every diagnosis, its folded symptoms, and the notes."""
    out: list[tuple[Diagnosis, Diagnosis | None]] = []
    for d in report.diagnoses:
        out.append((d, None))
        out.extend((f, d) for f in d.folded)
    out.extend((n, None) for n in report.notes)
    return out


def _rule(sig: Signature) -> dict[str, Any]:
    steps = [f"{i}. {step}" for i, step in enumerate(sig.remediation.steps, 1)]
    flags = [f"- {f.value} ({f.form.value}, {f.framework}{' ' + f.versions if f.versions else ''}; {f.purpose})"
             for f in sig.remediation.flags]  # fmt: skip
    decision = sig.decision
    what = f"Action: {decision.action.value} (owner: {decision.owner.value}): {decision.reason}"
    help_text = "\n".join([what, "", *steps, *(["", "Flags:", *flags] if flags else [])])
    rule: dict[str, Any] = {
        "id": sig.id,
        "name": "".join(part.capitalize() for part in sig.id.split("-")),
        "shortDescription": {"text": sig.title},
        "fullDescription": {"text": sig.summary},
        # Project or user KB text, never live Markdown (a user signature could hold a link or HTML).
        "help": {"text": help_text, "markdown": "  \n".join(safe.md_text(line) for line in help_text.split("\n"))},
        "defaultConfiguration": {"level": _LEVEL[sig.severity]},
        "properties": {
            "tags": [sig.kind.value, decision.action.value, decision.owner.value],
            "action": decision.action.value,
            "owner": decision.owner.value,
        },
    }
    if sig.references and sig.references[0].startswith(("https://", "http://")):
        rule["helpUri"] = sig.references[0]
    return rule


def _result(d: Diagnosis, root: Diagnosis | None, index: int) -> dict[str, Any]:
    first = d.first
    text = f"{d.title}: {first.text}"
    if root is not None:
        text += f" (explained by {root.id})"
    result: dict[str, Any] = {
        "ruleId": d.id,
        "ruleIndex": index,
        "kind": "fail",
        "level": "note" if root is not None else _LEVEL[d.severity],
        "message": {"text": text},
        "locations": [_location(first)],
        "properties": {
            "kind": d.kind.value,
            "confidence": round(d.confidence, 3),
            "count": d.count,
            "action": d.action.value,
            "owner": d.owner.value,
            "actionReason": d.decision.reason,
            "reasons": list(d.reasons),
        },
    }
    related = [_location(e, i) for i, e in enumerate(d.evidence[1 : MAX_RELATED + 1], 1)]
    if related:
        result["relatedLocations"] = related
    return result


def _location(e: Evidence, index: int | None = None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(e.source)}}
    if e.line > 0:  # evidence that is no line of a log (an exit status) has no region
        physical["region"] = {"startLine": e.line, "snippet": {"text": e.text}}
    location: dict[str, Any] = {"physicalLocation": physical}
    if index is not None:
        location["id"] = index
    if e.where:
        location["message"] = {"text": e.where}
    return location


def artifact_uri(source: str) -> str:
    """A log's name as a SARIF URI reference: a relative path as it is (percent-encoded), an
    absolute one as a `file://` URI; names that are no path (`<stdin>`) are encoded whole."""
    if PureWindowsPath(source).drive:
        return "file:///" + quote(PureWindowsPath(source).as_posix())
    path = PurePosixPath(source)
    if path.is_absolute():
        return "file://" + quote(str(path))
    return quote(source, safe="/")
