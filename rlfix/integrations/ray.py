"""Ray integration: diagnose a Ray job, a session's logs, a whole cluster, or a driver's failure.

Four ways in, one core: every piece of evidence (the job's driver log, node logs, the state
API's dead workers and actors, a driver-side exception) is fed to the same `rlfix.Triage`.

>>> from rlfix.integrations.ray import diagnose_job                # doctest: +SKIP
>>> diagnose_job("raysubmit_XYZ", address="http://127.0.0.1:8265").top.id  # doctest: +SKIP
'ray-oom-killer'

Ray is imported inside the functions: `import rlfix` never needs it (`pip install 'rlfix[ray]'`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

from rlfix.alerts import Alert
from rlfix.core import Triage
from rlfix.details import NodeScan
from rlfix.errors import InputError, UsageError
from rlfix.fleet.sections import NODE, JobReports, JobSection
from rlfix.integrations.alerting import Alerter
from rlfix.integrations.ray_chatter import driver_chatter, driver_lines
from rlfix.integrations.ray_connect import DEFAULT_TIMEOUT, bounded, init_quietly, ray_boundary, require_gcs
from rlfix.integrations.ray_dead import DEATHS, dead_in_folder, dead_live, from_parts, with_last_words
from rlfix.integrations.ray_jobs import (
    JobSpan,
    Ownership,
    api_jobs,
    clip,
    driver_first,
    feed_job,
    feed_node,
    folder_files,
    merge,
    outcome,
    select,
    session_jobs,
    utc_text,
)
from rlfix.integrations.ray_logs import LogFile, feed_session_logs, resolve_logs_dir
from rlfix.integrations.ray_order import BY_DRIVER_LOG, BY_FILE_TIMES, BY_TIMESTAMPS
from rlfix.integrations.ray_scan import (
    SCAN_TIMEOUT,
    JobScope,
    merge_lines,
    node_scan,
    on_every_node,
    scan_into,
    scan_jobs_this_node,
    with_nodes,
)
from rlfix.integrations.ray_state import (
    MAX_REMOTE_LINES,
    DeadNode,
    alive_nodes,
    dashboard_url,
    dead_nodes,
    feed_cluster_logs,
    feed_job_node_deaths,
    feed_node_log,
    feed_state,
    list_node_logs,
    need_ray,
    node_log_lines,
    reachable,
)
from rlfix.integrations.ray_watch import Fetch, NodeTail
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.report import Report
from rlfix.retry import RetryPolicy

__all__ = [
    "diagnose_cluster",
    "diagnose_cluster_jobs",
    "diagnose_exception",
    "diagnose_job",
    "diagnose_on_failure",
    "diagnose_session_jobs",
    "diagnose_session_logs",
    "last_failed_job",
    "watch_job",
]

OnFailure = Callable[[Report], None]

# --- jobs ------------------------------------------------------------------------------


def jobs_client(url: str, timeout: float = DEFAULT_TIMEOUT) -> Any:
    need_ray()
    from ray.job_submission import JobSubmissionClient

    return bounded(lambda: JobSubmissionClient(url), timeout, f"cannot reach the Ray Jobs API at {url}")


def job_info(client: Any, job_id: str, timeout: float = DEFAULT_TIMEOUT) -> Any:
    def ask() -> Any:
        try:
            return client.get_job_info(job_id)
        except RuntimeError as exc:
            if "not exist" in str(exc) or "404" in str(exc):
                raise UsageError(f"no Ray job {job_id!r}; `ray job list` shows the jobs") from exc
            raise

    return bounded(ask, timeout, f"Ray job {job_id}")


def _feed_status(triage: Triage, info: Any, driver_log_read: bool) -> None:
    """The Jobs API's status message: its first line only when the driver log was read (it repeats the tail)."""
    message = str(getattr(info, "message", "") or "")
    lines = message.splitlines() or [""]
    source = f"ray-job:{info.submission_id or info.job_id} status"
    triage.feed(f"Job {info.submission_id or info.job_id} {info.status}: {lines[0]}", source)
    if not driver_log_read:
        for line in lines[1:]:
            triage.feed(line, source)


