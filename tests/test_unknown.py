"""Unknown failures, drafts of new signatures, and discounting what a healthy run also shows."""

from __future__ import annotations

from pathlib import Path

import yaml

import rlfix
from rlfix.core import Triage
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.templates import pattern_for
from rlfix.tools.draft import draft_signature
from tests.conftest import RunCli

UNKNOWN = "step 1\nERROR worker 3: flux capacitor overheated at 88 mph\nexited with code 3\n"
TRACE = (
    'Traceback (most recent call last):\n  File "/app/r.py", line 7, in reward\nZeroDivisionError: division by zero\n'
)


def test_pattern_for_keeps_numbers_variable() -> None:
    import regex

    pattern = pattern_for("ERROR worker 3: flux capacitor overheated at 88 mph")
    assert regex.search(pattern, "ERROR worker 12: flux capacitor overheated at 1.5 mph")
    assert not regex.search(pattern, "ERROR worker 12: warp core overheated")


def test_draft_is_a_valid_signature_that_matches_its_log(tmp_path: Path, mini_kb: KnowledgeBase) -> None:
    report = rlfix.diagnose(UNKNOWN, kb=mini_kb)
    text = draft_signature(report, "flux-capacitor")
    data = yaml.safe_load(text)
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    # A user fills in the TODOs; the pattern and example are usable as drafted.
    data["signatures"][0]["references"] = ["https://example.org/flux"]
    (kb_dir / "new.yaml").write_text(yaml.safe_dump(data))
    kb = load_knowledge([kb_dir], builtin=False)
    assert rlfix.diagnose(UNKNOWN, kb=kb).ids == ["flux-capacitor"]


def test_kb_draft_cli(run_cli: RunCli) -> None:
    proc = run_cli(["kb", "draft", "--id", "zero-reward"], stdin=TRACE + "exited with code 1\n")
    assert proc.returncode == 0, proc.stderr
    assert "id: zero-reward" in proc.stdout and "ZeroDivisionError" in proc.stdout


def test_baseline_discounts_what_the_healthy_run_also_shows(mini_kb: KnowledgeBase) -> None:
    noisy = "[rank1]: RuntimeError: CUDA error: device-side assert triggered\n"
    healthy = rlfix.diagnose("startup\n" + noisy + "step 10 ok\n", kb=mini_kb)
    triage = Triage(mini_kb, baseline=healthy)
    triage.feed_text(noisy + "RuntimeError: an illegal memory access was encountered\n")
    report = triage.report()
    assert report.ids == ["t-illegal-access"]
    assert report.insights.discounted_by_baseline == ("t-generic-assert",)


def test_similar_signatures_are_suggested(builtin_kb: KnowledgeBase) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/app/x.py", line 1, in f\n'
        "RuntimeError: CUDA error: an illegal memory access happened somewhere weird\n"
    )
    top = rlfix.diagnose(log, kb=builtin_kb).top
    assert top is not None
    if top.id == "python-exception":
        assert top.details.similar, top.details


def test_a_short_line_is_similar_to_nothing(builtin_kb: KnowledgeBase) -> None:
    # Token-set similarity alone scores "exit 1" 100 against any example containing both words
    # (issue 22: a bare exit-1 job was told it looked like gpu-hardware-fault).
    from rlfix.conclude.unrecognized import similar_signatures

    assert similar_signatures(builtin_kb, "exit 1") == ()
    assert similar_signatures(builtin_kb, "SystemExit: 1") == ()
    near = similar_signatures(builtin_kb, "RuntimeError: CUDA error: an illegal memory access was encountered in x")
    assert near and near[0].id == "cuda-illegal-memory-access"
