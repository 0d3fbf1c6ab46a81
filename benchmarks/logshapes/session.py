"""`many-files`: a Ray session log directory (`/tmp/ray/session_*/logs`) of a verl job, one failure.

File names follow Ray's (python/ray/_private/node.py, log_monitor.py): `worker-<worker id>-<job id>-<pid>.out`
and `.err` for each worker's stdout and stderr, `python-core-worker-<worker id>_<pid>.log` for its C++ core,
`raylet.out`, and `job-driver-<submission id>.log` for the driver. Most are small; the driver log, the
raylet log and the busiest rollout workers' stdout are large.
"""

from __future__ import annotations

import random
from pathlib import Path

from . import chatty, shapes
from .common import Writer, fill_from_pool, write_file

JOB = "01000000"
LOGS = "session_2025-03-02_10-02-09_881234_2210/logs"
LARGE_SHARE = 0.55  # of the bytes: the few large files
FIXED = 5  # driver log, raylet.out and three busy workers' .out

# Ray prefixes each worker's files with these magic lines (ray/_private/ray_constants.py
# LOG_PREFIX_JOB_ID, LOG_PREFIX_ACTOR_NAME), which its log monitor reads to label forwarded lines.
HEADER = [f":job_id:{JOB}", ":actor_name:WorkerDict"]


def _glog(level: str, pid: int, tid: int, where: str, text: str, second: int) -> str:
    """Ray's C++ log line: `[date time,ms L pid tid] file.cc:line: message` (src/ray/util/logging.cc)."""
    stamp = f"2025-03-02 10:{2 + second // 60 % 50:02d}:{second % 60:02d},{second * 37 % 1000:03d}"
    return f"[{stamp} {level} {pid} {tid}] {where}: {text}"


def _core_worker_pool(pid: int) -> list[bytes]:
    """A python-core-worker log: start-up lines, then the event-stats dump it prints every minute.

    The lines as quoted from a real python-core-worker log in vllm-project/vllm#427 (core_worker_process.cc,
    io_service_pool.cc, grpc_server.cc, core_worker.cc `Event stats:` with its Global stats block).
    """
    lines = [
        _glog("I", pid, pid, "core_worker_process.cc:107", f"Constructing CoreWorkerProcess. pid: {pid}", 5),
        _glog("I", pid, pid, "io_service_pool.cc:35", "IOServicePool is running with 1 io_service.", 5),
        _glog(
            "I", pid, pid, "grpc_server.cc:140", f"worker server started, listening on port {10000 + pid % 5000}.", 5
        ),
        _glog(
            "I",
            pid,
            pid,
            "core_worker.cc:217",
            f"Initializing worker at address: 10.80.11.200:{10000 + pid % 5000}, "
            f"worker ID 02e363d59eb469c6fe7c4719cfdd04158e231ad34605def092aacdb1, raylet 6f1d2a",
            5,
        ),
    ]
    for minute in range(1, 40):
        lines += [
            _glog("I", pid, pid + 23, "core_worker.cc:553", "Event stats:", minute * 60),
            "",
            "",
            f"Global stats: {12 + minute} total (8 active)",
            f"Queueing time: mean = {5 + minute % 7}.740 us, max = 49.684 us, min = 6.046 us, total = 68.876 us",
            f"Execution time:  mean = 11.{minute:03d} us, total = 136.696 us",
        ]
    return [line.encode() + b"\n" for line in lines]


def _worker_err_pool() -> list[bytes]:
    lines = [line for warning in shapes.WARNINGS for line in warning]
    return [line.encode() + b"\n" for line in lines]


def _sizes(rng: random.Random, count: int, total: int) -> list[int]:
    """Small files' sizes: log-normal, as a session's worker logs are (most tiny, a few hundred KB)."""
    weights = [rng.lognormvariate(0.0, 1.6) for _ in range(count)]
    scale = total / sum(weights)
    return [max(64, int(w * scale)) for w in weights]


