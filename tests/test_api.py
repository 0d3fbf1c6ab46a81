from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

import rlfix
from rlfix.errors import InputError
from rlfix.kb.load import KnowledgeBase

LOG = "step 1\n[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\nstep 2\n"


def _ids(report: rlfix.Report) -> list[str]:
    return report.ids


def test_diagnose_accepts_every_kind_of_source(tmp_path: Path, mini_kb: KnowledgeBase) -> None:
    path = tmp_path / "job.log"
    path.write_text(LOG)
    gz = tmp_path / "job.log.gz"
    gz.write_bytes(gzip.compress(LOG.encode()))
    sources: list[object] = [
        str(path),
        path,
        [path, gz],
        LOG,
        LOG.encode(),
        io.BytesIO(LOG.encode()),
        io.StringIO(LOG),
        iter(LOG.splitlines()),
        tmp_path,
    ]
    for source in sources:
        report = rlfix.diagnose(source, kb=mini_kb)  # type: ignore[arg-type]
        assert _ids(report) == ["t-illegal-access"], source
        assert report.top is not None and report.top.first.rank == 2


def test_line_numbers_are_per_source(tmp_path: Path, mini_kb: KnowledgeBase) -> None:
    (tmp_path / "a.log").write_text("x\n" * 10)
    (tmp_path / "b.log").write_text(LOG)
    top = rlfix.diagnose(tmp_path, kb=mini_kb).top
    assert top is not None and (Path(top.first.source).name, top.first.line) == ("b.log", 2)


def test_missing_path_raises_in_strict_mode_and_is_recorded_otherwise(tmp_path: Path, mini_kb: KnowledgeBase) -> None:
    with pytest.raises(InputError, match="no such file"):
        rlfix.diagnose(tmp_path / "nope.log", kb=mini_kb)
    good = tmp_path / "job.log"
    good.write_text(LOG)
    report = rlfix.diagnose([tmp_path / "nope.log", good], kb=mini_kb, strict=False)
    assert report.ids == ["t-illegal-access"]
    assert report.errors and "nope.log" in report.errors[0]
    assert report.exit_code == 2


def test_a_word_that_is_not_a_path_is_an_error(mini_kb: KnowledgeBase) -> None:
    with pytest.raises(InputError):
        rlfix.diagnose("missing.log", kb=mini_kb)


def test_triage_streams_and_alerts_once_per_signature(mini_kb: KnowledgeBase) -> None:
    alerts: list[str] = []
    triage = rlfix.Triage(mini_kb, on_new=lambda ev, sig_id: alerts.append(f"{sig_id}@{ev.line}"))
    for line in LOG.splitlines() * 3:
        triage.feed(line)
    assert alerts == ["t-illegal-access@2"]
    assert triage.report().top is not None
    assert triage.report().lines == 9


def test_report_renders_in_a_notebook(mini_kb: KnowledgeBase) -> None:
    report = rlfix.diagnose(LOG, kb=mini_kb)
    assert "t-illegal-access" in report._repr_html_()
    assert "t-illegal-access" in report._repr_markdown_()
    assert "t-illegal-access" in str(report)


def test_healthy_log_has_no_findings(mini_kb: KnowledgeBase) -> None:
    report = rlfix.diagnose("all good\nstep 2 loss 0.1\n", kb=mini_kb)
    assert report.diagnoses == () and report.top is None and report.exit_code == 0


def test_exit_status_is_evidence_in_the_api() -> None:
    report = rlfix.diagnose("step 3 loss 0.2\n", exit_status=-9)
    assert report.failed and report.top is not None and report.top.id == "host-oom-sigkill"
    assert report.top.confidence <= 0.5 and report.top.first.source == "<exit status>"
    assert report.insights.exit is not None and report.insights.exit.signal == "SIGKILL"
    assert rlfix.diagnose("step 3 loss 0.2\n", exit_status="SIGABRT").ids == ["native-crash"]
    assert rlfix.diagnose("step 3 loss 0.2\n", exit_status=143).ids == ["job-cancelled-by-scheduler"]
    plain = rlfix.diagnose("step 3 loss 0.2\n", exit_status=2)
    assert plain.failed and plain.ids == [] and plain.exit_code == 1
    assert not rlfix.diagnose("step 3 loss 0.2\n", exit_status=0).failed
    with pytest.raises(rlfix.UsageError):
        rlfix.diagnose("x y\n", exit_status="SIGNOPE")


def test_repr_is_short_and_html_stays_rich() -> None:
    report = rlfix.diagnose("RuntimeError: CUDA error: an illegal memory access was encountered\nKilled\n")
    lines = repr(report).splitlines()
    assert len(lines) == 1 + len(report.diagnoses)
    assert lines[0].startswith("<rlfix.Report failed=True 2 findings")
    assert lines[1].startswith("  1. cuda-illegal-memory-access (root, fatal, confidence")
    assert "<svg" in report._repr_html_() and len(report._repr_html_()) > 10 * len(repr(report))


def test_a_job_known_to_have_succeeded_is_never_failed() -> None:
    """Exit status 0 is evidence: what looked fatal, and an error line the log ended with, become notes."""
    log = "RuntimeError: CUDA error: an illegal memory access was encountered\nERROR: retries exhausted\n"
    assert rlfix.diagnose(log).failed
    report = rlfix.diagnose(log, exit_status=0)
    assert not report.failed and report.exit_code == 0 and not report.diagnoses
    assert report.notes and all("succeeded" in n.reasons[0] for n in report.notes if n.severity.value != "warning")
    # Known to have failed, with error lines but none recognised at the end: never healthy.
    failed = rlfix.diagnose("ERROR: could not reach the reward server\nstep 3 loss 0.2\n", exit_status=1)
    assert failed.failed and failed.top is not None and failed.top.id == "unrecognized-failure"
