"""Every signature's inline examples are tests: `match` lines must match, `no_match` must not."""

from __future__ import annotations

import pytest

from rlfix.kb.load import load_knowledge
from rlfix.match.engines import available_engines
from rlfix.match.matcher import Matcher

KB = load_knowledge()
ENGINES = ["python", "hyperscan"] if "hyperscan" in available_engines() else ["python"]
MATCHERS = {engine: Matcher.for_knowledge(KB, engine=engine) for engine in ENGINES}

CASES = [
    pytest.param(sig.id, line, True, id=f"{sig.id}-match-{i}")
    for sig in KB
    for i, line in enumerate(sig.examples.match)
] + [
    pytest.param(sig.id, line, False, id=f"{sig.id}-no_match-{i}")
    for sig in KB
    for i, line in enumerate(sig.examples.no_match)
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("sig_id", "line", "should_match"), CASES)
def test_example(engine: str, sig_id: str, line: str, should_match: bool) -> None:
    owners = MATCHERS[engine].owners_matching(line)
    assert (sig_id in owners) is should_match, f"{sig_id} {'missed' if should_match else 'matched'}: {line!r}"
