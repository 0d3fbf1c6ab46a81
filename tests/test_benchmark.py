"""Smoke run of the throughput benchmark (the real measurement is `benchmarks/throughput.py --size 1GB`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_benchmark_smoke(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "throughput.py"),
            "--size",
            "2MB",
            "--long-line",
            "3MB",
            "--dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "| grep -E -c -f (LC_ALL=C) |" in result.stdout
    assert "| rlfix diagnose (python) |" in result.stdout
    assert "failure found: True" in result.stdout
    assert list(tmp_path.iterdir()) == []  # generated logs are removed
