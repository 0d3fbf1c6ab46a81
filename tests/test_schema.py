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
FILES = sorted(p for p in KNOWLEDGE.glob("*.yaml") if p.name != "taxonomy.yaml")


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
