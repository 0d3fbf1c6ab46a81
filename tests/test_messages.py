"""The error-message catalogue (fixtures/messages): the stack's vocabulary, scored in-process.

The catalogue is generated at development time by scripts/catalogue from the projects' sources;
these tests only read it. They hold coverage of the messages with a specific id at its published
level, require that every project's leave-one-project-out first pass was recorded before its
patterns, and that no message is met with silence.
"""

from __future__ import annotations

import pytest

from rlfix.kb.load import KnowledgeBase
from rlfix.tools.messages import CatalogueScore, first_pass_record, load_messages, score
from tests.conftest import ROOT

CATALOGUE = ROOT / "fixtures" / "messages"

#: The final coverage the issue asks for on messages with a specific id.
COVERAGE_FLOOR = 0.97


@pytest.fixture(scope="module")
def measured(builtin_kb: KnowledgeBase) -> CatalogueScore:
    return CatalogueScore(score(load_messages(CATALOGUE), builtin_kb))


def test_the_catalogue_is_the_whole_stack() -> None:
    messages = load_messages(CATALOGUE)
    assert len(messages) >= 3000
    assert len({m.project for m in messages}) >= 15


def test_every_project_was_scored_before_it_was_learnt_from() -> None:
    first = first_pass_record(CATALOGUE)
    projects = {m.project for m in load_messages(CATALOGUE)}
    assert projects <= set(first), f"no first pass recorded for {sorted(projects - set(first))}"
    for project, record in first.items():
        assert len(str(record["commit"])) == 40 and record["specific"] >= record["specific_right"], project


def test_coverage_of_the_specific_messages(measured: CatalogueScore) -> None:
    missed = "\n".join(
        f"{r.message.expect}: got {r.alone}/{r.in_traceback}: {r.message.line[:140]}" for r in measured.misses
    )
    assert measured.coverage >= COVERAGE_FLOOR, missed


def test_no_message_is_met_with_silence(measured: CatalogueScore) -> None:
    silent = [r.message.line for r in measured.results if r.alone is None]
    assert not silent, "\n".join(silent[:20])
