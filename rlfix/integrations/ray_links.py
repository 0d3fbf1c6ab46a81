"""Which Ray job id a submission's driver had, from what the session's own files say, never from time.

Offline (a copied session folder, no Jobs API), a submission (`raysubmit_…`) and the job id its
driver registered with the GCS (`02000000`) are linked only by what Ray itself wrote: its record
of the driver when the cluster exports one (below), else the submission's driver log,
`job-driver-<submission id>.log`:

- **worker output forwarded to the driver.** The driver prints its own job's worker lines only,
  prefixed `(ActorName pid=N)` (`(pid=N)` without a name; `, ip=…` when the worker ran on another
  node): `ray/_private/worker.py`, `Worker.print_logs` drops lines whose job is not the driver's,
  and `print_worker_logs` writes the prefix. A pid without `ip=` is a worker of the driver's own
  node, the node whose folder holds the driver log, so its `worker-<worker id>-<job id>-<pid>.out|err`
  file is in this folder and names the job;
- **actor ids in Ray's errors.** `RayTaskError(…): ray::A.f() (pid=…, ip=…, actor_id=<32 hex>, …)`
  and `ActorDiedError`'s `\\tactor_id: <32 hex>` name an actor, and an actor id ends with its job's
  id (`src/ray/common/id.h`, `ActorID::JobId`: 12 unique bytes, then the 4-byte job id). A driver
  may hold another job's named actor, so this counts only when no forwarded worker line says more.

A driver log with neither (a quiet driver, or one that never called `ray.init`) links to no job:
its submission's job id is unknown, and the job id stays a job of its own, never another's. A
driver log without the supervisor's `Running entrypoint for job …` line
(`ray/dashboard/modules/job/job_supervisor.py`) belongs to a submission whose driver never started
(a failed runtime_env): it has no job id. Pairing by the order or the time of registrations is
not done: with overlapping submissions it gave 11 of 20 submissions another job's id.

Before both, **Ray's own record of the driver**, when the cluster wrote it: the export API's
`export_events/event_EXPORT_DRIVER_JOB.log` (`src/ray/protobuf/export_driver_job_event.proto`,
written by the GCS when `RAY_enable_export_api_write=1` or `RAY_enable_export_api_write_config`
names `EXPORT_DRIVER_JOB`; off by default) holds each driver's job id (base64 of its 4 bytes) and
its job config's metadata, where the job supervisor put `job_submission_id`
(`ray/dashboard/modules/job/job_supervisor.py`). It links every submission whose driver
registered, also a driver that printed nothing.

Checked on a real Ray 2.60 session and found to link nothing offline: `gcs_server.out`'s
`Registering job. job_id=… driver_pid=…` (no file names the driver pid with its submission: the
supervisor does not log its child's pid, and the driver log prints none);
`python-core-driver-<job id>…_<pid>.log` and `raylet.out`'s `Driver (pid=…) is disconnected …
job_id=…` (job id and pid only); `jobs/supervisor-<id>.log` and the supervisor's
`worker-…-01000000-<pid>` files (their `job_id=` is the dashboard's own job);
`events/event_JOBS.log` and `dashboard_agent.log` (submission ids only).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rlfix.integrations.ray_logs import ANSI, WORKER_FILE, text_lines

#: How a submission's job id is known: the Jobs API said it, the driver log names it, or neither.
FROM_API = "jobs-api"
FROM_EXPORT = "export event"
FROM_WORKER_OUTPUT = "driver-log worker output"
FROM_ACTOR_ID = "driver-log actor id"
NO_DRIVER = "no driver started"
UNKNOWN = "unknown"

# `(Learner pid=16910) train step 0`, `(pid=16910) …`, `(f pid=1, ip=10.0.0.3) …`: worker.py print_worker_logs.
_FORWARDED = re.compile(r"^\((?:[^()]*? )?pid=(\d{1,10})(, ip=[^)]*)?\)")
# Ray's own error lines only (`ray.exceptions.RayTaskError(…): … actor_id=…`, ActorDiedError's
# `\tactor_id: …`): a report the driver printed (rlfix's hook quotes other lines) is indented otherwise.
_RAISED_ACTOR = re.compile(r"^(?:ray\.exceptions\.)?\w+(?:\(\w+\))?: .*?\bactor_id=([0-9a-f]{32})\b")
_DIED_ACTOR = re.compile(r"^\tactor_id: ([0-9a-f]{32})\s*$")
_ENTRYPOINT = "Running entrypoint for job "
# Written to the driver log before the supervisor starts the entrypoint (job_manager.py): a log with
# it and without `_ENTRYPOINT` is one whose driver never started.
_SETTING_UP = ("Runtime env is setting up.", "runtime_env setup failed")
_NO_JOB = "ffffffff"
#: A job id is 4 bytes (`src/ray/common/id.h`, `JobID::kLength`).
_JOB_ID_BYTES = 4


@dataclass(frozen=True)
class Link:
    """A submission's job id (None: none known) and how it is known (`FROM_*`, `NO_DRIVER`, `UNKNOWN`)."""

    job_id: str | None
    how: str


