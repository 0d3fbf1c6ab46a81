"""The JSON Schema editors use for signature files agrees with the loader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rlfix.kb.parse import parse_signature_file
from tests.conftest import ROOT

jsonschema = pytest.importorskip("jsonschema")
KNOWLEDGE = ROOT / "knowledge"
SCHEMA = json.loads((KNOWLEDGE / "signature.schema.json").read_text())
FILES = sorted(p for p in KNOWLEDGE.glob("*.yaml") if p.name not in ("taxonomy.yaml", "pins.yaml"))


def test_schema_is_valid() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_shipped_files_validate(path: Path) -> None:
    jsonschema.validate(yaml.safe_load(path.read_text()), SCHEMA)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_shipped_files_point_editors_at_the_schema(path: Path) -> None:
    assert path.read_text().startswith("# yaml-language-server: $schema=signature.schema.json")


BAD = [
    {"signatures": [{"id": "Bad_Id"}]},
    {"signatures": [], "extra": 1},
]


@pytest.mark.parametrize("doc", BAD)
def test_schema_and_loader_both_reject(doc: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)
    _sigs, problems = parse_signature_file(yaml.safe_dump(doc), "x.yaml")
    assert problems


# One table of cases for the two descriptions of a signature file (the loader's checks and the
# JSON Schema editors use): each case says whether it is valid, and both must agree.
_VALID_SIG: dict[str, object] = {
    "id": "my-failure",
    "title": "My failure",
    "kind": "root",
    "severity": "fatal",
    "action": "fix-config",
    "owner": "config",
    "reason": "A setting decides it.",
    "summary": "What happened.",
    "patterns": [{"text": "flux capacitor overheated"}],
    "remediation": {"steps": ["Cool it."], "flags": [{"framework": "any", "env": "COOL=1", "purpose": "fix"}]},
    "references": ["https://example.org/issue/1"],
    "examples": {"match": ["flux capacitor overheated"], "no_match": []},
}


def _with(**changes: object) -> dict[str, object]:
    sig = dict(_VALID_SIG)
    for key, value in changes.items():
        if value is None:
            sig.pop(key, None)
        else:
            sig[key] = value
    return {"signatures": [sig]}


SCHEMA_CASES = [
    pytest.param(_with(), True, id="valid"),
    pytest.param(_with(confidence=0.5, explains=["nccl-timeout"], fallback=False), True, id="optional-fields"),
    pytest.param(_with(id="Bad_Id"), False, id="id-not-kebab"),
    pytest.param(_with(kind="cause"), False, id="kind-unknown"),
    pytest.param(_with(severity="meh"), False, id="severity-unknown"),
    pytest.param(_with(title=None), False, id="title-missing"),
    pytest.param(_with(patterns=[]), False, id="no-patterns"),
    pytest.param(_with(patterns=[{"text": "abcd", "regex": "abcd"}]), False, id="text-and-regex"),
    pytest.param(_with(patterns=[{"text": "abcd", "colour": "red"}]), False, id="pattern-unknown-field"),
    pytest.param(_with(confidence=1.5), False, id="confidence-out-of-range"),
    pytest.param(_with(fallback="yes"), False, id="fallback-not-bool"),
    pytest.param(_with(references=None), False, id="no-references"),
    pytest.param(_with(examples={"no_match": ["x"]}), False, id="no-match-examples"),
    pytest.param(_with(whatever=1), False, id="unknown-field"),
    pytest.param(_with(action=None), False, id="action-missing"),
    pytest.param(_with(owner=None), False, id="owner-missing"),
    pytest.param(_with(reason=None), False, id="reason-missing"),
    pytest.param(_with(action="reboot"), False, id="action-unknown"),
    pytest.param(_with(owner="nobody"), False, id="owner-unknown"),
    pytest.param(_with(reason="two\nlines"), False, id="reason-two-lines"),
    pytest.param(_with(action="cordon-node", owner="hardware"), True, id="action-cordon"),
    pytest.param(
        _with(remediation={"steps": ["x"], "flags": [{"framework": "nope", "env": "A=1"}]}), False, id="flag-framework"
    ),
    pytest.param(
        _with(remediation={"steps": ["x"], "flags": [{"framework": "any", "env": "A=1", "arg": "--a"}]}),
        False,
        id="flag-two-forms",
    ),
    pytest.param(
        _with(remediation={"steps": ["x"], "flags": [{"framework": "any", "env": "A=1", "purpose": "pray"}]}),
        False,
        id="flag-purpose",
    ),
    pytest.param({"signatures": [], "extra": 1}, False, id="top-level-extra"),
    pytest.param(_with(zh={"title": "标题", "summary": "概述"}), True, id="zh-title-summary"),
    pytest.param(
        _with(zh={"title": "标题", "summary": "概述", "steps": ["第一步"], "flags": {0: {"cost": "无"}}}),
        True,
        id="zh-full",
    ),
    pytest.param(_with(zh={"title": "标题", "summary": "概述", "reason": "一个设置"}), True, id="zh-reason"),
    pytest.param(_with(zh={"title": "标题"}), False, id="zh-summary-missing"),
    pytest.param(_with(zh={"title": "标题", "summary": "概述", "why": "x"}), False, id="zh-unknown-field"),
    pytest.param(_with(zh="标题"), False, id="zh-not-a-mapping"),
    pytest.param(
        _with(zh={"title": "标题", "summary": "概述", "flags": {"first": {"cost": "无"}}}), False, id="zh-flag-key"
    ),
    pytest.param(
        _with(zh={"title": "标题", "summary": "概述", "flags": {0: {"price": "无"}}}), False, id="zh-flag-field"
    ),
    pytest.param(_with(zh={"title": "标题", "summary": "概述", "flags": {0: {}}}), False, id="zh-flag-empty"),
]


@pytest.mark.parametrize(("doc", "valid"), SCHEMA_CASES)
def test_schema_and_loader_agree(doc: dict[str, object], valid: bool) -> None:
    schema_ok = jsonschema.Draft202012Validator(SCHEMA).is_valid(doc)
    _sigs, problems = parse_signature_file(yaml.safe_dump(doc), "case.yaml")
    assert schema_ok is valid, "the JSON Schema disagrees with the case"
    assert (not problems) is valid, f"the loader disagrees with the case: {problems}"