def _feed_driver_log(triage: Triage, url: str, client: Any, info: Any) -> bool:
    """Stream the driver log from its node; fall back to the Jobs API's copy. Returns whether one was read."""
    source = f"job-driver-{info.submission_id}.log" if info.submission_id else f"driver of job {info.job_id}"
    node_id = getattr(info, "driver_node_id", None)
    if info.submission_id and node_id:
        try:
            feed_node_log(triage, url, node_id, f"job-driver-{info.submission_id}.log", source, kind="driver")
            return True
        except Exception:  # a dead driver node: the Jobs API keeps what it saw
            pass
    try:
        text = client.get_job_logs(info.submission_id or info.job_id)
    except RuntimeError as exc:
        triage.add_error(f"{source}: {str(exc).splitlines()[0]}")
        return False
    # As read from the node: rlfix's own report, printed there by the driver hook, is not read back.
    triage.feed_text("\n".join(driver_lines(text.split("\n"))), source)
    return bool(text)


def _span_of(client: Any, info: Any) -> JobSpan:
    """The job's window: from its start to its end plus `ray_jobs.AFTER_END_S`, cut at the next job's start."""
    key = info.submission_id or info.job_id
    try:
        spans = api_jobs(client.list_jobs())
    except Exception:  # an old Jobs API: the job alone still has its window
        spans = api_jobs([info])
    return next((s for s in spans if s.key == key), api_jobs([info])[0])


def _feed_worker_side(triage: Triage, url: str, info: Any, span: JobSpan, *, logs: bool = True) -> None:
    """State API records and node logs for this job: worker files by the job's id, shared logs by its window.

    A job that failed before its driver started has no job id: it owns no worker or actor, so only
    its driver log and the shared logs (runtime_env setup, raylet, GCS) in its window are read.
    """
    window = span.window()
    if info.job_id:
        until_ms = int(span.until * 1000) if span.until is not None else None
        feed_state(
            triage,
            url,
            job_id=info.job_id,
            since_ms=int(span.start * 1000) if span.start is not None else None,
            until_ms=until_ms,
            kinds=("actors", "workers"),
        )
        feed_job_node_deaths(triage, url, info.job_id, window, _dead_nodes(url, []))
    if logs and window is not None:
        feed_cluster_logs(
            triage,
            url,
            job_id=info.job_id,
            submission_id=info.submission_id,
            since=window[0],
            until=window[1],
            supervised=span.supervised,
        )


@ray_boundary("Ray job")
def diagnose_job(
    job_id: str,
    address: str | None = None,
    kb: KnowledgeBase | None = None,
    *,
    connect_timeout: float = DEFAULT_TIMEOUT,
) -> Report:
    """Diagnose a submitted Ray job from its driver log, the state API and its nodes' logs.

    `job_id` is the submission id (`raysubmit_…`) that `ray job submit` printed. `address` is
    the dashboard URL (`http://head:8265`), a GCS address, or None for `RAY_ADDRESS` or the
    local cluster. Works on running and finished jobs; raises `UsageError` for an unknown
    job or a wrong kind of address, and `InputError` (one line) when no cluster answers within
    `connect_timeout` seconds or any Ray client call fails.
    """
    url = dashboard_url(address, connect_timeout)
    client = jobs_client(url, connect_timeout)
    info = job_info(client, job_id, connect_timeout)
    triage = Triage(kb)
    read = _feed_driver_log(triage, url, client, info)
    _feed_status(triage, info, read)
    _feed_worker_side(triage, url, info, _span_of(client, info))
    triage.set_exit_status(outcome(info.status, getattr(info, "driver_exit_code", None)))
    return _last_words_live(triage, url, info.job_id)


def _last_words_live(triage: Triage, url: str, job_id: str | None) -> Report:
    """The report, with the job's dead workers' last words on its death and OOM-kill diagnoses."""
    report = driver_first(triage.report())
    if not job_id or not any(d.id in DEATHS for top in report.diagnoses for d in (top, *top.folded)):
        return report

    def fetch(node_id: str, name: str | None) -> list[str]:
        return list_node_logs(url, node_id) if name is None else node_log_lines(url, node_id, name)

    try:
        dead = dead_live(url, job_id, fetch, alive_nodes(url))
    except Exception as exc:  # the last words are extra: their failure must not cost the diagnosis
        logging.getLogger(__name__).debug("last words of job %s: %s", job_id, exc)
        return report
    return with_last_words(report, dead)


@ray_boundary("Ray job")
def last_failed_job(address: str | None = None, *, connect_timeout: float = DEFAULT_TIMEOUT) -> str:
    """The submission id (else job id) of the job that failed last on the cluster; `UsageError` if none did."""
    return last_failed_span(address, connect_timeout=connect_timeout).key