def pid_jobs(names: Iterable[str]) -> dict[str, str]:
    """Worker pid -> job id from `worker-<worker id>-<job id>-<pid>` file names; a pid two jobs' files
    share (the OS reused it on a long-lived node) names neither."""
    seen: dict[str, set[str]] = {}
    for name in names:
        m = WORKER_FILE.match(name)
        if m and m.group("job") != _NO_JOB:
            seen.setdefault(m.group("pid"), set()).add(m.group("job"))
    return {pid: next(iter(jobs)) for pid, jobs in seen.items() if len(jobs) == 1}


def driver_link(path: Path, pids: dict[str, str], internal: frozenset[str] = frozenset()) -> Link:
    """The job id a submission's driver log names (see the module's docstring), streamed line by line.

    `pids` maps this folder's worker pids to job ids (`pid_jobs`); `internal` are Ray's own job ids
    (the dashboard's, whose actors supervise submissions), never a submission's.
    """
    if not path.is_file():
        return Link(None, UNKNOWN)
    started, setting_up = False, False
    forwarded: set[str] = set()
    actors: set[str] = set()
    for raw in text_lines(path):
        if raw.startswith(_ENTRYPOINT):
            started = True
        elif not setting_up and any(mark in raw for mark in _SETTING_UP):
            setting_up = True
        if "pid=" not in raw and "actor_id" not in raw:
            continue
        line = ANSI.sub("", raw)
        m = _FORWARDED.match(line)
        if m and m.group(2) is None and m.group(1) in pids:
            forwarded.add(pids[m.group(1)])
            continue
        m = _RAISED_ACTOR.match(line) or _DIED_ACTOR.match(line)
        if m:
            actors.add(m.group(1)[-8:])
    return _decide(setting_up and not started, forwarded - internal, actors - internal)


def _decide(never_started: bool, forwarded: set[str], actors: set[str]) -> Link:
    if len(forwarded) == 1:
        return Link(next(iter(forwarded)), FROM_WORKER_OUTPUT)
    if not forwarded and len(actors) == 1:
        return Link(next(iter(actors)), FROM_ACTOR_ID)
    if never_started and not forwarded and not actors:
        return Link(None, NO_DRIVER)
    # Two jobs named (or none): no link, rather than another job's id.
    return Link(None, UNKNOWN)


def export_links(logs: Path) -> dict[str, str]:
    """Submission id -> job id from Ray's export events of drivers (see the module's docstring); a
    submission two job ids claim is neither's. Empty when the cluster wrote none (the default)."""
    seen: dict[str, set[str]] = {}
    for raw in text_lines(logs / "export_events" / "event_EXPORT_DRIVER_JOB.log"):
        try:
            data = json.loads(raw).get("event_data") or {}
            submission = data["config"]["metadata"]["job_submission_id"]
            job = base64.b64decode(data["job_id"], validate=True)
        except (ValueError, TypeError, KeyError, AttributeError):
            continue  # a cut or foreign line, or a driver started by hand (no submission id)
        if isinstance(submission, str) and len(job) == _JOB_ID_BYTES:
            seen.setdefault(submission, set()).add(job.hex())
    return {sub: next(iter(jobs)) for sub, jobs in seen.items() if len(jobs) == 1}


def session_links(logs: Path, submissions: Iterable[str], internal: frozenset[str] = frozenset()) -> dict[str, Link]:
    """Each submission's `Link`: Ray's export event of its driver when there is one, else what its
    `job-driver-<submission id>.log` in the logs folder `logs` names.

    A job id two submissions claim is neither's (one of the links would be wrong).
    """
    pids = pid_jobs(p.name for p in [*logs.glob("worker-*"), *logs.glob("old/worker-*")])
    exported = export_links(logs)
    links = {
        sub: Link(exported[sub], FROM_EXPORT)
        if exported.get(sub) not in (None, *internal)
        else driver_link(logs / f"job-driver-{sub}.log", pids, internal)
        for sub in submissions
    }
    claims: dict[str, int] = {}
    for link in links.values():
        if link.job_id is not None:
            claims[link.job_id] = claims.get(link.job_id, 0) + 1
    return {
        sub: Link(None, UNKNOWN) if link.job_id is not None and claims[link.job_id] > 1 else link
        for sub, link in links.items()
    }
