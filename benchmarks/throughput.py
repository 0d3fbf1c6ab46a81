"""Throughput and memory of `rlfix diagnose` against `grep -E` on the same patterns, per log profile.

    python benchmarks/throughput.py                              # every profile at its full size
    python benchmarks/throughput.py --profile chatty --size 200MB
    python benchmarks/throughput.py --size 4MB --files 50 --long-line 0   # a smoke run
    python benchmarks/throughput.py --generate-only /tmp/logs    # write the logs, print their hashes

Profiles (benchmarks/logshapes, described in benchmarks/README.md): quiet (a synthetic RL log),
chatty (a verl + vLLM + Ray driver log), many-files (a Ray session log directory) and healthy
(chatty without a failure). Each is generated deterministically from real line shapes, then
measured in one run: `LC_ALL=C grep -E -c -f` over the patterns of `rlfix kb export-patterns`,
`rlfix diagnose` with each available engine (and with `--jobs 2` where rlfix has it), and a bare
Python line loop. Prints wall time, MB/s, the time ratio to grep, the peak RSS of each child, the
share of lines that became candidates (from `rlfix diagnose --stats`) and what rlfix concluded.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from logshapes import PROFILES, Profile, parse_size
from runner import Result, candidate_share, diagnosis, input_size, measure

RLFIX = [sys.executable, "-m", "rlfix"]
LOOP = (
    "import os, sys\nn = 0\nroot = sys.argv[1]\n"
    "paths = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs] if os.path.isdir(root) else [root]\n"
    "for p in paths:\n    with open(p, 'rb') as fh:\n        for line in fh:\n            n += 1\nprint(n)"
)


@dataclass
class Tools:
    """What this machine and this rlfix offer: grep, the engines, `--stats` and `--jobs`."""

    grep: str | None
    engines: list[str]
    stats: bool
    jobs: bool

    @classmethod
    def detect(cls) -> Tools:
        engines = subprocess.run(
            [sys.executable, "-c", "from rlfix.match.engines import available_engines as a; print(' '.join(a()))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        usage = subprocess.run([*RLFIX, "diagnose", "--help"], capture_output=True, text=True, check=True).stdout
        return cls(shutil.which("grep"), engines, "--stats" in usage, "--jobs" in usage)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--profile", choices=[*PROFILES, "all"], default="all")
    parser.add_argument("--size", help="log size, e.g. 200MB (default: 1GB, 2GB for many-files)")
    parser.add_argument("--files", type=int, help="files of many-files (default 5000)")
    parser.add_argument(
        "--python-size",
        default="200MB",
        help="run the slow pure-Python engine on a copy of the profile this big, 0 to skip it, 'full' for the "
        "same log (default 200MB)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="the --jobs row's worker count (default 2)")
    parser.add_argument("--long-line", default="100MB", help="single-line test size, 0 to skip (default 100MB)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds, every method once a round; each one's fastest is shown"
    )
    parser.add_argument("--dir", help="where to write the logs (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the generated logs")
    parser.add_argument("--generate-only", metavar="DIR", help="only write the profiles' logs to DIR and print hashes")
    return parser


def _generate(profile: Profile, where: Path, size: int, files: int, seed: int) -> Path:
    target = where / (profile.name if profile.directory else f"{profile.name}.log")
    started = time.perf_counter()
    profile.generate(target, size, seed, files)
    took = time.perf_counter() - started
    print(f"generated {profile.name}: {input_size(target) / 1e6:.0f} MB in {took:.1f} s", flush=True)
    return target


def digest(path: Path) -> str:
    """sha256 over a file, or over a directory's relative paths and contents in sorted order."""
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if p.is_file():
            h.update(str(p.relative_to(path)).encode() if path.is_dir() else b"")
            with p.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
    return h.hexdigest()


def _sizes(profile: Profile, args: argparse.Namespace) -> tuple[int, int]:
    """The profile's bytes and file count, from the options or the profile's defaults."""
    return parse_size(args.size or profile.default_size), args.files or profile.default_files


