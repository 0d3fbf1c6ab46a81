"""Which job each Ray log file and each line of the shared node logs belongs to.

A Ray cluster runs many jobs, and its session folder holds all of them. Ray names a job's own
files after it: `job-driver-<submission id>.log`, `worker-<worker id>-<job id hex>-<pid>.err|out`,
`python-core-driver-<job id hex>ff…_<pid>.log`, and `python-core-worker-<worker id>_<pid>.log`
(its worker id names a `worker-…` file, hence a job). The node logs every job shares
(`raylet.out`, `gcs_server.out`, `monitor.log`, `runtime_env_setup-*.log`) are split by time: a
line belongs to the jobs whose window holds its timestamp, and lines in no window are the node's.

A job is a `JobSpan`: a submission id and/or a job id, and its window in epoch seconds. Spans
come from the Jobs API (`list_jobs`), or, offline, from the files: `gcs_server.out` registers and
finishes each job id, `events/event_JOBS.log` starts and completes each submission, and a
submission's job id is the one its driver log names (`ray_links`: its workers' forwarded output,
Ray's actor ids), never the one registered nearest in time. A submission that failed before its
driver started (a bad runtime_env) has a window and no job id; one whose driver log names no job
has its job id unknown, and the job id it had stays a section of its own. This module does not
import Ray.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rlfix.clock import epoch, parse
from rlfix.conclude.unrecognized import UNRECOGNIZED_ID
from rlfix.core import Triage
from rlfix.details import ExitStatus, FirstFailure
from rlfix.integrations.ray_links import FROM_API, NO_DRIVER, UNKNOWN, session_links
from rlfix.integrations.ray_logs import (
    SHARED_KINDS,
    Cut,
    LogFile,
    Window,
    classify,
    feed_session_logs,
    session_log_files,
    text_lines,
    time_cut,
)
from rlfix.integrations.ray_order import order_workers
from rlfix.integrations.ray_owners import Ownership as Ownership  # re-exported: the ownership of a folder's files
from rlfix.report import Report

#: Kinds of shared log that name no job by design (`is_node_only`).
NODE_ONLY_KINDS = frozenset({"autoscaler"})
#: Seconds after a job ends that its shared-log lines still belong to it (Ray reports a kill or a
#: dropped lease a moment after the driver exits), unless another job starts sooner.
AFTER_END_S = 10.0
#: Seconds a window reaches past its end (see `JobSpan.window`).
WINDOW_SLACK = 1.0

_REGISTER = re.compile(r"^\[([\d:, -]+?) [IWEF] .*Registering job\. job_id=(\w+) driver_pid=(\d+)")
_FINISH = re.compile(r"^\[([\d:, -]+?) [IWEF] .*Marking job as finished\. job_id=(\w+)")
_SUPERVISOR_JOB = re.compile(r"\bjob_id=(\w+)")
_STATUS = re.compile(r"^Completed a ray job (\S+) with a status (\w+)\.\s*(.*)", re.S)
_DRIVER_FILE = re.compile(r"^job-driver-(.+)\.log$")
_STAMP = re.compile(r"^\[?(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?)")
#: A pid has at most this many digits (Linux caps pids at 2^22); a longer run of digits is not one.
_MAX_PID_DIGITS = 10
#: Event times outside these (seconds since 1970 UTC: 1970 to the year 3000) are no times (NaN fails both).
_EARLIEST, _LATEST = 0.0, 32_503_680_000.0


@dataclass(frozen=True)
class JobSpan:
    """One job of a cluster: its ids, when it ran (epoch seconds), and what Ray said of its end."""

    submission_id: str | None = None
    #: The job id in hex (`02000000`); None when the job never got a driver.
    job_id: str | None = None
    start: float | None = None
    end: float | None = None
    status: str = ""
    message: str = ""
    #: Where its window ends: `end` + `AFTER_END_S`, or the next job's start if that is sooner.
    until: float | None = None
    #: How a submission's job id is known (`ray_links`: the Jobs API, the driver log, or unknown).
    job_id_from: str = ""

    @property
    def key(self) -> str:
        """The job's name in reports: its submission id, else its job id."""
        return self.submission_id or self.job_id or "?"

    @property
    def label(self) -> str:
        """`raysubmit_… (job 02000000)`, or the one id there is."""
        if self.submission_id and self.job_id:
            return f"{self.submission_id} (job {self.job_id})"
        if self.submission_id and self.job_id_from == UNKNOWN:
            return f"{self.submission_id} (job id unknown)"
        return self.key

    @property
    def supervised(self) -> bool:
        """Whether the submission may be what its supervisor's trouble is about: it has no job id and no
        driver of it is known to have run (a driver that ran is past its runtime_env)."""
        return self.job_id is None and self.job_id_from != UNKNOWN

    def window(self) -> Window | None:
        """The window of the shared logs, in seconds since 1970 UTC (`Since`); None without a start.

        Ray's job events give whole seconds, so the window starts at its start's second; it ends
        `WINDOW_SLACK` after `until` (a process stamps a line a moment before it is written).
        """
        if self.start is None:
            return None
        until = self.until if self.until is not None else (self.end + AFTER_END_S if self.end else None)
        return float(math.floor(self.start)), until + WINDOW_SLACK if until is not None else None

    def to_dict(self) -> dict[str, Any]:
        """The job as JSON: ids, window (ISO 8601 UTC, as `rlfix triage` writes times), Ray's status and message."""
        window = self.window()
        return {
            "job": self.key,
            "submission_id": self.submission_id,
            "job_id": self.job_id,
            "job_id_from": self.job_id_from or None,
            "start": utc_text(window[0]) if window else None,
            "until": utc_text(window[1]) if window else None,
            "status": self.status,
            "message": self.message.splitlines()[0] if self.message else "",
        }