def last_failed_span(address: str | None = None, *, connect_timeout: float = DEFAULT_TIMEOUT) -> JobSpan:
    """The job that failed last on the cluster, with its ids and times (`last_failed_job` gives its name)."""
    url = dashboard_url(address, connect_timeout)
    client = jobs_client(url, connect_timeout)
    failed = [s for s in api_jobs(bounded(client.list_jobs, connect_timeout, "Ray job list")) if s.status == "FAILED"]
    if not failed:
        raise UsageError(f"no failed Ray job at {url}")
    return max(failed, key=lambda s: s.end or s.start or 0.0)


def picked(span: JobSpan) -> str:
    """The line `--last-failed` prints first: which job it picked (`raysubmit_… (job 0b000000), failed 2026-…Z`)."""
    when = utc_text(span.end or span.start)
    return f"rlfix: --last-failed: {span.label}" + (f", failed {when}" if when else "")


@ray_boundary("Ray job")
def watch_job(
    job_id: str,
    *,
    address: str | None = None,
    kb: KnowledgeBase | None = None,
    on_alert: Alert | None = None,
    on_failure: OnFailure | None = None,
    poll: float = 2.0,
    timeout: float | None = None,
    connect_timeout: float = DEFAULT_TIMEOUT,
) -> Report:
    """Follow a running job until it ends; alert on each new root cause as it appears.

    The driver log is streamed; every `poll` seconds the job's worker files and each node's
    `raylet.out` (from the job's start) are read too (`ray_watch.NodeTail`, bounded), so a
    memory-monitor kill or an actor's traceback alerts before the driver notices.
    `on_alert(evidence, signature_id)` is called once per root cause, on the real line: one
    raised on Ray's wrapper line waits `alerting.WRAPPER_GRACE` seconds for it. When the job
    ends, worker-side evidence (state API, node logs) is added; if it ended FAILED,
    `on_failure(report)` is called. Returns the final report (or, after `timeout` seconds, the
    report so far). Each connection step takes at most `connect_timeout` seconds.
    """
    url = dashboard_url(address, connect_timeout)
    client = jobs_client(url, connect_timeout)
    info = job_info(client, job_id, connect_timeout)
    kb_obj = kb if kb is not None else load_knowledge()
    alerter = Alerter(kb_obj, on_alert)
    triage = Triage(kb_obj, on_new=alerter.callback(lambda: triage))
    live = Triage(kb_obj, on_new=alerter.callback(lambda: live))
    start = getattr(info, "start_time", None)
    tail = NodeTail(live, _fetcher(url), since=start / 1000 if start else None)
    deadline = time.monotonic() + timeout if timeout is not None else None
    source = f"job-driver-{info.submission_id or job_id}.log"
    followed = _follow(
        client, job_id, triage, source, deadline, lambda: _poll_nodes(client, url, job_id, tail, alerter), poll
    )
    info = _wait_terminal(client, job_id, poll, deadline)
    if not followed:
        _feed_driver_log(triage, url, client, info)
    _feed_status(triage, info, True)
    if _is_terminal(info):
        _feed_worker_side(triage, url, info, _span_of(client, info))
        triage.set_exit_status(outcome(info.status, getattr(info, "driver_exit_code", None)))
    alerter.tick(force=True)
    report = _last_words_live(triage, url, info.job_id)
    alerter.ended(report)
    if on_failure is not None and str(info.status) in ("FAILED", "JobStatus.FAILED"):
        on_failure(report)
    return report


def _fetcher(url: str) -> Fetch:
    def fetch(node_id: str, name: str | None, lines: int | None) -> list[str]:
        if name is None:
            return list_node_logs(url, node_id)
        return node_log_lines(url, node_id, name, lines or MAX_REMOTE_LINES)

    return fetch


def _poll_nodes(client: Any, url: str, job_id: str, tail: NodeTail, alerter: Alerter) -> None:
    """One round of the live node tail; a failing round is skipped (the final report reads it all)."""
    try:
        info = job_info(client, job_id)
        tail.poll(alive_nodes(url), info.job_id, info.submission_id)
    except Exception as exc:
        logging.getLogger(__name__).debug("live tail of job %s: %s", job_id, exc)
    alerter.tick()


