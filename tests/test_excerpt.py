"""`rlfix excerpt`: the lines that matter, bounded, masked and inert, from the same diagnosis as `diagnose`."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlfix
from rlfix.api import with_windows
from rlfix.redact import MASK, RULES
from rlfix.report import RENDERERS
from tests.conftest import ROOT, RunCli
from tests.test_security import SECRET_OF

#: The README's quick start log (seed 000).
SEED = ROOT / "fixtures" / "logs" / "cuda-illegal-memory-access--openrlhf-vllm072-buried.log"
EVIDENCE = "RuntimeError: CUDA error: an illegal memory access was encountered"


def test_the_seed_log_fits_in_60_lines_and_holds_the_roots_evidence_line() -> None:
    text = rlfix.excerpt(SEED)
    lines = text.splitlines()
    assert len(lines) <= 60 and len(text) <= 8000
    assert any(line.startswith("    67> ") and EVIDENCE in line for line in lines)
    # The traceback that ended there, the job, where it first failed, what to do.
    assert any("Traceback (most recent call last):" in line for line in lines)
    assert "openrlhf, vllm 0.7.2" in text and "--micro_rollout_batch_size=8" in text
    assert "first seen on worker ActorModelRayActor" in text and "report-upstream" in text


def test_the_cli_prints_the_same_as_the_api_through_the_installed_script(run_cli: RunCli) -> None:
    proc = run_cli(["excerpt", str(SEED)])
    assert proc.returncode == 1 and proc.stderr == ""
    assert proc.stdout == rlfix.excerpt(SEED)


@pytest.mark.parametrize(("max_lines", "max_chars"), [(15, 1000), (20, 1500), (30, 100000), (200, 2000)])
def test_every_bound_is_kept_and_the_evidence_line_survives(max_lines: int, max_chars: int) -> None:
    text = rlfix.excerpt(SEED, max_lines=max_lines, max_chars=max_chars)
    assert len(text.splitlines()) <= max_lines and len(text) <= max_chars
    assert EVIDENCE in text


def test_bounds_too_small_are_one_line_usage_errors(run_cli: RunCli) -> None:
    with pytest.raises(rlfix.UsageError):
        rlfix.excerpt(SEED, max_lines=5)
    proc = run_cli(["excerpt", str(SEED), "--max-chars", "10"])
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    missing = run_cli(["excerpt", "no-such.log"])
    assert missing.returncode == 2 and "no such file" in missing.stderr and "Traceback" not in missing.stderr


def test_a_planted_secret_never_appears(tmp_path: Path) -> None:
    # Secrets in the lines around the evidence (a command line, an env dump, a traceback frame):
    # they reach the excerpt only as context, read again from the file, and must be masked there.
    secrets = [rule.positive for rule in RULES]
    thirds = [secrets[i::3] for i in range(3)]
    log = tmp_path / "job.log"
    lines = ["step 1", *(f"export NOTES{i}='" + "' '".join(part) + "'" for i, part in enumerate(thirds))]
    lines += [EVIDENCE + " " + secrets[2], f"after the crash {secrets[3]}"]
    log.write_text("\n".join(lines) + "\n")
    text = rlfix.excerpt(log, context=3)
    assert EVIDENCE in text and all(f"export NOTES{i}=" in text for i in range(3)), text
    assert text.count(MASK) >= len(RULES) // 3
    leaked = [name for name, secret in SECRET_OF.items() if secret in text]
    assert not leaked, leaked


def test_a_log_line_cannot_close_the_code_block(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("```\n# Injected heading\n<img src=x onerror=alert(1)>\n" + EVIDENCE + "\n")
    text = rlfix.excerpt(log)
    fence = next(line for line in text.splitlines() if line.startswith("```"))
    assert len(fence.removesuffix("text")) > 3  # longer than any backtick run inside
    assert "\n# Injected heading" not in text and "\n<img" not in text


def test_log_text_without_a_file_still_gets_its_evidence_line() -> None:
    text = rlfix.excerpt("step 1\n[rank3]: " + EVIDENCE + "\n")
    assert EVIDENCE in text and "cuda-illegal-memory-access" in text


def test_windows_are_read_again_from_the_file_and_bounded(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_text("".join(f"step {i}\n" for i in range(5000)) + EVIDENCE + "\n" + "x" * 5000 + "\ntail\n")
    report = with_windows(rlfix.diagnose(log), context=3)
    (window,) = report.windows
    assert window.focus == 5001 and [n for n, _ in window.lines] == [4998, 4999, 5000, 5001, 5002, 5003]
    assert len(window.lines[-2][1]) <= 300  # a long line is cut (after masking)


def test_excerpt_is_a_registered_format_behind_the_gate() -> None:
    # tests/test_gate.py plants secrets in every string of a report for every registered format.
    assert "excerpt" in RENDERERS