def _python_copy(profile: Profile, args: argparse.Namespace, where: Path, target: Path) -> tuple[Path | None, str]:
    """The input of the pure-Python engine: the log itself, a smaller copy made the same way, or none."""
    size, files = _sizes(profile, args)
    if args.python_size == "full":
        return target, ""
    small = parse_size(args.python_size)
    if small <= 0:
        return None, ""
    if small >= size:
        return target, ""
    copy_dir = where / "python-copy"
    copy_dir.mkdir(exist_ok=True)
    copy = _generate(profile, copy_dir, small, max(50, files * small // size), args.seed)
    return copy, f" on a {small / 1e6:.0f} MB copy"


def _plan(tools: Tools, args: argparse.Namespace, target: Path, patterns: Path, py: tuple[Path | None, str]):
    """(label, argv, input, env) of every measured run of one profile, grep first."""
    stats = ["--stats"] if tools.stats else []
    diagnose = [*RLFIX, "diagnose", "-f", "json", *stats]
    runs: list[tuple[str, list[str], Path, dict[str, str] | None]] = []
    if tools.grep:
        recursive = ["-r"] if target.is_dir() else []
        env = {**os.environ, "LC_ALL": "C"}
        runs.append(
            (
                "grep -E -c -f (LC_ALL=C)",
                [tools.grep, *recursive, "-E", "-c", "-f", str(patterns), str(target)],
                target,
                env,
            )
        )
    # One process for the engine rows (the default is one per core), so they measure the engine.
    serial = ["--jobs", "1"] if tools.jobs else []
    for engine in tools.engines:
        if engine != "python":
            cmd = [*diagnose, *serial, "--engine", engine, str(target)]
            runs.append((f"rlfix diagnose ({engine}{', --jobs 1' if serial else ''})", cmd, target, None))
        elif py[0] is not None:
            cmd = [*diagnose, *serial, "--engine", "python", str(py[0])]
            runs.append((f"rlfix diagnose (python{', --jobs 1' if serial else ''}){py[1]}", cmd, py[0], None))
    if tools.jobs:
        runs.append(
            (f"rlfix diagnose --jobs {args.jobs}", [*diagnose, "--jobs", str(args.jobs), str(target)], target, None)
        )
    runs.append(("python: for line in f (nothing)", [sys.executable, "-c", LOOP, str(target)], target, None))
    return runs


def _table(profile: Profile, results: list[Result], files: int) -> None:
    grep = results[0] if results[0].name.startswith("grep") else None
    total = results[0].size / 1e6
    what = f"{files} files, " if profile.directory else ""
    print(f"\n### {profile.name} ({what}{total:.0f} MB, {os.cpu_count()} cores)\n")
    print("| method | wall s | MB/s | time ratio vs grep | peak RSS | candidate lines | diagnosis |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        mb = r.size / 1e6
        ratio = f"{(r.wall / mb) / (grep.wall / (grep.size / 1e6)):.2f}" if grep else "-"
        rlfix = r.name.startswith("rlfix")
        share = candidate_share(r) if rlfix else ""
        found = diagnosis(r, profile.failure) if rlfix else ""
        print(f"| {r.name} | {r.wall:.2f} | {mb / r.wall:.0f} | {ratio} | {r.rss_mb:.0f} MB | {share} | {found} |")
    print(flush=True)


def run_profile(profile: Profile, args: argparse.Namespace, tools: Tools, workdir: Path, patterns: Path) -> None:
    """Generate one profile, measure every method on it, print its table, delete its logs."""
    where = workdir / profile.name
    where.mkdir(parents=True, exist_ok=True)
    try:
        size, files = _sizes(profile, args)
        target = _generate(profile, where, size, files, args.seed)
        py = _python_copy(profile, args, where, target) if "python" in tools.engines else (None, "")
        plan = list(_plan(tools, args, target, patterns, py))
        best: dict[int, Result] = {}
        # In rounds, every method once per round: a machine that drifts slower or faster during
        # the run then drifts under every method alike, and the ratios stay fair.
        for _ in range(args.repeat):
            for k, (name, argv, path, env) in enumerate(plan):
                result = measure(name, argv, input_size(path), env)
                if k not in best or result.wall < best[k].wall:
                    best[k] = result
                print(f"  {name}: {result.wall:.2f} s", flush=True)
        results = [best[k] for k in range(len(plan))]
        _table(profile, results, sum(p.is_file() for p in target.rglob("*")) if target.is_dir() else 1)
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)


def generate_long_line(path: Path, size: int) -> None:
    """One line of `size` bytes with no newline, with a failure near its end."""
    chunk = b"token " * (1024 * 1024 // 6)
    with path.open("wb") as fh:
        left = size
        while left > len(chunk):
            fh.write(chunk)
            left -= len(chunk)
        fh.write(b"x" * max(0, left - 80) + b" RuntimeError: CUDA error: an illegal memory access was encountered")


def run_extras(args: argparse.Namespace, workdir: Path) -> None:
    """Start-up on empty input, and one overlong line with no newline."""
    print("### extras (start-up, one overlong line)\n")
    empty = min(
        (measure("rlfix diagnose < /dev/null", [*RLFIX, "diagnose"], 0) for _ in range(3)), key=lambda r: r.wall
    )
    print(f"| rlfix diagnose < /dev/null | {empty.wall:.3f} s | peak RSS {empty.rss_mb:.0f} MB |")
    long_size = parse_size(args.long_line)
    if not long_size:
        return
    long_log = workdir / "long-line.log"
    try:
        generate_long_line(long_log, long_size)
        r = measure(f"rlfix diagnose, one {args.long_line} line", [*RLFIX, "diagnose", str(long_log)], long_size)
        found = "cuda-illegal-memory-access" in r.stdout
        print(f"| {r.name} | {r.wall:.2f} s | peak RSS {r.rss_mb:.0f} MB | failure found: {found} |")
    finally:
        long_log.unlink(missing_ok=True)


def generate_only(names: list[str], args: argparse.Namespace) -> int:
    out = Path(args.generate_only)
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        profile = PROFILES[name]
        size, files = _sizes(profile, args)
        print(f"{name} {digest(_generate(profile, out, size, files, args.seed))}")
    return 0


def byte_compile() -> str:
    """Byte-compile rlfix's modules, as `pip install` does, and say so.

    Python compiles a module it has no bytecode for on every start; with PYTHONDONTWRITEBYTECODE
    set (or a read-only source tree) that is each of rlfix's ~90 modules on each run, about 0.2 s
    that an installed rlfix never pays.
    """
    import importlib.util

    spec = importlib.util.find_spec("rlfix")
    if spec is None or not spec.submodule_search_locations:
        return "rlfix not found: cannot byte-compile it"
    where = next(iter(spec.submodule_search_locations))
    subprocess.run([sys.executable, "-m", "compileall", "-q", where], check=True)
    return f"byte-compiled {where} (as pip install does)"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    names = list(PROFILES) if args.profile == "all" else [args.profile]
    if args.generate_only:
        return generate_only(names, args)
    print(byte_compile())
    tools = Tools.detect()
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="rlfix-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    patterns = workdir / "patterns.ere"
    try:
        exported = subprocess.run([*RLFIX, "kb", "export-patterns"], capture_output=True, text=True, check=True)
        patterns.write_text(exported.stdout)
        missing = "not in this rlfix"
        print(
            f"{len(exported.stdout.splitlines())} exported patterns; engines: {' '.join(tools.engines)}; "
            f"--stats: {'yes' if tools.stats else missing}; --jobs: {'yes' if tools.jobs else missing}"
        )
        for name in names:
            run_profile(PROFILES[name], args, tools, workdir, patterns)
        run_extras(args, workdir)
        return 0
    finally:
        if not args.keep:
            patterns.unlink(missing_ok=True)
            if not args.dir:
                shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