def _is_terminal(info: Any) -> bool:
    status = info.status
    return bool(status.is_terminal()) if hasattr(status, "is_terminal") else str(status) in ("FAILED", "SUCCEEDED")


def _follow(
    client: Any,
    job_id: str,
    triage: Triage,
    source: str,
    deadline: float | None,
    tick: Callable[[], None] | None = None,
    poll: float = 2.0,
) -> bool:
    """Feed the driver log line by line as it is written, and `tick()` every `poll` seconds meanwhile.

    Returns False if following failed before any line.
    """
    got_any = False

    async def tail() -> None:
        nonlocal got_any
        carry = ""
        # rlfix's own report (printed by the driver hook) is not read back, nor the autoscaler's broadcasts.
        drop = driver_chatter()
        async for chunk in client.tail_job_logs(job_id):
            got_any = True
            lines = (carry + chunk).split("\n")
            carry = lines.pop()
            for line in lines:
                triage.feed("" if drop(line.encode("utf-8", "surrogateescape")) else line, source)
            if deadline is not None and time.monotonic() > deadline:
                break
        if carry:
            triage.feed(carry, source)

    async def both() -> None:
        ticking = asyncio.ensure_future(_ticker(tick, poll)) if tick is not None else None
        try:
            await tail()
        finally:
            if ticking is not None:
                ticking.cancel()

    remaining = None if deadline is None else max(0.1, deadline - time.monotonic())
    try:
        _run_quietly(both(), remaining)
    except (RuntimeError, OSError, asyncio.TimeoutError) as exc:
        # The connection closed before the job ended: the final status still comes from polling.
        if not got_any:
            logging.getLogger(__name__).debug("following %s failed: %s", job_id, exc)
    return got_any


def _run_quietly(main: Any, timeout: float | None) -> None:
    # Ray's SDK logs "WebSocket closed ..." at INFO on every normal end; it is not news to a user.
    sdk_log = logging.getLogger("ray.dashboard.modules.job.sdk")
    level = sdk_log.level
    sdk_log.setLevel(max(level, logging.WARNING))
    try:
        asyncio.run(asyncio.wait_for(main, timeout))
    finally:
        sdk_log.setLevel(level)


async def _ticker(tick: Callable[[], None], poll: float) -> None:
    # In the loop's own thread (it blocks the driver tail for one round of HTTP requests): the
    # triages are fed and read from one thread only.
    while True:
        await asyncio.sleep(poll)
        tick()


def _wait_terminal(client: Any, job_id: str, poll: float, deadline: float | None) -> Any:
    while True:
        info = job_info(client, job_id)
        if _is_terminal(info) or (deadline is not None and time.monotonic() > deadline):
            return info
        time.sleep(poll)


# --- session logs and clusters -----------------------------------------------------------


@ray_boundary("Ray")
def diagnose_session_logs(
    directory: str | os.PathLike[str] | None = None,
    kb: KnowledgeBase | None = None,
    *,
    address: str | None = None,
    connect_timeout: float = DEFAULT_TIMEOUT,
) -> Report:
    """Diagnose a Ray session's logs folder (default: the current session's), plus the state API.

    `directory` may be a logs folder, a session folder or a Ray temp root (`/tmp/ray`). The
    state API is asked too when `address` is given, or when no folder is named and the
    session's cluster is still up; its failure is recorded in the report, never raised.
    """
    logs = resolve_logs_dir(directory)
    # Named: a cluster that cannot be reached is an error before any scan, not after it.
    named_url = dashboard_url(address, connect_timeout) if address else None
    triage = Triage(kb)
    feed_session_logs(triage, logs)
    if named_url:
        feed_state(triage, named_url)
    elif (state_address := _live_cluster(logs) if directory is None else None) is not None:
        try:
            url = dashboard_url(state_address, connect_timeout)
        except (InputError, UsageError) as exc:
            triage.add_error(str(exc))
        else:
            feed_state(triage, url)
    return triage.report()


