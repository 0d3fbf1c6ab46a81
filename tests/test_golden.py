"""Every fixture's JSON report is pinned: a refactor that changes any byte of it fails here.

When a change is meant to alter diagnoses, run `python scripts/update_golden.py` and review the diff.
"""

from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("update_golden", ROOT / "scripts" / "update_golden.py")
assert _spec is not None and _spec.loader is not None
update_golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(update_golden)

LOGS = sorted((ROOT / "fixtures" / "logs").glob("*.log"))


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_report_json_is_unchanged(log: Path) -> None:
    golden = ROOT / "tests" / "golden" / (log.name + ".json")
    assert golden.exists(), f"no golden for {log.name}: run python scripts/update_golden.py"
    want = golden.read_text(encoding="utf-8")
    got = update_golden.golden_json(log)
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden", "now", n=2))
        pytest.fail(f"{log.name}: the report changed (scripts/update_golden.py rewrites it if meant):\n{diff[:4000]}")


def test_no_golden_without_a_fixture() -> None:
    names = {p.name + ".json" for p in LOGS}
    stale = [g.name for g in (ROOT / "tests" / "golden").glob("*.json") if g.name not in names]
    assert not stale
