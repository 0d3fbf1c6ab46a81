"""Running one measured command in a fresh child, and reading what rlfix reports about its run."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATS_PREFIX = "rlfix: stats "

# The probe runs the command as its own child so that RUSAGE_CHILDREN is that command's alone (with
# worker processes, ru_maxrss is the largest single process, not their sum).
PROBE = """
import json, resource, subprocess, sys, time
argv = json.loads(sys.argv[1])
t = time.perf_counter()
r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
wall = time.perf_counter() - t
u = resource.getrusage(resource.RUSAGE_CHILDREN)
out = r.stdout.decode("utf-8", "replace")
print(json.dumps([wall, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024, r.returncode, out[:2000000],
                  r.stderr.decode("utf-8", "replace")[-20000:]]))
"""


@dataclass
class Result:
    name: str
    wall: float
    cpu: float
    rss_mb: float
    returncode: int
    stdout: str
    stderr: str
    size: int = 0  # bytes of the input this run read
    stats: dict[str, Any] | None = field(default=None)


def measure(name: str, argv: list[str], size: int, env: dict[str, str] | None = None) -> Result:
    """Run `argv` once through the probe and collect its time, peak RSS, output and stats line."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True, env=env, check=True
    )
    wall, cpu, rss, rc, out, err = json.loads(done.stdout)
    return Result(name, wall, cpu, rss, rc, out, err, size, parse_stats(err))


def parse_stats(stderr: str) -> dict[str, Any] | None:
    """The `rlfix: stats {json}` line(s) of `rlfix diagnose --stats`; several are summed."""
    found = [json.loads(line[len(STATS_PREFIX) :]) for line in stderr.splitlines() if line.startswith(STATS_PREFIX)]
    if not found:
        return None
    total = dict(found[-1])
    for key in ("lines", "bytes", "candidates", "inputs"):
        if all(isinstance(s.get(key), int) for s in found):
            total[key] = sum(s[key] for s in found)
    return total


def candidate_share(result: Result) -> str:
    stats = result.stats
    if not stats or not stats.get("lines"):
        return "-"
    return f"{100 * stats['candidates'] / stats['lines']:.2f}% of {stats['lines']:,}"


def diagnosis(result: Result, expected: str | None) -> str:
    """What rlfix concluded: its top finding, and whether the profile's own failure is among them."""
    try:
        report = json.loads(result.stdout)
    except ValueError:
        return f"no JSON (exit {result.returncode})"
    ids = [d["id"] for d in report.get("diagnoses", []) if d.get("kind") == "root"]
    if not report.get("failed"):
        return "no failure" if expected is None else f"no failure; {expected} MISSED"
    if expected is None:
        return f"failure {ids[:1]} (expected none)"
    where = f"found #{ids.index(expected) + 1}" if expected in ids else "MISSED"
    return f"top {ids[0] if ids else '-'}; {expected} {where}"


def input_size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size
