"""The benchmark's profiles: a smoke run of each, the diagnosis rlfix must reach, same bytes every run.

The real measurement is `python benchmarks/throughput.py` (1 GB per profile, 2 GB for many-files).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from logshapes import PROFILES  # noqa: E402
from runner import Result, candidate_share, diagnosis, parse_stats  # noqa: E402
from throughput import digest  # noqa: E402

SMALL = 3 * 1024 * 1024


def _sections(stdout: str) -> dict[str, list[str]]:
    """Each profile's table rows, by profile name."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in stdout.splitlines():
        if line.startswith("### "):
            current = sections.setdefault(line.split()[1], [])
        elif line.startswith("| ") and not line.startswith("| method"):
            current.append(line)
    return sections


@pytest.mark.slow
def test_every_profile_runs_and_is_diagnosed(tmp_path: Path) -> None:
    argv = [sys.executable, str(ROOT / "benchmarks" / "throughput.py"), "--size", "3MB", "--files", "50"]
    argv += ["--python-size", "1MB", "--long-line", "2MB", "--dir", str(tmp_path)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    sections = _sections(result.stdout)
    assert set(sections) == {*PROFILES, "extras"}
    del sections["extras"]
    for name, rows in sections.items():
        assert rows[0].startswith("| grep -E -c -f (LC_ALL=C) |"), rows
        rlfix_rows = [row for row in rows if row.startswith("| rlfix diagnose")]
        assert any("(python, --jobs 1) on a 1 MB copy" in row for row in rlfix_rows), rows
        assert any("(hyperscan, --jobs 1)" in row for row in rlfix_rows) or "hyperscan" not in result.stdout
        expected = PROFILES[name].failure
        for row in rlfix_rows:
            assert (f"{expected} found #" in row) if expected else ("| no failure |" in row), row
    assert "failure found: True" in result.stdout  # the one overlong line
    assert list(tmp_path.iterdir()) == []  # generated logs are removed


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_generation_is_deterministic(tmp_path: Path, name: str) -> None:
    profile = PROFILES[name]
    made = [
        profile.generate(tmp_path / f"{run}-{name}", SMALL, seed, 50) for run, seed in (("a", 0), ("b", 0), ("c", 1))
    ]
    first, again, other = (digest(path) for path in made)
    assert first == again
    assert first != other  # the seed, not a constant, drives the content
    if profile.directory:
        assert sum(p.is_file() for p in made[0].rglob("*")) == 50
    else:
        assert SMALL <= made[0].stat().st_size < SMALL * 1.1


def test_stats_line_gives_the_candidate_share() -> None:
    stderr = (
        "some warning\n"
        'rlfix: stats {"lines": 2000, "bytes": 90000, "candidates": 30, "inputs": 1, "engine": "hyperscan", '
        '"seconds": 0.2}\n'
    )
    stats = parse_stats(stderr)
    assert stats is not None and stats["candidates"] == 30
    result = Result("rlfix diagnose", 1.0, 1.0, 40.0, 1, "{}", stderr, 90000, stats)
    assert candidate_share(result) == "1.50% of 2,000"
    assert parse_stats("no stats here\n") is None


def test_diagnosis_names_a_missed_failure() -> None:
    report = '{"failed": true, "diagnoses": [{"id": "ray-unschedulable", "kind": "root"}]}'
    result = Result("rlfix diagnose", 1.0, 1.0, 40.0, 1, report, "", 1)
    assert diagnosis(result, "cuda-oom") == "top ray-unschedulable; cuda-oom MISSED"
    assert diagnosis(result, None) == "failure ['ray-unschedulable'] (expected none)"
