"""The blind waves (issue 10): labels made before scoring, first pass recorded once, final score held."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlfix.kb.load import KnowledgeBase
from rlfix.tools.evaluate import evaluate, load_cases

BLIND = Path(__file__).resolve().parent.parent / "fixtures" / "blind"
CASES = load_cases(BLIND)
WAVES = sorted({c.wave for c in CASES})


def test_every_blind_log_is_labelled_with_its_source() -> None:
    on_disk = {p.relative_to(BLIND).as_posix() for p in BLIND.glob("wave*/*.log")}
    assert on_disk == {c.file for c in CASES}
    raw = yaml.safe_load((BLIND / "labels.yaml").read_text())["cases"]
    for item in raw:
        # reported: pasted into a thread; committed: a log file in a public repository (wave 3).
        assert item["origin"] in ("reported", "committed") and item["source"].startswith("http"), item["file"]
        assert item["basis"] in ("thread", "expert") and item["why"], item["file"]


def test_the_set_is_what_the_issue_asks_for() -> None:
    assert len(CASES) >= 150
    assert sum(c.buried for c in CASES) >= 40
    assert sum(c.expect is None for c in CASES) >= 25
    assert WAVES == ["wave1", "wave2", "wave3"]


def test_each_wave_was_scored_once_before_it_was_fixed() -> None:
    record = yaml.safe_load((BLIND / "first_pass.yaml").read_text())["waves"]
    for wave in WAVES:
        got = record[wave]["got"]
        assert len(record[wave]["commit"]) == 40
        assert set(got) == {c.file for c in CASES if c.wave == wave}, f"{wave}: first pass does not cover the wave"


#: Top-1 each wave is held at after its fixes. Wave 3 (the newest stacks, full committed log files)
#: is held at the 92% its issue aimed for on the first pass: its remaining misses (a library class
#: refusing a keyword without a traceback, a decoy port error, two labels that call for judgement)
#: are listed in docs/accuracy.md.
FINAL_TOP1 = {"wave1": 0.95, "wave2": 0.95, "wave3": 0.92}


@pytest.mark.parametrize("wave", WAVES)
def test_final_score_of_each_wave(wave: str, builtin_kb: KnowledgeBase) -> None:
    result = evaluate(BLIND, builtin_kb).subset(lambda c: c.wave == wave)
    misses = [f"{o.case.file}: expected {o.case.expect}, got {list(o.got[:3])}" for o in result.outcomes if not o.top1]
    assert result.top1 >= FINAL_TOP1[wave], "\n".join(misses)
    # Never silent on a failed log: every one gets a finding, right or not.
    silent = [o.case.file for o in result.outcomes if o.case.expect is not None and not o.got]
    assert not silent, silent
    assert not result.false_alarms, [o.case.file for o in result.false_alarms]
