"""`rlfix triage --ray`: the per-job scans as Ray tasks across a cluster, merged into the same table.

The archive is on storage every node sees (a shared file system, or paths that exist on each
node). Jobs go out in small batches, one task per batch, spread over the alive nodes like the
node-pinned scans of `rlfix ray cluster` (zero CPUs: a busy cluster still runs them); each task
returns only `JobSummary`s, never a report or a log. Batches are taken back in input order with
a bounded number in flight, so the table is the one a local scan prints.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from rlfix.errors import UsageError
from rlfix.fleet.jobs import Job
from rlfix.fleet.model import JobSummary
from rlfix.fleet.scan import ScanSettings, scan_job
from rlfix.integrations.ray_connect import DEFAULT_TIMEOUT, init_quietly

#: Jobs per Ray task: enough to amortise a task's overhead, few enough to spread a small fleet.
BATCH = 8
#: Tasks in flight per alive node.
IN_FLIGHT_PER_NODE = 4


def scan_batch(jobs: list[Job], settings: ScanSettings) -> list[JobSummary]:
    """Run inside a Ray task: scan a few jobs with the knowledge base loaded once per worker."""
    return [scan_job(job, settings) for job in jobs]


def _connect(address: str | None) -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--ray needs Ray: pip install 'rlfix[ray]'") from None
    if not ray.is_initialized():
        target = address or "auto"
        init_quietly(
            lambda: ray.init(address=target, logging_level=logging.ERROR, log_to_driver=False),
            DEFAULT_TIMEOUT,
            f"cannot connect to a Ray cluster at {target}",
        )
    return ray


def ray_summaries(jobs: Iterable[Job], settings: ScanSettings, *, address: str | None = None) -> Iterator[JobSummary]:
    """Scan `jobs` as Ray tasks on the cluster at `address` (default: RAY_ADDRESS or the local one)."""
    ray = _connect(address)
    alive = [n for n in ray.nodes() if n.get("Alive")]
    task = ray.remote(num_cpus=0, max_retries=1, scheduling_strategy="SPREAD")(scan_batch)
    pending: deque[Any] = deque()
    source = iter(jobs)
    while batch := list(islice(source, BATCH)):
        pending.append(task.options(name="rlfix-triage").remote(batch, settings))
        if len(pending) >= max(1, len(alive)) * IN_FLIGHT_PER_NODE:
            yield from ray.get(pending.popleft())
    while pending:
        yield from ray.get(pending.popleft())