def clip(spans: Iterable[JobSpan], after_end: float = AFTER_END_S) -> list[JobSpan]:
    """Spans by start time, each with `until`: its end plus `after_end`, cut at the next job's start."""
    ordered = sorted(spans, key=lambda s: (s.start is None, s.start or 0.0, s.key))
    starts = [s.start for s in ordered if s.start is not None]
    out = []
    for span in ordered:
        until = None
        if span.end is not None:
            until = span.end + after_end
            later = [t for t in starts if span.end <= t < until]
            until = min([until, *later])
        out.append(replace(span, until=until))
    return out


# --- spans from the files ----------------------------------------------------------------


def utc_text(seconds: float | None) -> str | None:
    """A time as rlfix shows times of a fleet or a cluster: ISO 8601 UTC to the second (`…T18:43:05Z`)."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(stamp: str) -> float | None:
    """A node log's stamp (local time, no zone) as seconds since 1970 UTC, by `rlfix.clock`'s rules."""
    return epoch(parse(stamp))


def _driver_jobs(logs: Path) -> dict[str, list[Any]]:
    """job id -> [registered, finished, driver pid] from the GCS log (rotated copies too)."""
    found: dict[str, list[Any]] = {}
    for path in sorted([*logs.glob("gcs_server.out*"), *logs.glob("old/gcs_server.out*")]):
        for line in text_lines(path):
            if "job_id=" not in line:
                continue
            m = _REGISTER.match(line)
            registered = _epoch(m.group(1)) if m else None
            if m and registered is not None:
                # A pid longer than any real one (the security audit's 5000 digits) is no pid, not a crash.
                pid = int(m.group(3)) if len(m.group(3)) <= _MAX_PID_DIGITS else None
                found[m.group(2)] = [registered, None, pid]
                continue
            m = _FINISH.match(line)
            if m and m.group(2) in found:
                found[m.group(2)][1] = _epoch(m.group(1))
    return found


def _internal_jobs(logs: Path) -> set[str]:
    """Job ids of Ray's own drivers: the dashboard's, whose actors supervise submitted jobs."""
    internal = set()
    for path in logs.glob("jobs/supervisor-*.log"):
        for line in text_lines(path):
            internal.update(_SUPERVISOR_JOB.findall(line))
            break
    return internal


def _submissions(logs: Path) -> dict[str, JobSpan]:
    """Submissions from `events/event_JOBS.log`, and from their driver logs when no event says more."""
    subs: dict[str, JobSpan] = {}
    for line in text_lines(logs / "events" / "event_JOBS.log"):
        try:
            event = json.loads(line)
            message, when = str(event["message"]), float(event["timestamp"])
        except (ValueError, KeyError, TypeError):
            continue
        if not _EARLIEST <= when <= _LATEST:  # "nan", "1e999", "-99999999999999": no time, skip the event
            continue
        done = _STATUS.match(message)
        if message.startswith("Started a ray job "):
            sub = message[len("Started a ray job ") :].rstrip(".")
            subs[sub] = replace(subs.get(sub, JobSpan(sub)), start=when)
        elif done:
            sub = done.group(1)
            # Events carry whole seconds: the end is within the second after.
            span = subs.get(sub, JobSpan(sub))
            subs[sub] = replace(span, end=when + 1, status=done.group(2), message=done.group(3))
    for path in logs.glob("job-driver-*.log"):
        sub = _DRIVER_FILE.match(path.name).group(1)  # type: ignore[union-attr]
        if sub not in subs or subs[sub].start is None:
            subs[sub] = _span_of_driver_log(path, subs.get(sub, JobSpan(sub)))
    return subs


def _span_of_driver_log(path: Path, span: JobSpan) -> JobSpan:
    """A submission's window from its driver log: its first timestamp, and the file's last write."""
    start = None
    for line in text_lines(path):
        m = _STAMP.match(line)
        if m:
            start = _epoch(m.group(1))
            break
    try:
        end = path.stat().st_mtime
    except OSError:
        end = None
    return replace(span, start=start if start is not None else end, end=span.end or end)


def session_jobs(logs: str | os.PathLike[str]) -> list[JobSpan]:
    """Every job of a session's logs folder, with its window (see the module's docstring)."""
    root = Path(logs)
    drivers = _driver_jobs(root)
    internal = frozenset(_internal_jobs(root))
    subs = _submissions(root)
    links = session_links(root, subs, internal)
    spans = {key: replace(span, job_id=links[key].job_id, job_id_from=links[key].how) for key, span in subs.items()}
    claimed = {link.job_id for link in links.values() if link.job_id}
    for job_id, (registered, finished, _pid) in sorted(drivers.items()):
        if job_id not in internal and job_id not in claimed:
            # A driver no submission's log names: a job of its own (a hand-started driver, or a quiet one).
            spans[job_id] = JobSpan(job_id=job_id, start=registered, end=finished)
    return clip(spans.values())


def merge(first: Iterable[JobSpan], second: Iterable[JobSpan]) -> list[JobSpan]:
    """Spans of `first` (the Jobs API's, say), then those of `second` naming a job `first` does not."""
    out = {s.key: s for s in first}
    by_id = {s.job_id: s.key for s in out.values() if s.job_id}
    for span in second:
        known = out.get(span.key) or (out.get(by_id[span.job_id]) if span.job_id in by_id else None)
        if known is None:
            out[span.key] = span
        elif known.start is None:
            # A job named without its times (a driver that knows only its id) takes them from the files.
            out[known.key] = replace(known, start=span.start, end=known.end or span.end)
    return clip(out.values())


def api_jobs(details: Iterable[Any]) -> list[JobSpan]:
    """Spans from the Jobs API's `list_jobs()` records (times in ms there)."""
    spans = []
    for d in details:
        start, end = getattr(d, "start_time", None), getattr(d, "end_time", None)
        status = getattr(d, "status", "")
        spans.append(
            JobSpan(
                submission_id=getattr(d, "submission_id", None),
                job_id=getattr(d, "job_id", None),
                start=start / 1000 if start else None,
                end=end / 1000 if end else None,
                status=str(getattr(status, "value", status)),
                message=str(getattr(d, "message", "") or ""),
                job_id_from=_how_known(d),
            )
        )
    return clip(spans)


def _how_known(details: Any) -> str:
    """How the Jobs API knows a submission's job id; for one it gives none, whether a driver ran: a
    driver that exited (an entrypoint that never called `ray.init`) has an exit code, a submission
    whose runtime_env could not be built has none, and only the latter may be what the dashboard's
    supervisor lines are about."""
    if getattr(details, "job_id", None):
        return FROM_API
    ended = getattr(details, "driver_exit_code", None)
    return UNKNOWN if isinstance(ended, int) else NO_DRIVER


def select(
    spans: Iterable[JobSpan], job: str | None = None, since: float | None = None, until: float | None = None
) -> list[JobSpan]:
    """The spans a user asked for: `job` (submission id or job id), and overlapping `since`..`until`."""
    out = []
    for s in spans:
        if job is not None and job not in (s.submission_id, s.job_id):
            continue
        if since is not None and s.until is not None and s.until < since:
            continue
        if until is not None and s.start is not None and s.start > until:
            continue
        out.append(s)
    return out


# --- files and lines of a job -----------------------------------------------------------


def is_shared(log: LogFile) -> bool:
    """A log every job writes to (split by time)."""
    return log.rule.kind in SHARED_KINDS


def is_node_only(log: LogFile) -> bool:
    """A log that names no job by design: the autoscaler's (`monitor.*`) sees resource demands and
    nodes, never jobs; its events are the node's section's, not read by any job's window (a job's
    own unschedulable request is named by the raylet's lease line: `ray_owners`)."""
    return log.rule.kind in NODE_ONLY_KINDS


def job_files(files: list[LogFile], span: JobSpan, owners: Ownership) -> list[LogFile]:
    """A job's own files, and the shared logs (read through the job's window) but the node's own."""

    def mine(log: LogFile) -> bool:
        if is_shared(log):
            return not is_node_only(log)
        return span.job_id is not None and owners.job_of(log.name) == span.job_id

    return _select(files, lambda submission: submission == span.submission_id, mine)


def node_files(files: list[LogFile], spans: list[JobSpan], owners: Ownership) -> list[LogFile]:
    """The files no job owns (idle workers, Ray's own actors, other logs) and the shared logs."""
    ids = {s.job_id for s in spans if s.job_id}
    subs = {s.submission_id for s in spans if s.submission_id}

    def unowned(log: LogFile) -> bool:
        return is_shared(log) or owners.job_of(log.name) not in ids

    return _select(files, lambda submission: submission not in subs, unowned)


def _select(files: list[LogFile], driver: Callable[[str], bool], other: Callable[[LogFile], bool]) -> list[LogFile]:
    """The scanned files a selection keeps: job drivers by their submission id, the rest by `other`."""
    chosen = []
    for log in files:
        if not log.rule.scan:
            continue
        submitted = _DRIVER_FILE.match(log.name)
        if driver(submitted.group(1)) if submitted else other(log):
            chosen.append(log)
    return chosen


def job_cut(span: JobSpan, owners: Ownership | None = None) -> Cut | None:
    """Shared logs through the job's window (a job without a known start reads none of them); a line
    naming a job by id, worker, pid or its submission's supervisor is kept for that job only, whatever
    its time (`ray_owners`)."""
    window = span.window()
    identity = (
        owners.identity(span.job_id, submission=span.submission_id, supervised=span.supervised)
        if owners is not None
        else None
    )
    return time_cut(None, windows=(window,) if window else ((math.inf, math.inf),), identity=identity)


def folder_files(logs: str | os.PathLike[str]) -> list[LogFile]:
    """Every file of a logs folder in reading order (no job filter)."""
    return session_log_files(logs)


# --- feeding a job's part of a logs folder -------------------------------------------------


def feed_job(triage: Triage, logs: Path, files: list[LogFile], owners: Ownership, span: JobSpan) -> str:
    """Feed a job's own files and its window of the shared logs from one logs folder.

    The job's worker files are read in the order their first errors happened (`ray_order`), not
    by name; returns the rule that ordered them ("" when fewer than two had an error line).
    """
    mine = set(job_files(files, span, owners))
    driver = logs / f"job-driver-{span.submission_id}.log" if span.submission_id else None
    used: list[str] = [""]

    def arrange(chosen: list[LogFile]) -> list[LogFile]:
        workers = [log for log in chosen if log.rule.kind == "worker"]
        order = order_workers(workers, triage.kb, driver if driver is not None and driver.is_file() else None)
        used[0] = order.by
        ordered = iter(order.files)
        return [next(ordered) if log.rule.kind == "worker" else log for log in chosen]

    feed_session_logs(triage, logs, keep=mine.__contains__, cut=job_cut(span, owners), arrange=arrange)
    return used[0]


def feed_node(
    triage: Triage,
    logs: Path,
    files: list[LogFile],
    owners: Ownership,
    spans: list[JobSpan],
    since: float | None = None,
    until: float | None = None,
) -> None:
    """Feed what belongs to no job: unowned files, and the shared logs outside every job's window.

    With `since` / `until` (epoch seconds), only shared-log lines in that time are read.
    """
    windows: list[Window] = [w for w in (s.window() for s in spans) if w is not None]
    if since is not None:
        windows.append((None, since))
    if until is not None:
        windows.append((until, None))
    known = [s.job_id for s in spans if s.job_id]
    subs = [s.submission_id for s in spans if s.submission_id]
    identity = owners.identity(None, known, submissions=subs)
    # Asked for a time, the node's own timestamped files are cut to it too, and a line that cannot
    # be placed in time (a worker file's, before any stamp) is not shown as inside it.
    cut_all = since is not None or until is not None
    outside = time_cut(None, windows=tuple(windows), outside=True, identity=identity, untimed=not cut_all)
    asked = time_cut(since, until) if cut_all else None
    # A record the identity rules give to the node (the raylet's OOM summary) is still cut to the
    # time asked for: identity says whose a line is, not when it was written.
    cut = (lambda raw: asked(outside(raw))) if asked is not None and outside is not None else outside
    mine = set(node_files(files, spans, owners))
    feed_session_logs(triage, logs, keep=lambda log: log in mine and not is_node_only(log), cut=cut, cut_all=cut_all)
    # The autoscaler's log is the node's whole, jobs' windows or not (only a time asked for cuts it).
    feed_session_logs(triage, logs, keep=lambda log: log in mine and is_node_only(log), cut=asked, cut_all=cut_all)


def driver_first(report: Report) -> Report:
    """A failure no signature knows quotes the job's own driver log first, its last error line leading.

    Issue 22 item 2: the driver log is the job's own word; a shared node log's line in its window
    (the raylet's "Disconnecting client …", which names no job) is context. Which line the input
    happened to end with depends on the order the files were read or merged in (`ray cluster` joins
    each node's part, `ray job` reads the cluster's logs after the driver's), so the order is set here.
    """
    top = report.top
    if top is None or top.id != UNRECOGNIZED_ID:
        return report
    own = [e for e in top.evidence if classify(e.source.rsplit(":", 1)[-1]).kind == "driver"]
    if not own or top.evidence[0] in own:
        return report
    last = max(own, key=lambda e: e.order)
    rest = [e for e in top.evidence if e is not last]
    lead = replace(top, evidence=(last, *sorted(rest, key=lambda e: e not in own)))
    said = report.insights
    if said.first_failure is not None and said.first_failure.id == top.id:
        first = FirstFailure(top.id, last.source, last.line, last.rank, last.worker, last.node)
        said = replace(said, first_failure=first)
    return replace(report, diagnoses=(lead, *report.diagnoses[1:]), insights=said)


def outcome(status: object, driver_exit_code: int | None = None) -> ExitStatus | None:
    """How Ray says the job ended, as the exit status a report weighs (None while it runs or when stopped).

    SUCCEEDED is a success whatever its log holds (its warnings stay warnings); FAILED is a failure
    (the driver's exit code when Ray recorded one), never a healthy job.
    """
    name = str(getattr(status, "value", status)).rsplit(".", 1)[-1].upper()
    if name == "SUCCEEDED":
        return ExitStatus(0)
    if name == "FAILED":
        return ExitStatus(driver_exit_code if isinstance(driver_exit_code, int) and driver_exit_code != 0 else 1)
    return None
