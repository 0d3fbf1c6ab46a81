"""`triage()`: many jobs, each diagnosed on its own, in parallel, summed up into one `Fleet`.

Jobs stream through: discovery is lazy, at most a few jobs per worker are in flight, and each
comes back as a `JobSummary`, folded into its group at once. Results are taken in input order,
so the table does not depend on how many workers ran or which finished first.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Union

from rlfix.errors import UsageError
from rlfix.fleet.jobs import Job, check_paths, find_jobs, iso, parse_since, parse_stamp
from rlfix.fleet.model import HEALTHY, Fleet, Group, JobSummary
from rlfix.fleet.scan import ScanSettings, scan_job
from rlfix.kb.load import KnowledgeBase
from rlfix.model import Action

if TYPE_CHECKING:
    from concurrent.futures import Future

Paths = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]
#: Jobs queued per worker process: enough to keep every worker busy, few enough to bound memory.
IN_FLIGHT_PER_WORKER = 4
#: Why a job is unreadable when the process scanning it died, twice.
WORKER_DIED = "the worker process scanning this job died (killed, or out of memory); not scanned"
#: The knowledge base of this worker process, set once by `_init_worker`.
_WORKER_KB: KnowledgeBase | None = None


def triage(
    paths: Paths,
    *,
    since: str | datetime | None = None,
    jobs: int | None = None,
    kb: KnowledgeBase | None = None,
    kb_dirs: Sequence[str | os.PathLike[str]] = (),
    engine: str = "auto",
    redact: bool = True,
    follow_symlinks: bool = False,
    ray: bool = False,
    address: str | None = None,
    actions: Sequence[str] = (),
) -> Fleet:
    """Diagnose every job named by `paths` separately and group the jobs by cause.

    A directory is a folder of jobs (each file or sub-folder one job) unless it is a Ray session
    folder (one job); a file, or each match of a glob, is one job. `since` keeps jobs seen at or
    after a time (a `datetime`, an ISO date/time, or an age like `2h`, `3d`). `jobs` worker
    processes scan in parallel (default: the number of cores); the result is the same for any
    number. With `ray=True` the scans run as Ray tasks on the cluster at `address` instead.
    `actions` keeps only the jobs whose top cause calls for one of them (`cordon-node`, `retry`, ...).
    Raises `InputError` for a path that does not exist and `UsageError` for a bad `since` or action.
    """
    names = [os.fspath(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
    check_paths(names)
    cutoff = since if isinstance(since, datetime) else (parse_since(since) if since else None)
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs}: give 1 or more worker processes")
    known = [a.value for a in Action]
    for action in actions:
        if action not in known:
            raise UsageError(f"--action {action!r}: choose from {', '.join(known)}")
    settings = ScanSettings(tuple(os.fspath(d) for d in kb_dirs), engine, redact, follow_symlinks)
    folded = FleetBuilder(since=iso(cutoff) if cutoff else None, redacted=redact, actions=actions)
    to_scan = folded.readable(find_jobs(names, follow_symlinks))
    if ray:
        from rlfix.fleet.ray import ray_summaries

        found = ray_summaries(to_scan, settings, address=address)
    else:
        found = summaries(to_scan, settings, jobs or os.cpu_count() or 1, kb)
    for summary in found:
        folded.add(summary, cutoff)
    return folded.fleet()


def summaries(
    jobs: Iterable[Job], settings: ScanSettings, workers: int, kb: KnowledgeBase | None
) -> Iterator[JobSummary]:
    """Scan each job, in worker processes when `workers` > 1; summaries come out in input order.

    A worker that dies (killed, out of memory) breaks its pool. The jobs in flight then are
    scanned again one by one, each in a pool of its own, so the job that kills its worker is
    named as unreadable and no other job is lost; the rest go on in a fresh pool.
    """
    if workers <= 1:
        for job in jobs:
            yield scan_job(job, settings, kb)
        return
    remaining = iter(jobs)
    while True:
        stranded: list[Job] = []
        yield from _pooled(remaining, settings, workers, kb, stranded)
        if not stranded:
            return
        for job in stranded:
            yield from _pooled(iter([job]), settings, 1, kb, [], alone=True)


def _pooled(
    jobs: Iterator[Job],
    settings: ScanSettings,
    workers: int,
    kb: KnowledgeBase | None,
    stranded: list[Job],
    alone: bool = False,
) -> Iterator[JobSummary]:
    """Scan jobs in one pool until they run out or the pool breaks (then the jobs in flight go
    into `stranded`, in order; a job scanned `alone` that breaks its pool is reported instead)."""
    from concurrent.futures.process import BrokenProcessPool

    from rlfix.process_pool import process_pool, stop_workers  # only when a pool is started

    pool = process_pool(workers, _init_worker, (kb,))
    pending: deque[tuple[Job, Future[JobSummary]]] = deque()
    finished = False
    unsent: Job | None = None  # taken from `jobs`, not yet in `pending` (a broken pool refuses it)
    try:
        for job in jobs:
            unsent = job
            pending.append((job, pool.submit(_scan_in_worker, job, settings)))
            unsent = None
            if len(pending) >= workers * IN_FLIGHT_PER_WORKER:
                yield pending[0][1].result()
                pending.popleft()
        while pending:
            yield pending[0][1].result()
            pending.popleft()
        finished = True
    except BrokenProcessPool:
        if alone:
            yield JobSummary(job=pending[0][0].path, cause=HEALTHY, key=HEALTHY, errors=(WORKER_DIED,))
        else:
            stranded.extend(job for job, _ in pending)
            stranded.extend([unsent] if unsent is not None else [])
    finally:
        # Interrupted (Ctrl-C, SIGTERM, the reader gone): end the workers now, never orphan them.
        if finished:
            pool.shutdown(wait=True)
        else:
            stop_workers(pool)


def _init_worker(kb: KnowledgeBase | None) -> None:
    global _WORKER_KB
    _WORKER_KB = kb


def _scan_in_worker(job: Job, settings: ScanSettings) -> JobSummary:
    return scan_job(job, settings, _WORKER_KB)


@dataclass
class _Tally:
    """A group being counted: the first job seen stays its example."""

    first: JobSummary
    count: int = 0
    times: list[str] = field(default_factory=list)
    frameworks: set[str] = field(default_factory=set)
    actions: set[str] = field(default_factory=set)
    owners: set[str] = field(default_factory=set)


class FleetBuilder:
    """Folds job summaries into groups as they arrive (shared by local, parallel and Ray scans)."""

    def __init__(self, since: str | None = None, redacted: bool = True, actions: Sequence[str] = ()) -> None:
        self.since = since
        self.redacted = redacted
        self.actions = tuple(actions)
        self.jobs: list[JobSummary] = []
        self.errors: list[str] = []
        self.filtered = 0
        self.skipped: list[str] = []
        self.other_actions = 0
        self._groups: dict[str, _Tally] = {}

    def readable(self, jobs: Iterable[Job]) -> Iterator[Job]:
        """The jobs to scan; the others are kept as warnings with their reason."""
        for job in jobs:
            if job.skip is None:
                yield job
            else:
                self.skipped.append(f"{job.path}: {job.skip}")

    def add(self, job: JobSummary, cutoff: datetime | None = None) -> None:
        """Count one job in its group, or record it as unreadable, or leave it out as too old."""
        if not job.files:
            reason = "; ".join(job.errors) or "no log file could be read"
            self.errors.append(f"{job.job}: {reason}")
            return
        if cutoff is not None and (job.seen is None or (parse_stamp(job.seen) or cutoff) < cutoff):
            self.filtered += 1
            return
        if self.actions and job.action not in self.actions:
            self.other_actions += 1
            return
        self.jobs.append(job)
        tally = self._groups.setdefault(job.key, _Tally(job))
        tally.count += 1
        tally.frameworks.update(job.frameworks)
        tally.actions.update([job.action] if job.action else [])
        tally.owners.update([job.owner] if job.owner else [])
        if job.seen is not None:
            # Only the extremes are needed; keep two values, not one per job.
            tally.times = [min([*tally.times, job.seen]), max([*tally.times, job.seen])]

    def fleet(self) -> Fleet:
        """The groups, most jobs first (ties by name, so every run prints the same table)."""
        groups = [
            Group(
                key=key,
                cause=t.first.cause,
                title=t.first.title,
                template=t.first.template,
                count=t.count,
                first_seen=t.times[0] if t.times else None,
                last_seen=t.times[-1] if t.times else None,
                frameworks=tuple(sorted(t.frameworks)),
                example=t.first.job,
                evidence=t.first.evidence,
                actions=tuple(sorted(t.actions)),
                owners=tuple(sorted(t.owners)),
            )
            for key, t in self._groups.items()
        ]
        groups.sort(key=lambda g: (-g.count, g.key))
        return Fleet(
            tuple(self.jobs),
            tuple(groups),
            tuple(self.errors),
            self.filtered,
            self.since,
            self.redacted,
            skipped=tuple(self.skipped),
            only_actions=self.actions,
            other_actions=self.other_actions,
        )