@ray_boundary("Ray")
def diagnose_session_jobs(
    directory: str | os.PathLike[str] | None = None,
    kb: KnowledgeBase | None = None,
    *,
    address: str | None = None,
    job: str | None = None,
    since: float | None = None,
    until: float | None = None,
    connect_timeout: float = DEFAULT_TIMEOUT,
) -> JobReports:
    """Diagnose each job of a Ray session's logs folder on its own: one report per job, plus the node's.

    Jobs and their time windows come from the folder (`ray_jobs.session_jobs`) and, when
    `address` is given or the session's cluster is still up, from the Jobs API. Each job's
    report reads its own files and the shared node logs inside its window; the last section
    holds what belongs to no job. `job` (a submission id or job id) keeps one job, `since` /
    `until` (epoch seconds) the jobs that ran then. Raises `UsageError` for an unknown `job`.
    """
    logs = resolve_logs_dir(directory)
    kb_obj = kb if kb is not None else load_knowledge()
    errors: list[str] = []
    spans = session_jobs(logs)
    url = None
    if address:
        # Asked for by name: a cluster that cannot be reached is an error before any report, not after.
        url = dashboard_url(address, connect_timeout)
        listed = bounded(jobs_client(url, connect_timeout).list_jobs, connect_timeout, f"Ray job list at {url}")
        spans = merge(api_jobs(listed), spans)
    elif (state_address := _live_cluster(logs) if directory is None else None) is not None:
        try:
            url = dashboard_url(state_address, connect_timeout)
            spans = merge(api_jobs(jobs_client(url, connect_timeout).list_jobs()), spans)
        except Exception as exc:  # the folder alone still says which job is which
            errors.append(f"Ray Jobs API at {state_address}: {str(exc).strip().splitlines()[0][:300]}")
    chosen = _chosen(spans, job, since, until, str(logs))
    files = folder_files(logs)
    owners = Ownership.of(files)
    nodes = _dead_nodes(url, errors)
    sections = [_folder_section(logs, files, owners, span, kb_obj, url, nodes) for span in chosen]
    node = None
    if job is None:
        triage = Triage(kb_obj)
        feed_node(triage, logs, files, owners, spans, since, until)
        if url:
            feed_state(triage, url, kinds=("nodes",))
        node = JobSection(NODE, _NODE_HEADING, triage.report())
    return JobReports(tuple(sections), node, title="rlfix: Ray session", errors=tuple(errors))


_NODE_HEADING = "findings of no job (node logs outside every job's time)"


def _chosen(
    spans: list[JobSpan], job: str | None, since: float | None, until: float | None, where: str
) -> list[JobSpan]:
    chosen = select(spans, job, since, until)
    if job is not None and not chosen:
        known = ", ".join(s.key for s in spans[:10]) or "none"
        raise UsageError(f"no job {job!r} in {where} (jobs: {known})")
    return chosen


def _heading(span: JobSpan) -> str:
    """`job raysubmit_… (job 02000000): FAILED, 2026-11-23T18:43:05Z to 18:43:36Z`: UTC, as the table's times."""
    head = f"job {span.label}" + (f": {span.status}" if span.status else "")
    window = span.window()
    if window is None:
        return head
    start, until = utc_text(window[0]) or "", utc_text(window[1]) or "now"
    # The end on the start's day is written as its time only.
    return f"{head}, {start} to {until[11:] if until[:10] == start[:10] else until}"


def _folder_section(
    logs: Path,
    files: list[LogFile],
    owners: Ownership,
    span: JobSpan,
    kb: KnowledgeBase,
    url: str | None,
    nodes: list[DeadNode],
) -> JobSection:
    """One job of a logs folder: its files, its window of the shared logs, its dead actors, workers and nodes."""
    triage = Triage(kb)
    worker_order = feed_job(triage, logs, files, owners, span)
    triage.set_exit_status(outcome(span.status))
    if url and span.job_id:
        workers = frozenset(w for w, j in owners.workers.items() if j == span.job_id)
        feed_state(triage, url, job_id=span.job_id, worker_ids=workers, kinds=("actors", "workers"))
        feed_job_node_deaths(triage, url, span.job_id, span.window(), nodes)
    report = driver_first(triage.report())
    if span.job_id:
        report = with_last_words(report, dead_in_folder(logs, span.job_id))
    heading = _heading(span) + (f"; worker files read in {_ORDER_WORDS[worker_order]}" if worker_order else "")
    return JobSection(span.key, heading, report, {**span.to_dict(), "worker_order": worker_order or None})


#: How a section's heading says which rule ordered its worker files (`ray_order`).
_ORDER_WORDS = {BY_TIMESTAMPS: "timestamp order", BY_DRIVER_LOG: "driver-log order", BY_FILE_TIMES: "file-time order"}


