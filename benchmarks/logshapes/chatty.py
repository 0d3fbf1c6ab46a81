"""`chatty` and `healthy`: a verl + vLLM + Ray GRPO job as its driver prints it (see shapes.py)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

from . import shapes
from .common import Writer, ray_prefix, write_file

WORKERS = 8
FIRST_PID = 4172
IP = "10.80.11.200"
START = datetime(2025, 3, 2, 10, 5, 0)
STEP_SECONDS = 60  # one GRPO step of a 7B model on 8 GPUs: rollout, log-probs and update
METRICS_EVERY = 5  # vLLM's _LOCAL_LOGGING_INTERVAL_SEC
AUTOSCALER_EVERY = 30  # the autoscaler summarizer's interval_s
TOTAL_STEPS = 470


def _prefixes() -> list[str]:
    return [ray_prefix("WorkerDict", FIRST_PID + i, IP) for i in range(WORKERS)]


def _header(writer: Writer) -> None:
    """Launch line, Ray banner, verl's config dump and NCCL set-up of every rank."""
    runner = ray_prefix("TaskRunner", 2210)
    writer.line(shapes.COMMAND)
    writer.lines(shapes.RAY_INIT)
    writer.lines(runner + line for line in shapes.CONFIG_DUMP)
    for r, prefix in enumerate(_prefixes()):
        comm = f"0x5612aa0c{r:02x}00"
        where = f"{prefix}gpu-node-11:{FIRST_PID + r}:{FIRST_PID + 130 + r} [{r}] "
        fields = {"r": r, "n": WORKERS, "nx": (r + 1) % WORKERS, "comm": comm}
        writer.lines(where + line.format(**fields) for line in shapes.NCCL_INIT)


def metric_bodies(rng: random.Random, count: int = 4096) -> list[bytes]:
    """The part of vLLM's metrics line after its `INFO <time> metrics.py:351] ` header, many variants."""
    tail = shapes.VLLM_METRICS.split("] ", 1)[1]
    return [
        tail.format(
            p=rng.random() * 9000,
            g=rng.random() * 3000,
            run=rng.randrange(256),
            pend=rng.randrange(64),
            kv=rng.random() * 100,
        ).encode()
        + b"\n"
        for _ in range(count)
    ]


def _rollout(writer: Writer, rng: random.Random, step: int, autoscaler: bool, bodies: list[bytes]) -> None:
    """One step's rollout: every worker's vLLM metrics every 5 s, the autoscaler warning every 30 s."""
    prefixes = [p.encode() + b"INFO " for p in _prefixes()]
    began = START + timedelta(seconds=step * STEP_SECONDS)
    minute = began.strftime("%m-%d %H:%M:")
    head = shapes.VLLM_METRICS.split("{ts}", 1)[1].split("] ", 1)[0] + "] "
    for second in range(0, STEP_SECONDS, METRICS_EVERY):
        if autoscaler and second % AUTOSCALER_EVERY == 0:
            elapsed = step * STEP_SECONDS + second + 109
            writer.line(shapes.AUTOSCALER.format(m=elapsed // 60, s=elapsed % 60))
        stamp = f"{minute}{second:02d}{head}".encode()
        writer.extend([p + stamp + body for p, body in zip(prefixes, rng.choices(bodies, k=WORKERS), strict=True)])


def _update(writer: Writer, rng: random.Random, step: int) -> None:
    """The weight sync's warning from every worker, then the TaskRunner's bar and step metrics."""
    runner = ray_prefix("TaskRunner", 2210)
    warning = shapes.WARNINGS[step % len(shapes.WARNINGS)]
    for prefix in _prefixes():
        writer.lines(prefix + line for line in warning)
    done = step % TOTAL_STEPS + 1
    pct = done * 100 // TOTAL_STEPS
    left = (TOTAL_STEPS - done) * STEP_SECONDS
    writer.line(
        runner
        + shapes.PROGRESS.format(
            pct=pct,
            bar="█" * (pct // 10),
            step=done,
            total=TOTAL_STEPS,
            rate=STEP_SECONDS + rng.random(),
            el=f"{done * STEP_SECONDS // 3600}:{done % 60:02d}:00",
            left=f"{left // 3600}:{left // 60 % 60:02d}:00",
        )
    )
    writer.line(runner + _step_line(rng, step))


def _step_line(rng: random.Random, step: int) -> str:
    return shapes.STEP.format(
        step=step,
        a=rng.randrange(90000, 120000),
        b=rng.randrange(120000, 160000),
        ent=rng.random(),
        kl=rng.random() / 100,
        pg=rng.random() / 10 - 0.05,
        gn=rng.random(),
        mem=40 + rng.random() * 30,
        sc=rng.random(),
        rl=rng.random() * 3000,
        tg=rng.random() * 200,
        tu=rng.random() * 250,
        ts=400 + rng.random() * 100,
        thr=rng.randrange(900, 2000),
    )


def _failure(writer: Writer, rng: random.Random, step: int, size: int, bodies: list[bytes]) -> None:
    """One worker's OOM traceback, the others still talking for a while, then the driver's error."""
    failing = ray_prefix("WorkerDict", FIRST_PID + 3, IP)
    writer.lines(failing + line for line in shapes.WORKER_TRACEBACK)
    stop = writer.written + size // 200
    while writer.written < stop:
        step += 1
        _rollout(writer, rng, step, True, bodies)
    writer.lines(shapes.DRIVER_TRACEBACK)


def generate(path: Path, size: int, seed: int = 0, files: int = 0, failure: bool = True) -> Path:
    """Write the job's driver log, about `size` bytes; with `failure`, it dies of a CUDA OOM near the end.

    The healthy variant also leaves out the autoscaler warning: rlfix rightly reads a request that
    stays unschedulable as a hang, so a log that repeats it is not a healthy one.
    """
    rng = random.Random(seed)
    bodies = metric_bodies(rng)

    def fill(writer: Writer) -> None:
        _header(writer)
        step = 0
        until = int(size * 0.985) if failure else size
        while writer.written < until:
            _rollout(writer, rng, step, failure, bodies)
            _update(writer, rng, step)
            step += 1
        if failure:
            _failure(writer, rng, step, size, bodies)

    write_file(path, fill)
    return path


def generate_healthy(path: Path, size: int, seed: int = 0, files: int = 0) -> Path:
    return generate(path, size, seed, files, failure=False)
