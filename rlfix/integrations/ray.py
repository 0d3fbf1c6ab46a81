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
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import IO, Any, Literal

from rlfix.alerts import Alert
from rlfix.core import Triage
from rlfix.details import NodeScan
from rlfix.errors import InputError, UsageError
from rlfix.integrations.ray_connect import DEFAULT_TIMEOUT, bounded, ray_boundary, require_gcs
from rlfix.integrations.ray_logs import feed_session_logs, resolve_logs_dir, since_text
from rlfix.integrations.ray_scan import scan_into, with_nodes
from rlfix.integrations.ray_state import (
    dashboard_url,
    feed_cluster_logs,
    feed_node_log,
    feed_state,
    need_ray,
    reachable,
)
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.model import Evidence
from rlfix.report import Report

__all__ = [
    "diagnose_cluster",
    "diagnose_exception",
    "diagnose_job",
    "diagnose_on_failure",
    "diagnose_session_logs",
    "watch_job",
]

OnFailure = Callable[[Report], None]

#: Slack before a job's start (none: a job starting right after another must not inherit its kills)
#: and after its end (teardown) when
#: deciding which worker exits and cluster-wide log lines belong to it.
_BEFORE_START_MS = 0
_AFTER_END_MS = 10_000


# --- jobs ------------------------------------------------------------------------------


def _client(url: str, timeout: float = DEFAULT_TIMEOUT) -> Any:
    need_ray()
    from ray.job_submission import JobSubmissionClient

    return bounded(lambda: JobSubmissionClient(url), timeout, f"cannot reach the Ray Jobs API at {url}")


def _job_info(client: Any, job_id: str, timeout: float = DEFAULT_TIMEOUT) -> Any:
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
            feed_node_log(triage, url, node_id, f"job-driver-{info.submission_id}.log", source)
            return True
        except Exception:  # a dead driver node: the Jobs API keeps what it saw
            pass
    try:
        text = client.get_job_logs(info.submission_id or info.job_id)
    except RuntimeError as exc:
        triage.add_error(f"{source}: {str(exc).splitlines()[0]}")
        return False
    triage.feed_text(text, source)
    return bool(text)


def _feed_worker_side(triage: Triage, url: str, info: Any, *, logs: bool = True) -> None:
    """State API records and node logs for this job (worker files filtered by the job's id)."""
    since = getattr(info, "start_time", None)
    until = getattr(info, "end_time", None)
    feed_state(
        triage,
        url,
        job_id=info.job_id,
        since_ms=since - _BEFORE_START_MS if since else None,
        until_ms=until + _AFTER_END_MS if until else None,
    )
    if logs:
        cut = since_text((since - _BEFORE_START_MS) / 1000) if since else None
        end = since_text((until + _AFTER_END_MS) / 1000) if since and until else None
        feed_cluster_logs(triage, url, job_id=info.job_id, submission_id=info.submission_id, since=cut, until=end)


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
    client = _client(url, connect_timeout)
    info = _job_info(client, job_id, connect_timeout)
    triage = Triage(kb)
    read = _feed_driver_log(triage, url, client, info)
    _feed_status(triage, info, read)
    _feed_worker_side(triage, url, info)
    return triage.report()


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
    """Follow a running job's driver log until it ends; alert on each new root cause as it appears.

    `on_alert(evidence, signature_id)` is called the first time each root cause matches, while
    the job still runs. When the job ends, worker-side evidence (state API, node logs) is
    added; if it ended FAILED, `on_failure(report)` is called. Returns the final report (or,
    after `timeout` seconds, the report so far). Each connection step takes at most
    `connect_timeout` seconds.
    """
    url = dashboard_url(address, connect_timeout)
    client = _client(url, connect_timeout)
    info = _job_info(client, job_id, connect_timeout)
    kb_obj = kb if kb is not None else load_knowledge()

    def alert(evidence: Evidence, sig_id: str) -> None:
        sig = kb_obj.get(sig_id)
        if on_alert is not None and sig is not None and sig.is_root:
            on_alert(evidence, sig_id)

    triage = Triage(kb_obj, on_new=alert)
    deadline = time.monotonic() + timeout if timeout is not None else None
    source = f"job-driver-{info.submission_id or job_id}.log"
    followed = _follow(client, job_id, triage, source, deadline)
    info = _wait_terminal(client, job_id, poll, deadline)
    if not followed:
        _feed_driver_log(triage, url, client, info)
    _feed_status(triage, info, True)
    if _is_terminal(info):
        _feed_worker_side(triage, url, info)
    report = triage.report()
    if on_failure is not None and str(info.status) in ("FAILED", "JobStatus.FAILED"):
        on_failure(report)
    return report


