"""Coverage of the error wordings mined from the frameworks' sources (fixtures/wordings)."""

from __future__ import annotations

import pytest

from rlfix.kb.load import KnowledgeBase
from rlfix.model import Severity
from rlfix.tools.coverage import Coverage, coverage, load_entries
from tests.conftest import ROOT

WORDINGS = ROOT / "fixtures" / "wordings"


@pytest.fixture(scope="module")
def measured(builtin_kb: KnowledgeBase) -> Coverage:
    return coverage(WORDINGS, builtin_kb)


def test_every_expect_is_a_taxonomy_id(builtin_kb: KnowledgeBase) -> None:
    """An expect is a public id, a warning signature (warnings are notes, never taxonomy roots), or
    `unrecognized-failure` for a line that names no failure by itself."""
    taxonomy = {entry.id for entry in builtin_kb.taxonomy}
    for entry in load_entries(WORDINGS):
        sig = builtin_kb.get(entry.expect)
        is_warning = sig is not None and sig.severity is Severity.WARNING
        assert entry.expect in taxonomy or is_warning or entry.expect == "unrecognized-failure", (
            f"{entry.framework}: {entry.expect} is not in the taxonomy"
        )


def test_entries_cite_their_source() -> None:
    entries = load_entries(WORDINGS)
    assert len(entries) >= 300
    assert all(e.source.strip() for e in entries)


def test_overall_coverage(measured: Coverage) -> None:
    assert measured.share >= 0.90, measured.to_markdown()


def test_every_framework_coverage(measured: Coverage) -> None:
    for name, (n, right) in measured.per_framework().items():
        assert right / n >= 0.80, f"{name}: {right}/{n}\n" + measured.to_markdown()


def test_markdown_lists_frameworks_and_misses(measured: Coverage) -> None:
    text = measured.to_markdown()
    assert "| framework | entries | right | share |" in text
    for name in measured.per_framework():
        assert f"| {name} |" in text