def _dead_nodes(url: str | None, errors: list[str]) -> list[DeadNode]:
    """The cluster's dead nodes, asked once per report (each job takes those it ran on, in its window)."""
    if not url:
        return []
    try:
        return dead_nodes(url)
    except Exception as exc:  # the state API is alpha: its failure must not hide the log evidence
        errors.append(f"ray state API (nodes) at {url}: {str(exc).strip().splitlines()[0][:300]}")
        return []


def _live_cluster(logs: os.PathLike[str]) -> str | None:
    """The GCS address of the session owning `logs`, if that cluster still accepts connections."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(logs)))
    try:
        with open(os.path.join(root, "ray_current_cluster"), encoding="utf-8") as fh:
            address = fh.read().strip()
    except OSError:
        return None
    host, _, port = address.rpartition(":")
    return address if port.isdigit() and reachable(host, int(port)) else None


def _connect(address: str | None, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """Connect this process to a cluster unless it already is; True when we connected (and must disconnect)."""
    ray = need_ray()
    if ray.is_initialized():
        return False
    target = address or os.environ.get("RAY_ADDRESS") or "auto"
    started = time.monotonic()
    if target not in ("auto", "local") and not target.startswith("ray://"):
        require_gcs(target, timeout, "`rlfix ray cluster`")
    probed = time.monotonic() - started

    def init() -> None:
        # Run in a thread to bound it, ray.init warns that it sets no SIGTERM handler: not news to a user.
        worker_log = logging.getLogger("ray._private.worker")
        level = worker_log.level
        worker_log.setLevel(max(level, logging.ERROR))
        try:
            ray.init(address=target, log_to_driver=False, logging_level=logging.ERROR, namespace="rlfix")
        finally:
            worker_log.setLevel(level)

    init_quietly(init, timeout, f"cannot connect to a Ray cluster at {target}", spent=probed)
    return True


def _state_url() -> str | None:
    import ray

    try:
        return dashboard_url(str(ray.get_runtime_context().gcs_address))
    except Exception:
        return None


@ray_boundary("Ray cluster")
def diagnose_cluster(
    address: str | None = None,
    kb: KnowledgeBase | None = None,
    *,
    state: bool = True,
    connect_timeout: float = DEFAULT_TIMEOUT,
) -> Report:
    """Scan the session logs on every alive node, there, and merge the evidence into one report.

    One zero-CPU task is pinned to each alive node (node-affinity scheduling); each returns a
    bounded set of evidence lines, never a log. Every evidence line's source is
    `<node ip>:<file>`, and `report.insights["ray_nodes"]` summarises each node. With `state`,
    dead workers, actors and nodes from the state API are added. `address` is a GCS address,
    `ray://…`, or None (`RAY_ADDRESS`, then the local cluster); a process already connected to
    Ray uses its connection. A dashboard address is refused with the GCS one to use; connecting
    takes at most `connect_timeout` seconds; Ray client errors are one `InputError` line.
    """
    ray = need_ray()
    connected_here = _connect(address, connect_timeout)
    try:
        triage = Triage(kb)
        nodes = scan_into(triage)
        if state:
            url = _state_url()
            if url:
                feed_state(triage, url)
        return with_nodes(triage.report(), nodes)
    finally:
        if connected_here:
            ray.shutdown()


@ray_boundary("Ray cluster")
def diagnose_cluster_jobs(
    address: str | None = None,
    kb: KnowledgeBase | None = None,
    *,
    job: str | None = None,
    since: float | None = None,
    until: float | None = None,
    state: bool = True,
    connect_timeout: float = DEFAULT_TIMEOUT,
) -> JobReports:
    """Scan every alive node, there, one job at a time: one report per job, plus the nodes' own findings.

    As `diagnose_cluster`, but each node splits its logs by job (`ray_jobs`), with the jobs the
    Jobs API knows and those its files name, and sends back bounded evidence per job. `job`,
    `since` and `until` filter the jobs as in `diagnose_session_jobs`.
    """
    ray = need_ray()
    connected_here = _connect(address, connect_timeout)
    try:
        kb_obj = kb if kb is not None else load_knowledge()
        url = _state_url() if state else None
        errors: list[str] = []
        spans: list[JobSpan] = []
        if url:
            try:
                spans = api_jobs(jobs_client(url, connect_timeout).list_jobs())
            except Exception as exc:
                errors.append(f"Ray Jobs API at {url}: {str(exc).strip().splitlines()[0][:300]}")
        scope = JobScope(tuple(spans), job, since, until, node=job is None)
        scans: list[NodeScan] = []
        gathered = _gather_jobs(kb_obj, scope, errors, scans)
        return dataclasses.replace(_job_reports(gathered, kb_obj, url, job, errors), ray_nodes=tuple(scans))
    finally:
        if connected_here:
            ray.shutdown()


#: Per job key: its span, the triage its evidence is merged into, and each node's (ip, dead-worker part).
Gathered = dict[str, tuple[JobSpan, Triage, list[tuple[str, Any]]]]


def _gather_jobs(kb: KnowledgeBase, scope: JobScope, errors: list[str], scans: list[NodeScan]) -> Gathered:
    """Every node's per-job evidence merged into one `Triage` per job (key `node` for the nodes' own);
    each node's summary is appended to `scans`."""
    out: Gathered = {}
    for result in on_every_node(scan_jobs_this_node, (kb, scope), errors.append, SCAN_TIMEOUT):
        scans.append(node_scan(result))
        parts = [(span, part) for span, part in result["jobs"]]
        if result["node"] is not None:
            parts.append((JobSpan(), result["node"]))
        for span, part in parts:
            key = span.key if span.start is not None or span.job_id or span.submission_id else NODE
            _, triage, dead = out.setdefault(key, (span, Triage(kb), []))
            merge_lines(triage, result["ip"], part)
            dead.append((result["ip"], part.get("dead")))
    return out


