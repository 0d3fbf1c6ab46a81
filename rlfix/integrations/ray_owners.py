"""Which job a file of a Ray logs folder, or a line of its shared node logs, belongs to, by the identity Ray wrote.

A job's own files carry its id in their names (`worker-<worker id>-<job id>-<pid>.out|err`,
`python-core-driver-<job id>ff…_<pid>.log`, `python-core-worker-<worker id>_<pid>.log` through the
worker id). A line of the shared logs (`raylet.out`, `gcs_server.out`, …) belongs to a job when
it names it, whatever its time:

- a job id, as the raylet and the GCS write it: `job_id=02000000`, `job ID=02000000`, `job id = 02000000`
  (gcs_actor_manager.cc: `Worker … failed, destroying actor child, job id = 02000000`),
  `JobID(02000000)`, `for job 02000000` and `Job 02000000 …` (node_manager.cc, gcs_*_manager.cc,
  worker_pool.cc, runtime_env_agent_client.cc);
- a worker of the folder (`worker_id=`, `worker id = `, `Worker ID: ` with a worker file's id; a
  driver's worker id is its job id padded with `f`), or a worker pid (`pid=`, `Worker PID: `) that
  exactly one job's worker files carry;
- a lease by its id (`The lease with ID <id> cannot be scheduled right now`, main.cc): a lease id
  is a 4-byte counter followed by the id of the worker that asked for it (`LeaseID::FromWorker` in
  src/ray/common/id.h), so a driver's or a known worker's lease is its job's. Without this, the
  raylet's infeasible-lease warning names no job, and every job running then read it as its own;
- a submission's JobSupervisor actor, `_ray_internal_job_actor_<submission id>` (Ray's job manager
  names it so: `ray/dashboard/modules/job/job_manager.py`), which runs in the dashboard's own job.

The raylet's periodic OOM summary (`N Workers (tasks / actors) killed due to memory pressure (OOM)
… over the last time period`) names no job and comes up to a minute after the kills it counts,
each of which has its own record naming its job: it is the node's, never read by a job's window
(in the trial, a healthy job that ended just before its neighbour's kill got it as a note).

The dashboard's own job (`internal`: the job id its supervisors log in `jobs/supervisor-*.log`)
belongs to no submission in particular: a line naming only it is read by time for a submission
whose driver never started (its supervisor may be the one it is about, a runtime_env it could not
build), and is another job's for a job whose driver started. A line naming nothing is read by
time (`ray_logs.Since`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from rlfix.integrations.ray_links import pid_jobs
from rlfix.integrations.ray_logs import LogFile

_WORKER_FILE = re.compile(r"^worker-([0-9a-f]+)-([0-9a-f]+)-(\d+)\.(?:out|err)$")
_CORE_WORKER = re.compile(r"^python-core-worker-([0-9a-f]+)_\d+\.log$")
_CORE_DRIVER = re.compile(r"^python-core-driver-([0-9a-f]{8})f*_\d+\.log$")
_SUPERVISOR_LOG = re.compile(r"^supervisor-.+\.log$")
_SUPERVISOR_JOB = re.compile(r"\bjob_id=([0-9a-f]{8})\b")
# Cheap words first: most lines name nothing, and are not searched further.
_IDENTITY_WORDS = (
    b"job_id",
    b"JobID",
    b"job ID",
    b"job id",
    b"for job ",
    b"Job ",
    b"worker_id",
    b"worker id",
    b"worker ID",
    b"Worker ID",
    b"PID",
    b"pid",
    b"_ray_internal_job_actor_",
    b"ease with ID",
    b"memory pressure (OOM)",
)
_JOB_NAMED = re.compile(rb"\b(?:(?:job_id|JobID|job ID|job id)\s?[=:(]\s?|for job |Job )([0-9a-f]{8})\b")
_WORKER_NAMED = re.compile(rb"\b(?:worker_id|[Ww]orker [Ii][Dd])\s?[=:]\s?([0-9a-f]{56})\b")
# A lease id: the requesting worker's id after a 4-byte counter (`LeaseID::FromWorker`).
_LEASE_NAMED = re.compile(rb"\b[Ll]ease with ID ([0-9a-f]{8})([0-9a-f]{56})\b")
_PID_NAMED = re.compile(rb"\b(?:Worker PID|pid)\s?[=:]\s?(\d{1,10})\b")
_SUPERVISOR_NAMED = re.compile(rb"_ray_internal_job_actor_([A-Za-z0-9_-]+)")
# The raylet's periodic OOM summary (node_manager.cc): it counts the node's kills and names no job; each
# kill it counts has a record of its own that names the killed task's job.
_NODE_SUMMARY = re.compile(rb"Workers \(tasks / actors\) killed due to memory pressure \(OOM\).*over the last time")

#: What a line names: ("job", job id), ("submission", submission id), or ("node", "") for a record
#: that is the node's whatever its time (the periodic OOM summary).
Named = tuple[str, str]


@dataclass(frozen=True)
class Ownership:
    """Which job owns each per-job file of a logs folder, and so which job a shared-log line names."""

    workers: dict[str, str]
    #: Worker process id -> job id, from the same file names (`worker-<worker>-<job>-<pid>.out`).
    pids: dict[str, str] = field(default_factory=dict)
    #: The dashboard's own job ids (its actors supervise submissions).
    internal: frozenset[str] = frozenset()

    @classmethod
    def of(cls, files: Iterable[LogFile]) -> Ownership:
        """Read the worker id -> job id and pid -> job id maps off the file names, and the dashboard's
        job id off the supervisors' logs (`jobs/supervisor-<submission id>.log`, first line)."""
        workers = {}
        names = []
        internal: set[str] = set()
        for log in files:
            names.append(log.name)
            m = _WORKER_FILE.match(log.name)
            if m:
                workers[m.group(1)] = m.group(2)
            elif log.path.parent.name == "jobs" and _SUPERVISOR_LOG.match(log.name):
                internal.update(_first_job(log))
        # A pid two jobs' files share (reused by the OS) names neither job.
        return cls(workers, pid_jobs(names), frozenset(internal))

    @classmethod
    def of_names(cls, names: Iterable[str]) -> Ownership:
        """The same maps from a node's file names alone (the dashboard's list of a node's logs, where the
        supervisors' logs are not read: the dashboard's own job ids stay unknown)."""
        bases = [name.rsplit("/", 1)[-1] for name in names]
        workers = {m.group(1): m.group(2) for m in map(_WORKER_FILE.match, bases) if m}
        return cls(workers, pid_jobs(bases))

    def named(self, line: bytes) -> Named | None:
        """What a shared-log line names: a submission's supervisor, else a job (see the module's docstring)."""
        if not any(word in line for word in _IDENTITY_WORDS):
            return None
        m = _SUPERVISOR_NAMED.search(line)
        if m:
            return ("submission", m.group(1).decode("ascii"))
        if _NODE_SUMMARY.search(line):
            return ("node", "")
        job = self.named_job(line)
        return ("job", job) if job is not None else None

    def named_job(self, line: bytes) -> str | None:
        """The job a shared-log line names: a job id, a worker id or a worker pid this folder knows."""
        m = _JOB_NAMED.search(line)
        if m:
            return m.group(1).decode("ascii")
        for m in _WORKER_NAMED.finditer(line):
            job = self._job_of_worker(m.group(1).decode("ascii"))
            if job is not None:
                return job
        for m in _LEASE_NAMED.finditer(line):
            job = self._job_of_worker(m.group(2).decode("ascii"))
            if job is not None:
                return job
        for m in _PID_NAMED.finditer(line):
            job = self.pids.get(m.group(1).decode("ascii"))
            if job is not None:
                return job
        return None

    def _job_of_worker(self, wid: str) -> str | None:
        if wid.endswith("ffffffff"):  # a driver's worker id: its job id, padded with f
            return wid[:8]
        return self.workers.get(wid)

    def identity(
        self,
        job_id: str | None,
        known: Iterable[str] = (),
        *,
        submission: str | None = None,
        submissions: Iterable[str] = (),
        supervised: bool = False,
    ) -> Callable[[bytes], bool | None]:
        """Whether a line belongs to the job `job_id` / `submission` by what it names (None: its time decides).

        `supervised`: the submission has no driver, so a line naming only the dashboard's job (its
        supervisor's) may be about it, and its time decides; otherwise such a line is another job's.
        For the node's own findings (neither given), a line naming any `known` job or `submissions`
        is that job's, not the node's.
        """
        jobs, subs = frozenset(known), frozenset(submissions)

        def owned(line: bytes) -> bool | None:
            what = self.named(line)
            if what is None:
                return None
            kind, value = what
            if kind == "node":  # never a job's, whatever its window; the node's section keeps it
                return job_id is None and submission is None
            if job_id is None and submission is None:
                return False if value in (subs if kind == "submission" else jobs) else None
            if kind == "submission":
                return value == submission
            if value == job_id:
                return True
            # The dashboard's job: perhaps this submission's supervisor, when the submission has no driver
            # (with the dashboard's job ids unknown, any job a line names may be the dashboard's).
            return None if supervised and (value in self.internal or not self.internal) else False

        return owned

    def job_of(self, name: str) -> str | None:
        """The job id (hex) a file belongs to, None for a shared or an unowned file."""
        for pattern in (_WORKER_FILE, _CORE_WORKER):
            m = pattern.match(name)
            if m:
                wid = m.group(1)
                return self.workers.get(wid) if pattern is _CORE_WORKER else m.group(2)
        m = _CORE_DRIVER.match(name)
        return m.group(1) if m else None


def _first_job(log: LogFile) -> set[str]:
    """The job id on a supervisor log's first line (its logging context: the dashboard's job)."""
    try:
        with log.path.open(encoding="utf-8", errors="replace") as fh:
            return set(_SUPERVISOR_JOB.findall(fh.readline(1 << 16)))
    except OSError:
        return set()
