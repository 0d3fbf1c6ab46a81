"""Throughput and memory of `rlfix diagnose` against `grep -E` on the same patterns.

    python benchmarks/throughput.py                 # 200 MB synthetic RL log
    python benchmarks/throughput.py --size 1GB      # the issue's target size
    python benchmarks/throughput.py --size 2MB --long-line 0   # a smoke run

Generates a realistic synthetic RL training log (tqdm `\\r` bars, step metrics, Ray worker
prefixes, NCCL INFO, long lines, a few real failures near the end), then measures, in one run:
`rlfix diagnose` with each available engine, `LC_ALL=C grep -E -c -f` over the patterns from
`rlfix kb export-patterns`, and a bare Python line loop. Also one single line of `--long-line`
bytes with no newline through `rlfix diagnose`. Prints MB/s, the time ratio to grep (wall and
CPU) and the peak RSS of each run (from `resource.getrusage` of the finished child).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

UNITS = {"KB": 1024, "MB": 1024**2, "GB": 1024**3, "K": 1024, "M": 1024**2, "G": 1024**3, "B": 1}

FAILURE_TAIL = [
    "(WorkerDict pid=4172, ip=10.80.11.200) [rank3]:[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)"
    " ran for 600035 milliseconds before timing out.",
    "(WorkerDict pid=4170, ip=10.80.11.200) RuntimeError: CUDA error: an illegal memory access was encountered",
    "(WorkerDict pid=4170, ip=10.80.11.200) CUDA kernel errors might be asynchronously reported at some other API "
    "call, so the stacktrace below might be incorrect.",
    "(WorkerDict pid=4170, ip=10.80.11.200) For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.15 GiB of which 1.02 GiB is free.",
    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
]


def parse_size(text: str) -> int:
    """`200MB`, `1GB`, `512K` or a byte count."""
    upper = text.strip().upper()
    for unit in sorted(UNITS, key=len, reverse=True):
        if upper.endswith(unit) and upper[: -len(unit)].replace(".", "", 1).isdigit():
            return int(float(upper[: -len(unit)]) * UNITS[unit])
    return int(upper)


def _lines(rng: random.Random) -> list[bytes]:
    """A pool of ordinary lines, drawn from at random (a pool keeps generation fast)."""
    pool: list[str] = []
    workers = [f"(WorkerDict pid={4000 + i}, ip=10.80.11.{200 + i % 4})" for i in range(8)]
    for step in range(400):
        w = rng.choice(workers)
        loss = rng.random()
        pool.append(
            f"{w} step:{step} - actor/entropy:{loss:.4f} - actor/pg_loss:{loss / 3:.5f} - actor/pg_clipfrac:0.0021 "
            f"- critic/score/mean:{rng.random():.4f} - response_length/mean:{rng.randint(200, 900)} "
            f"- perf/throughput:{rng.randint(900, 2000)} - timing_s/gen:{rng.random() * 40:.2f}"
        )
        bar = "\r".join(
            f"Training Progress: {p:3d}%|{'█' * (p // 10):10}| {p * 2}/200 [{p // 6:02d}:{p % 60:02d}<03:12,  1.62it/s]"
            for p in range(0, 101, rng.choice([5, 10, 20]))
        )
        pool.append(bar)
        pool.append(
            f"{w} node-{step % 4}:{4000 + step % 8}:{4100 + step % 8} [{step % 8}] NCCL INFO Channel "
            f"{step % 32:02d}/0 : {step % 8}[{step % 8}] -> {(step + 1) % 8}[{(step + 1) % 8}] via P2P/IPC"
        )
        pool.append(
            f"INFO 03-14 10:{step % 60:02d}:11 metrics.py:{rng.randint(100, 400)}] Avg prompt throughput: "
            f"{rng.random() * 5000:.1f} tokens/s, Avg generation throughput: {rng.random() * 900:.1f} tokens/s, "
            f"Running: {rng.randint(0, 64)} reqs, Pending: 0 reqs, GPU KV cache usage: {rng.random() * 100:.1f}%"
        )
        pool.append(
            f"[2025-03-14 10:{step % 60:02d}:07,114] [INFO] [logging.py:128:log_dist] [Rank 0] step={step}, "
            f"skipped=0, lr=[1e-06], mom=[(0.9, 0.95)]"
        )
        if step % 20 == 0:
            sample = " ".join(
                rng.choice(["the", "model", "answer", "is", "42", "therefore", "<think>"])
                for _ in range(rng.randint(400, 1500))
            )
            pool.append(f"{w} [prompt] Solve: what is 6*7? [response] {sample} [score] 1.0")
    return [line.encode() + b"\n" for line in pool]


def generate(path: Path, size: int, seed: int = 0) -> None:
    """Write a synthetic RL log of about `size` bytes, with the failures in the last 2%."""
    rng = random.Random(seed)
    pool = _lines(rng)
    tail_at = int(size * 0.98)
    written = 0
    tail = iter(FAILURE_TAIL)
    with path.open("wb", buffering=8 * 1024 * 1024) as fh:
        batch: list[bytes] = []
        while written < size:
            line = pool[rng.randrange(len(pool))]
            if written >= tail_at and rng.random() < 0.002:
                failure = next(tail, None)
                if failure is not None:
                    line = failure.encode() + b"\n"
            batch.append(line)
            written += len(line)
            if len(batch) >= 4096:
                fh.write(b"".join(batch))
                batch.clear()
        for failure in tail:
            fh.write(failure.encode() + b"\n")
        fh.write(b"".join(batch))


def generate_long_line(path: Path, size: int) -> None:
    """One line of `size` bytes with no newline, with a failure near its end."""
    chunk = b"token " * (1024 * 1024 // 6)
    with path.open("wb") as fh:
        left = size
        while left > len(chunk):
            fh.write(chunk)
            left -= len(chunk)
        fh.write(b"x" * max(0, left - 80) + b" RuntimeError: CUDA error: an illegal memory access was encountered")


@dataclass
class Result:
    name: str
    wall: float
    cpu: float
    rss_mb: float
    output: str


def measure(name: str, argv: list[str], stdin_path: Path | None = None, env: dict[str, str] | None = None) -> Result:
    """Run `argv` in a fresh child (through a probe process, so peak RSS is that child's alone)."""
    probe = (
        "import resource, subprocess, sys, time, json\n"
        "argv, stdin = json.loads(sys.argv[1]), sys.argv[2]\n"
        "t = time.perf_counter()\n"
        "with open(stdin if stdin else '/dev/null', 'rb') as fh:\n"
        "    r = subprocess.run(argv, stdin=fh, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)\n"
        "wall = time.perf_counter() - t\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "out = r.stdout[:4000].decode('utf-8', 'replace')\n"
        "print(json.dumps([wall, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024, out]))\n"
    )
    import json

    done = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(argv), str(stdin_path or "")],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    wall, cpu, rss, output = json.loads(done.stdout)
    return Result(name, wall, cpu, rss, output)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="200MB", help="log size, e.g. 200MB, 1GB (default 200MB)")
    parser.add_argument("--long-line", default="100MB", help="single-line test size, 0 to skip (default 100MB)")
    parser.add_argument("--dir", default=None, help="where to write the logs (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the generated logs")
    parser.add_argument("--repeat", type=int, default=1, help="runs per method; the fastest is shown")
    args = parser.parse_args(argv)

    size, long_size = parse_size(args.size), parse_size(args.long_line)
    grep = shutil.which("grep")
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="rlfix-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    log, patterns, long_log = workdir / "synthetic.log", workdir / "patterns.ere", workdir / "long-line.log"
    rlfix = [sys.executable, "-m", "rlfix"]
    try:
        t = time.perf_counter()
        generate(log, size)
        print(f"generated {log} ({log.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.1f} s", flush=True)
        exported = subprocess.run([*rlfix, "kb", "export-patterns"], capture_output=True, text=True, check=True)
        patterns.write_text(exported.stdout)
        n_patterns = len(exported.stdout.splitlines())
        engines = subprocess.run(
            [sys.executable, "-c", "from rlfix.match.engines import available_engines as a; print(' '.join(a()))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        env_c = {**os.environ, "LC_ALL": "C"}
        runs: list[tuple[str, list[str], dict[str, str] | None]] = []
        if grep:
            runs.append(("grep -E -c -f (LC_ALL=C)", [grep, "-E", "-c", "-f", str(patterns), str(log)], env_c))
        for engine in engines:
            runs.append(
                (f"rlfix diagnose ({engine})", [*rlfix, "diagnose", "--engine", engine, "-f", "json", str(log)], None)
            )
        loop = "import sys\nn = 0\nfor line in open(sys.argv[1], 'rb'):\n    n += 1\nprint(n)"
        runs.append(("python: for line in f (nothing)", [sys.executable, "-c", loop, str(log)], None))
        results: list[Result] = []
        for name, cmd, env in runs:
            best = min((measure(name, cmd, env=env) for _ in range(args.repeat)), key=lambda r: r.wall)
            results.append(best)
            print(f"  {name}: {best.wall:.2f} s", flush=True)
        empty = min(
            (measure("rlfix diagnose < /dev/null", [*rlfix, "diagnose"]) for _ in range(3)), key=lambda r: r.wall
        )
        long_result = None
        if long_size:
            generate_long_line(long_log, long_size)
            long_result = measure(f"rlfix diagnose, one {args.long_line} line", [*rlfix, "diagnose", str(long_log)])

        mb = log.stat().st_size / 1e6
        base = results[0] if grep else None
        print()
        print(f"log: {mb:.0f} MB synthetic RL log, {n_patterns} exported patterns, {os.cpu_count()} cores")
        print()
        print("| method | wall s | MB/s | wall ratio vs grep | CPU ratio vs grep | peak RSS |")
        print("|---|---|---|---|---|---|")
        for r in results:
            wall_ratio = f"{r.wall / base.wall:.2f}" if base else "-"
            cpu_ratio = f"{r.cpu / base.cpu:.2f}" if base and base.cpu else "-"
            print(f"| {r.name} | {r.wall:.2f} | {mb / r.wall:.0f} | {wall_ratio} | {cpu_ratio} | {r.rss_mb:.0f} MB |")
        print()
        print(f"| rlfix diagnose < /dev/null | {empty.wall:.3f} s | peak RSS {empty.rss_mb:.0f} MB |")
        if long_result is not None:
            found = "cuda-illegal-memory-access" in long_result.output
            print(
                f"| {long_result.name} | {long_result.wall:.2f} s | peak RSS {long_result.rss_mb:.0f} MB "
                f"| failure found: {found} |"
            )
        return 0
    finally:
        if not args.keep:
            for path in (log, patterns, long_log):
                path.unlink(missing_ok=True)
            if not args.dir:
                shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
