"""The labelled fixture logs: provenance, expected first diagnosis, and coverage of the taxonomy."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

import rlfix
from rlfix.kb.load import KnowledgeBase
from rlfix.tools.evaluate import Case, load_cases
from tests.conftest import FIXTURES, ROOT

CASES = load_cases(FIXTURES)
FAILURES = [c for c in CASES if c.expect is not None]
HEALTHY = [c for c in CASES if c.expect is None]


def test_every_log_is_labelled_and_every_label_has_a_log() -> None:
    on_disk = {p.name for p in FIXTURES.glob("*.log")}
    labelled = [c.file for c in CASES]
    assert len(labelled) == len(set(labelled)), "a log is labelled twice"
    assert on_disk == set(labelled)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.file)
def test_provenance(case: Case) -> None:
    assert case.origin in ("generated", "composed", "reported"), case
    assert case.source.strip()
    if case.origin == "composed":
        sidecar = FIXTURES / case.file.replace(".log", ".sources.md")
        assert sidecar.exists(), f"{case.file}: composed logs cite their sources in {sidecar.name}"
        assert "github.com" in sidecar.read_text() or "/blob/" in sidecar.read_text() or ".py" in sidecar.read_text()
    elif case.origin == "reported":
        assert "https://github.com/" in case.source, f"{case.file}: a reported log links the issue it came from"
    else:
        scripts = [w for w in case.source.replace("`", " ").split() if w.startswith("fixtures/generate/")]
        assert scripts, f"{case.file}: a generated log names the script that regenerates it"
        assert (ROOT / scripts[0].split("::")[0].rstrip(",;:)")).exists(), scripts[0]


@pytest.mark.parametrize("case", FAILURES, ids=lambda c: c.file)
def test_failure_is_diagnosed_first(case: Case, builtin_kb: KnowledgeBase) -> None:
    report = rlfix.diagnose(FIXTURES / case.file, kb=builtin_kb)
    assert report.ids, f"{case.file}: nothing diagnosed"
    assert report.ids[0] in (case.expect, *case.also), f"{case.file}: expected {case.expect}, got {report.ids[:3]}"
    top = report.top
    assert top is not None and top.first.line > 0 and top.first.text


@pytest.mark.parametrize("case", HEALTHY, ids=lambda c: c.file)
def test_healthy_log_raises_no_alarm(case: Case, builtin_kb: KnowledgeBase) -> None:
    report = rlfix.diagnose(FIXTURES / case.file, kb=builtin_kb)
    assert report.ids == [], f"{case.file}: false alarm {report.ids}"
    assert report.exit_code == 0


def test_every_taxonomy_id_has_real_fixtures(builtin_kb: KnowledgeBase) -> None:
    counts = Counter(c.expect for c in FAILURES)
    missing = {t.id: counts.get(t.id, 0) for t in builtin_kb.taxonomy if counts.get(t.id, 0) < 2}
    assert not missing, f"taxonomy ids with fewer than two fixture logs: {missing}"


def test_at_least_five_healthy_logs() -> None:
    assert len(HEALTHY) >= 5


def test_taxonomy_is_the_shared_contract() -> None:
    shared = ROOT.parent / "shared" / "taxonomy.yaml"
    if not shared.exists():
        pytest.skip("the shared taxonomy is not beside this checkout")
    # The project's taxonomy is the published contract: every shared id, with the same kind, plus its own.
    ours = {e["id"]: e["kind"] for e in yaml.safe_load((ROOT / "knowledge" / "taxonomy.yaml").read_text())["ids"]}
    theirs = {e["id"]: e["kind"] for e in yaml.safe_load(Path(shared).read_text())["ids"]}
    assert {k: ours.get(k) for k in theirs} == theirs
