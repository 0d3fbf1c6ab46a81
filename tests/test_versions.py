"""kb/versions.py: version ranges as a table of cases."""

from __future__ import annotations

import pytest

from rlfix.kb.versions import parse_version, valid_range, version_in


@pytest.mark.parametrize(
    ("version", "spec", "inside"),
    [
        ("0.10.2", ">=0.10.2", True),
        ("0.10.1", ">=0.10.2", False),
        ("0.10.2.post1", "<0.10.2", False),
        ("0.9.9", "<0.10.2,>=0.8", True),
        ("0.7.9", "<0.10.2,>=0.8", False),
        ("0.7.2", "==0.7.*", True),
        ("0.8.0", "==0.7.*", False),
        ("0.7.2", "!=0.7.*", False),
        ("1.4.3", "~=1.4.2", True),
        ("1.5.0", "~=1.4.2", False),
        ("v2.1", ">2", True),
        ("2", "==2.0.0", True),
        ("0.6.3", None, True),
        ("dev", ">=0.1", False),
        ("0.6.3", "nonsense", False),
    ],
)
def test_version_in(version: str, spec: str | None, inside: bool) -> None:
    assert version_in(version, spec) is inside


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("0.10.2.post1", (0, 10, 2)), ("v1.2", (1, 2)), ("2.5.1+cu121", (2, 5, 1)), ("main", ())],
)
def test_parse_version(text: str, parsed: tuple[int, ...]) -> None:
    assert parse_version(text) == parsed


@pytest.mark.parametrize(
    ("spec", "valid"),
    [(">=0.10.2", True), ("<0.10.2,>=0.8", True), ("==0.7.*", True), ("~=1.4", True), ("latest", False), (">=", False)],
)
def test_valid_range_is_the_grammar_version_in_reads(spec: str, valid: bool) -> None:
    assert valid_range(spec) is valid