def _job_reports(
    gathered: Gathered, kb: KnowledgeBase, url: str | None, job: str | None, errors: list[str]
) -> JobReports:
    import ray

    sections = []
    node = None
    # This process's own connection registers a job too: it is rlfix, not one of the user's.
    own = ray.get_runtime_context().get_job_id()
    spans = clip(span for key, (span, _, _) in gathered.items() if key != NODE and span.job_id != own)
    nodes = _dead_nodes(url, errors)
    for span in spans:
        _, triage, dead = gathered[span.key]
        triage.set_exit_status(outcome(span.status))
        if url and span.job_id:
            feed_state(triage, url, job_id=span.job_id, kinds=("actors",))
            feed_job_node_deaths(triage, url, span.job_id, span.window(), nodes)
        report = with_last_words(driver_first(triage.report()), from_parts(dead))
        sections.append(JobSection(span.key, _heading(span), report, span.to_dict()))
    if job is not None and not sections:
        raise UsageError(f"no job {job!r} on this cluster (`ray job list` shows the jobs)")
    if NODE in gathered:
        triage = gathered[NODE][1]
        if url:
            feed_state(triage, url, kinds=("nodes",))
        node = JobSection(NODE, _NODE_HEADING, triage.report())
    return JobReports(tuple(sections), node, title="rlfix: Ray cluster", errors=tuple(errors))


# --- the driver-side hook ----------------------------------------------------------------


def diagnose_exception(
    exc: BaseException,
    kb: KnowledgeBase | None = None,
    *,
    cluster: bool = False,
    state: bool = True,
    since: float | None = None,
) -> Report:
    """Diagnose an exception raised in a Ray driver, with the worker-side evidence behind it.

    The exception's text and traceback come first; then, when this process is connected to
    Ray, this job's worker logs and the raylet / GCS logs of this node (or of every node with
    `cluster=True`), and the state API's dead workers and actors of this job. `since` (epoch
    seconds) drops older lines of the cluster-wide raylet / GCS logs, which hold other jobs' past.
    """
    triage = Triage(kb)
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    triage.feed_text(text, f"driver: {type(exc).__name__}")
    try:
        import ray
    except ImportError:
        return triage.report()
    if not ray.is_initialized():
        return triage.report()
    job_hex = ray.get_runtime_context().get_job_id()
    dead = []
    if cluster:
        # Every node's files of this job, and its shared logs from `since` on: never another job's.
        scope = JobScope((JobSpan(job_id=job_hex, start=since),), job=job_hex, node=False)
        parts = []
        for result in on_every_node(scan_jobs_this_node, (triage.kb, scope), triage.add_error, SCAN_TIMEOUT):
            for _span, part in result["jobs"]:
                merge_lines(triage, result["ip"], part)
                parts.append((result["ip"], part.get("dead")))
        dead = from_parts(parts)
    else:
        node: Any = ray._private.worker.global_worker.node
        logs_dir = node.get_logs_dir_path()
        feed_session_logs(triage, logs_dir, job_id=job_hex, since=since)
        dead = dead_in_folder(Path(logs_dir), job_hex)
    if state:
        url = _state_url()
        if url:
            feed_state(triage, url, job_id=job_hex, since_ms=int(since * 1000) if since else None)
    # The dead workers' last words, as `ray logs` and `ray cluster` give them (ray_dead.combine).
    return with_last_words(triage.report(), dead)


