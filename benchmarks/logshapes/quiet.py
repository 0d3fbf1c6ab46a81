"""`quiet`: the original synthetic RL log (few framework words, 0% candidates by design)."""

from __future__ import annotations

import random
from pathlib import Path

from .common import Writer, fill_from_pool, write_file

# Real failure lines: the watchdog and CUDA lines from fixtures/logs/cuda-illegal-memory-access--nccl-cascade.log,
# the OOM from fixtures/logs/cuda-oom--verl-fsdp-update.log, the actor death from Ray's ActorDiedError text.
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


def _metric_lines(rng: random.Random, step: int, w: str) -> list[str]:
    """verl's step metrics, a tqdm bar, an NCCL channel line, vLLM metrics and a DeepSpeed step line."""
    loss = rng.random()
    bar = "\r".join(
        f"Training Progress: {p:3d}%|{'█' * (p // 10):10}| {p * 2}/200 [{p // 6:02d}:{p % 60:02d}<03:12,  1.62it/s]"
        for p in range(0, 101, rng.choice([5, 10, 20]))
    )
    return [
        f"{w} step:{step} - actor/entropy:{loss:.4f} - actor/pg_loss:{loss / 3:.5f} - actor/pg_clipfrac:0.0021 "
        f"- critic/score/mean:{rng.random():.4f} - response_length/mean:{rng.randint(200, 900)} "
        f"- perf/throughput:{rng.randint(900, 2000)} - timing_s/gen:{rng.random() * 40:.2f}",
        bar,
        f"{w} node-{step % 4}:{4000 + step % 8}:{4100 + step % 8} [{step % 8}] NCCL INFO Channel "
        f"{step % 32:02d}/0 : {step % 8}[{step % 8}] -> {(step + 1) % 8}[{(step + 1) % 8}] via P2P/IPC",
        f"INFO 03-14 10:{step % 60:02d}:11 metrics.py:{rng.randint(100, 400)}] Avg prompt throughput: "
        f"{rng.random() * 5000:.1f} tokens/s, Avg generation throughput: {rng.random() * 900:.1f} tokens/s, "
        f"Running: {rng.randint(0, 64)} reqs, Pending: 0 reqs, GPU KV cache usage: {rng.random() * 100:.1f}%",
        f"[2025-03-14 10:{step % 60:02d}:07,114] [INFO] [logging.py:128:log_dist] [Rank 0] step={step}, "
        f"skipped=0, lr=[1e-06], mom=[(0.9, 0.95)]",
    ]


def _pool(rng: random.Random) -> list[bytes]:
    """A pool of ordinary lines, drawn from at random (a pool keeps generation fast)."""
    pool: list[str] = []
    workers = [f"(WorkerDict pid={4000 + i}, ip=10.80.11.{200 + i % 4})" for i in range(8)]
    for step in range(400):
        w = rng.choice(workers)
        pool.extend(_metric_lines(rng, step, w))
        if step % 20 == 0:
            sample = " ".join(
                rng.choice(["the", "model", "answer", "is", "42", "therefore", "<think>"])
                for _ in range(rng.randint(400, 1500))
            )
            pool.append(f"{w} [prompt] Solve: what is 6*7? [response] {sample} [score] 1.0")
    return [line.encode() + b"\n" for line in pool]


def generate(path: Path, size: int, seed: int = 0, files: int = 0) -> Path:
    """Write a synthetic RL log of about `size` bytes, with the failures in the last 2%."""
    rng = random.Random(seed)
    pool = _pool(rng)

    def fill(writer: Writer) -> None:
        fill_from_pool(writer, pool, int(size * 0.98), rng)
        for failure in FAILURE_TAIL:
            writer.line(failure)
            fill_from_pool(writer, pool, writer.written + size // 400, rng)
        fill_from_pool(writer, pool, size, rng)

    write_file(path, fill)
    return path