def _raylet_pool(rng: random.Random) -> list[bytes]:
    """Healthy raylet.out lines, as in fixtures/logs/ray-oom-killer--raylet-out.log."""
    lines = []
    for i in range(512):
        pid = 30141 + i
        wid = f"{rng.getrandbits(224):056x}"
        lines += [
            f"[2025-03-02 10:{i % 60:02d}:10,435 I 22475 22475] (raylet) worker_pool.cc:564: Started worker "
            f"process with pid {pid} worker_id={wid}",
            f"[2025-03-02 10:{i % 60:02d}:12,646 I 22475 22485] (raylet) object_store.cc:37: Object store current "
            f"usage {rng.random() * 9:.5f} / 219.42 GB.",
            f"[2025-03-02 10:{i % 60:02d}:12,714 I 22475 22475] (raylet) worker_pool.cc:811: Job {JOB} already "
            "started in worker pool.",
        ]
    return [line.encode() + b"\n" for line in lines]


def _worker_out_pool(rng: random.Random) -> list[bytes]:
    """A rollout worker's own stdout: vLLM metrics and NCCL INFO lines, without the driver's Ray prefix."""
    heads = [f"INFO 03-02 10:{m:02d}:{s:02d} metrics.py:351] ".encode() for m in range(5, 60) for s in range(0, 60, 5)]
    bodies = chatty.metric_bodies(rng, 2048)
    pool = [rng.choice(heads) + body for body in bodies]
    nccl = [f"gpu-node-11:4175:4305 [3] {line}" for line in shapes.NCCL_INIT]
    pool += [line.format(r=3, n=8, nx=4, comm="0x5612aa0c0300").encode() + b"\n" for line in nccl]
    return pool


def _write_pool_file(path: Path, header: list[str], pool: list[bytes], size: int, rng: random.Random) -> None:
    def fill(writer: Writer) -> None:
        writer.lines(header)
        fill_from_pool(writer, pool, size, rng)

    write_file(path, fill)


def _large(logs: Path, size: int, rng: random.Random, out_pool: list[bytes]) -> None:
    """The few large files: the driver log (a healthy chatty log), raylet.out, three busy workers' stdout."""
    chatty.generate_healthy(logs / "job-driver-raysubmit_3xQ9hTb7cKZd1mWf.log", int(size * 0.30), rng.randrange(2**31))
    _write_pool_file(logs / "raylet.out", [], _raylet_pool(rng), int(size * 0.10), rng)
    for i in range(FIXED - 2):
        name = f"worker-{rng.getrandbits(224):056x}-{JOB}-{4172 + i}.out"
        _write_pool_file(logs / name, HEADER, out_pool, int(size * 0.05), rng)


def _small(logs: Path, count: int, budget: int, rng: random.Random, out_pool: list[bytes]) -> None:
    """Per worker process: its .out, its .err and its core worker log; one .err holds the failure."""
    err_pool = _worker_err_pool()
    sizes = _sizes(rng, count, budget)
    failing = count // 3 // 2
    for i in range(0, count, 3):
        pid, wid = 5000 + i // 3, f"{rng.getrandbits(224):056x}"
        kinds = [
            (f"worker-{wid}-{JOB}-{pid}.out", HEADER, out_pool),
            (f"worker-{wid}-{JOB}-{pid}.err", HEADER, err_pool),
            (f"python-core-worker-{wid}_{pid}.log", [], _core_worker_pool(pid)),
        ]
        for (name, header, pool), size in zip(kinds, sizes[i : i + 3], strict=False):
            _write_pool_file(logs / name, header, pool, size, rng)
        if i // 3 == failing:
            with (logs / kinds[1][0]).open("a") as fh:
                fh.write("".join(line + "\n" for line in shapes.WORKER_TRACEBACK))


def generate(path: Path, size: int, seed: int = 0, files: int = 5000) -> Path:
    """Write a session directory under `path` with `files` files and about `size` bytes in all."""
    rng = random.Random(seed)
    logs = path / LOGS
    logs.mkdir(parents=True, exist_ok=True)
    out_pool = _worker_out_pool(rng)
    _large(logs, size, rng, out_pool)
    _small(logs, max(3, files - FIXED), int(size * (1 - LARGE_SHARE)), rng, out_pool)
    return path