class diagnose_on_failure(contextlib.ContextDecorator):
    """Wrap Ray driver code: a Ray error escaping it is diagnosed, printed and attached, then re-raised.

    >>> from rlfix.integrations.ray import diagnose_on_failure   # doctest: +SKIP
    >>> with diagnose_on_failure():                              # doctest: +SKIP
    ...     trainer.fit()

    or as a decorator, `@diagnose_on_failure()`. The exception is never swallowed: the report
    is printed to `stream` (stderr), attached as `exc.rlfix_report`, added as a note to the
    traceback, and kept as `.report` on this object. `exceptions` defaults to Ray's
    `RayError` family (RayTaskError, ActorDiedError, OutOfMemoryError, GetTimeoutError, ...).
    A failure of rlfix itself prints one line and leaves the original exception untouched.

    With `retry=RetryPolicy(max_retries=N)` (decorator form only: a `with` block cannot run its
    body again), a failure the policy calls transient (`rlfix.retry`) runs the function again,
    up to N times; `.history` keeps the report of every failed attempt. Any other failure is
    raised as without `retry`.
    """

    def __init__(
        self,
        *,
        kb: KnowledgeBase | None = None,
        exceptions: tuple[type[BaseException], ...] | None = None,
        stream: IO[str] | None = None,
        fmt: str = "text",
        cluster: bool = False,
        state: bool = True,
        on_report: OnFailure | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.kb = kb
        self.retry = retry
        self.history: list[Report] = []
        self._attempting = False
        self.exceptions = exceptions
        self.stream = stream
        self.fmt = fmt
        self.cluster = cluster
        self.state = state
        self.on_report = on_report
        self.report: Report | None = None
        self._entered: float | None = None

    def __enter__(self) -> diagnose_on_failure:
        if self.retry is not None and not self._attempting:
            raise UsageError("a `with` block cannot run again: put @diagnose_on_failure(retry=...) on a function")
        # The raylet and GCS logs are shared by every job: only what they say from now on counts.
        self._entered = time.time()
        return self

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:  # type: ignore[override]
        if self.retry is None:
            return super().__call__(func)
        policy = self.retry

        @functools.wraps(func)
        def attempts(*args: Any, **kwargs: Any) -> Any:
            self.history = []
            while True:
                self.report = None
                try:
                    self._attempting = True
                    with self:
                        return func(*args, **kwargs)
                except BaseException:
                    report = self.report
                    if report is None:
                        raise
                    decision = policy.should_retry(report, self.history)
                    print(
                        f"rlfix: {'retrying' if decision else 'not retrying'}: {decision.reason}", file=self._stream()
                    )
                    self.history.append(report)
                    if not decision:
                        raise
                finally:
                    self._attempting = False

        return attempts

    def _stream(self) -> IO[str]:
        return self.stream if self.stream is not None else sys.stderr

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Literal[False]:
        if exc is None or not isinstance(exc, self._wanted()):
            return False
        stream = self.stream if self.stream is not None else sys.stderr
        try:
            report = diagnose_exception(exc, self.kb, cluster=self.cluster, state=self.state, since=self._entered)
        except Exception as err:  # rlfix must never hide the job's own error
            print(f"rlfix: could not diagnose the failure: {err}", file=stream)
            return False
        self.report = report
        with contextlib.suppress(AttributeError, TypeError):
            exc.rlfix_report = report  # type: ignore[attr-defined]
        if report.top is not None and hasattr(exc, "add_note"):
            exc.add_note(f"rlfix: most likely cause: {report.top.id} ({report.top.title})")
        options: dict[str, Any] = {"color": False} if self.fmt == "text" else {}
        print(report.render(self.fmt, **options), file=stream, end="")
        if self.on_report is not None:
            self.on_report(report)
        return False

    def _wanted(self) -> tuple[type[BaseException], ...]:
        if self.exceptions is not None:
            return self.exceptions
        try:
            from ray.exceptions import RayError
        except ImportError:
            return ()
        return (RayError,)