def _is_terminal(info: Any) -> bool:
    status = info.status
    return bool(status.is_terminal()) if hasattr(status, "is_terminal") else str(status) in ("FAILED", "SUCCEEDED")


def _follow(client: Any, job_id: str, triage: Triage, source: str, deadline: float | None) -> bool:
    """Feed the driver log line by line as it is written; False if following failed before any line."""
    got_any = False

    async def tail() -> None:
        nonlocal got_any
        carry = ""
        async for chunk in client.tail_job_logs(job_id):
            got_any = True
            lines = (carry + chunk).split("\n")
            carry = lines.pop()
            for line in lines:
                triage.feed(line, source)
            if deadline is not None and time.monotonic() > deadline:
                break
        if carry:
            triage.feed(carry, source)

    remaining = None if deadline is None else max(0.1, deadline - time.monotonic())
    # Ray's SDK logs "WebSocket closed ..." at INFO on every normal end; it is not news to a user.
    sdk_log = logging.getLogger("ray.dashboard.modules.job.sdk")
    level = sdk_log.level
    sdk_log.setLevel(max(level, logging.WARNING))
    try:
        asyncio.run(asyncio.wait_for(tail(), remaining))
    except (RuntimeError, OSError, asyncio.TimeoutError) as exc:
        # The connection closed before the job ended: the final status still comes from polling.
        if not got_any:
            logging.getLogger(__name__).debug("following %s failed: %s", job_id, exc)
    finally:
        sdk_log.setLevel(level)
    return got_any


def _wait_terminal(client: Any, job_id: str, poll: float, deadline: float | None) -> Any:
    while True:
        info = _job_info(client, job_id)
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
    triage = Triage(kb)
    feed_session_logs(triage, logs)
    state_address = address or (_live_cluster(logs) if directory is None else None)
    if state_address:
        try:
            url = dashboard_url(state_address, connect_timeout)
        except (InputError, UsageError) as exc:
            triage.add_error(str(exc))
        else:
            feed_state(triage, url)
    return triage.report()


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

    bounded(init, timeout, f"cannot connect to a Ray cluster at {target}", spent=probed)
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
    nodes: list[NodeScan] = []
    if cluster:
        nodes = scan_into(triage)
    else:
        node: Any = ray._private.worker.global_worker.node
        logs_dir = node.get_logs_dir_path()
        feed_session_logs(triage, logs_dir, job_id=job_hex, since=since_text(since) if since else None)
    if state:
        url = _state_url()
        if url:
            feed_state(triage, url, job_id=job_hex, since_ms=int(since * 1000) if since else None)
    report = triage.report()
    return with_nodes(report, nodes) if nodes else report


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
    ) -> None:
        self.kb = kb
        self.exceptions = exceptions
        self.stream = stream
        self.fmt = fmt
        self.cluster = cluster
        self.state = state
        self.on_report = on_report
        self.report: Report | None = None
        self._entered: float | None = None

    def __enter__(self) -> diagnose_on_failure:
        # The raylet and GCS logs are shared by every job: only what they say from now on counts.
        self._entered = time.time()
        return self

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
