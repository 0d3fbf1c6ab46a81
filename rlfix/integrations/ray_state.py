"""Ray's state API and dashboard log API, turned into lines a `Triage` can read.

Dead workers (`exit_type`, `exit_detail`), dead actors (`death_cause`) and dead nodes are
written as one line each in the words Ray itself uses in `gcs_server.out` and in
`ActorDiedError`, so the same signatures match them; the source of each is named
`ray-state:worker <id>`, `ray-state:actor <id>` or `ray-state:node <id>`. Intentional exits
(`INTENDED_*`, `ray.kill`, an owner that finished normally) and Ray's own job supervisors are
left out: they are not failures.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from rlfix.core import Triage
from rlfix.errors import InputError
from rlfix.integrations.ray_chatter import quiet
from rlfix.integrations.ray_connect import DEFAULT_TIMEOUT, bounded, dashboard_for
from rlfix.integrations.ray_logs import SHARED_KINDS, Identity, LogFile, Since, belongs_to_job, classify
from rlfix.integrations.ray_order import order_workers
from rlfix.integrations.ray_owners import Ownership

#: Records read per state-API list call (dead workers, dead actors).
MAX_RECORDS = 500
#: Lines taken from the end of each node log fetched over HTTP.
MAX_REMOTE_LINES = 200_000
#: Seconds a state or log request may take.
TIMEOUT = 30

_INTENDED = ("INTENDED_USER_EXIT", "INTENDED_SYSTEM_EXIT")
_SUPERVISOR_NAMESPACE = "SUPERVISOR_ACTOR_RAY_NAMESPACE"


def need_ray() -> Any:
    """Import Ray, or raise a one-line error saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise InputError("the Ray integration needs Ray: pip install 'rlfix[ray]'") from exc
    return ray


def dashboard_url(address: str | None, timeout: float = DEFAULT_TIMEOUT) -> str:
    """The dashboard (Jobs and state API) URL for an address: `http://…`, a GCS `host:port`, `auto` or None.

    With None, `RAY_API_SERVER_ADDRESS` or `RAY_ADDRESS` is used, then the local cluster. The
    dashboard is recognised with or without `http://` (`127.0.0.1:8265`, as `ray start` prints
    it); a GCS address is turned into its dashboard's URL by Ray. Each step takes at most
    `timeout` seconds and fails with one line (`InputError` / `UsageError`).
    """
    address = address or os.environ.get("RAY_API_SERVER_ADDRESS") or os.environ.get("RAY_ADDRESS")
    started = time.monotonic()
    if address and address not in ("auto", "local") and not address.startswith("ray://"):
        url = dashboard_for(address, timeout)
        if url is not None:
            return url
    probed = time.monotonic() - started  # importing Ray is not waiting for the cluster
    need_ray()
    from ray.dashboard.utils import ray_address_to_api_server_url

    where = f"cannot find a Ray cluster at {address or 'this machine'}"
    found = bounded(lambda: ray_address_to_api_server_url(address), timeout, where, spent=probed)
    return str(found).rstrip("/")


def reachable(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections at host:port (a cheap test before Ray retries for minutes)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _auth_headers() -> dict[str, str]:
    try:
        from ray._private.authentication.http_token_authentication import get_auth_headers_if_auth_enabled
    except ImportError:
        return {}
    return dict(get_auth_headers_if_auth_enabled({}))


def _field(record: Any, name: str) -> Any:
    if isinstance(record, Mapping):
        return record.get(name)
    return getattr(record, name, None)


# --- state records -> lines --------------------------------------------------------------


def worker_lines(
    address: str,
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    worker_ids: frozenset[str] | None = None,
    others: frozenset[str] = frozenset(),
) -> Iterator[tuple[str, str]]:
    """(source, line) for each worker that exited unintentionally, optionally within a time window.

    The state API keeps no job id for a worker: `worker_ids` (a job's, from its file names) narrows them,
    and `others` (other jobs' workers, from their file names) are left out whatever their time.
    """
    from ray.util.state import list_workers

    workers = list_workers(
        address=address,
        filters=[("is_alive", "=", False)],
        detail=True,
        limit=MAX_RECORDS,
        timeout=TIMEOUT,
        raise_on_missing_output=False,
    )
    for w in workers:
        exit_type = str(_field(w, "exit_type") or "")
        if not exit_type or exit_type in _INTENDED:
            continue
        end = _field(w, "end_time_ms") or 0
        if since_ms is not None and end and end < since_ms:
            continue
        if until_ms is not None and end and end > until_ms:
            continue
        if worker_ids is not None and str(_field(w, "worker_id")) not in worker_ids:
            continue
        if str(_field(w, "worker_id")) in others:
            continue
        wid, nid, ip, pid = (_field(w, k) for k in ("worker_id", "node_id", "ip", "pid"))
        detail = str(_field(w, "exit_detail") or "")
        first, *rest = detail.splitlines() or [""]
        source = f"ray-state:worker {wid}"
        yield (
            source,
            f"({str(_field(w, 'worker_type') or 'worker').lower()} pid={pid}, ip={ip}) Reporting worker exit, "
            f"worker id = {wid}, node id = {nid}, address = {ip}, exit_type = {exit_type}, exit_detail = {first}",
        )
        for line in rest:
            yield source, line


def actor_lines(address: str, *, job_id: str | None = None) -> Iterator[tuple[str, str]]:
    """(source, line) for each actor that died of something other than an intended exit."""
    from ray.util.state import list_actors

    filters: list[tuple[str, str, str | bool | int | float]] = [("state", "=", "DEAD")]
    if job_id:
        filters.append(("job_id", "=", job_id))
    actors = list_actors(
        address=address, filters=filters, detail=True, limit=MAX_RECORDS, timeout=TIMEOUT, raise_on_missing_output=False
    )
    for a in actors:
        if _field(a, "ray_namespace") == _SUPERVISOR_NAMESPACE:
            continue
        cause = _field(a, "death_cause") or {}
        messages = list(_cause_messages(cause))
        reasons = {str(r) for r in _cause_values(cause, "reason")}
        if not messages or "RAY_KILL" in reasons or any(t in m for m in messages for t in _INTENDED):
            continue
        name = _field(a, "class_name") or "actor"
        pid = _field(a, "pid")
        ip = next(iter(_cause_values(cause, "node_ip_address")), None)
        prefix = f"({name} pid={pid}" + (f", ip={ip}" if ip else "") + ") "
        source = f"ray-state:actor {_field(a, 'actor_id')}"
        for message in messages:
            for line in message.splitlines():
                if line.strip():
                    yield source, prefix + line


@dataclass(frozen=True)
class DeadNode:
    """A node the state API reports dead: its id, ip, Ray's reason, and when it died (ms since 1970)."""

    node_id: str
    ip: str
    reason: str
    end_ms: int | None = None

    def line(self) -> tuple[str, str]:
        """(source, line) in the words Ray uses for a dead node."""
        text = f"The node with node id: {self.node_id} and address: {self.ip} is dead: {self.reason}"
        return f"ray-state:node {self.node_id}", f"(raylet, ip={self.ip}) {text}"


def dead_nodes(address: str) -> list[DeadNode]:
    """Every dead node, with Ray's reason and its time of death."""
    nodes = _list_nodes(address, "DEAD", detail=True)
    return [
        DeadNode(
            str(_field(n, "node_id")),
            str(_field(n, "node_ip")),
            str(_field(n, "state_message") or "no reason recorded"),
            _field(n, "end_time_ms") or None,
        )
        for n in nodes
    ]


def node_lines(address: str) -> Iterator[tuple[str, str]]:
    """(source, line) for each dead node, with Ray's reason."""
    for node in dead_nodes(address):
        yield node.line()


def job_node_ids(address: str, job_id: str) -> set[str]:
    """The nodes a job's actors and tasks ran on (the state API records each one's node)."""
    from ray.util.state import list_actors, list_tasks

    options: dict[str, Any] = {"address": address, "limit": MAX_RECORDS, "timeout": TIMEOUT}
    found: set[str] = set()
    for lister in (list_actors, list_tasks):
        records = lister(filters=[("job_id", "=", job_id)], raise_on_missing_output=False, **options)
        found.update(str(_field(r, "node_id")) for r in records if _field(r, "node_id"))
    return found


def deaths_in_job(
    nodes: list[DeadNode], on: set[str], window: tuple[float | None, float | None] | None
) -> list[DeadNode]:
    """The dead nodes a job ran on (`on`: node ids) that died inside its window (seconds since 1970 UTC).

    A node whose time of death is unknown counts when the job ran on it; a job without a window
    (no start known) takes the deaths of its nodes whenever they happened.
    """
    start, until = window if window is not None else (None, None)
    chosen = []
    for node in nodes:
        if node.node_id not in on:
            continue
        when = node.end_ms / 1000 if node.end_ms else None
        if when is None or ((start is None or when >= start) and (until is None or when <= until)):
            chosen.append(node)
    return chosen


def feed_job_node_deaths(
    triage: Triage, address: str, job_id: str, window: tuple[float | None, float | None] | None, nodes: list[DeadNode]
) -> None:
    """Feed the deaths of the nodes a job ran on, inside its window; a failing call is noted, not raised."""
    if not nodes:
        return
    try:
        on = job_node_ids(address, job_id)
    except Exception as exc:  # the state API is alpha: its failure must not hide the log evidence
        triage.add_error(f"ray state API (nodes of job {job_id}) at {address}: {_one_line(exc)}")
        return
    for node in deaths_in_job(nodes, on, window):
        source, line = node.line()
        triage.feed(line, source)


def _cause_messages(cause: Any) -> Iterator[str]:
    """The human-readable texts inside a `death_cause` dict, whatever its shape across versions."""
    keys = ("error_message", "formatted_exception_string")
    if isinstance(cause, Mapping):
        for key, value in cause.items():
            if key in keys and isinstance(value, str) and value.strip():
                yield value
            elif isinstance(value, Mapping):
                yield from _cause_messages(value)


def _cause_values(cause: Any, key: str) -> Iterator[Any]:
    if isinstance(cause, Mapping):
        for k, value in cause.items():
            if k == key and value:
                yield value
            elif isinstance(value, Mapping):
                yield from _cause_values(value, key)


def feed_state(
    triage: Triage,
    address: str,
    *,
    job_id: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
    worker_ids: frozenset[str] | None = None,
    kinds: tuple[str, ...] = ("actors", "workers", "nodes"),
) -> None:
    """Feed dead workers, actors and nodes (`kinds`) from the state API; a failing call is noted, not raised.

    With `job_id` and no `worker_ids`, a dead worker whose files name another job (an OOM-killed task of
    a neighbour, in this job's window) is left out (`other_workers`)."""
    others = other_workers(address, job_id) if job_id and worker_ids is None and "workers" in kinds else frozenset()
    calls: list[tuple[str, Callable[[], Iterator[tuple[str, str]]]]] = [
        ("actors", lambda: actor_lines(address, job_id=job_id)),
        (
            "workers",
            lambda: worker_lines(address, since_ms=since_ms, until_ms=until_ms, worker_ids=worker_ids, others=others),
        ),
        ("nodes", lambda: node_lines(address)),
    ]
    for what, call in calls:
        if what not in kinds:
            continue
        try:
            for source, line in call():
                triage.feed(line, source)
        except Exception as exc:  # the state API is alpha: its failure must not hide the log evidence
            triage.add_error(f"ray state API ({what}) at {address}: {_one_line(exc)}")


def other_workers(address: str, job_id: str) -> frozenset[str]:
    """Worker ids whose files (`worker-<worker id>-<job id>-<pid>.out|err`) on an alive node name another
    job than `job_id`; empty when the nodes cannot be listed (then time alone decides, as before)."""
    others: set[str] = set()
    try:
        for node_id, _ip in alive_nodes(address):
            for wid, owner in Ownership.of_names(list_node_logs(address, node_id)).workers.items():
                if owner != job_id:
                    others.add(wid)
    except Exception:  # the state API is alpha: without the names, the window decides
        return frozenset()
    return frozenset(others)


# --- node logs over the dashboard's HTTP API ---------------------------------------------


class _Chunks:
    """A binary stream over an iterator of byte chunks (for `Triage.feed_stream`)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def read(self, n: int = -1) -> bytes:
        for chunk in self._chunks:
            if chunk:
                return chunk
        return b""


def _list_nodes(address: str, state: str, detail: bool = False) -> list[Any]:
    """The state API's nodes in `state` (ALIVE or DEAD)."""
    from ray.util.state import list_nodes

    # A filtered listing returns fewer nodes than the cluster has; Ray's missing-output check then
    # raises ("not reachable due to data truncation") as soon as one node has died.
    found: list[Any] = list_nodes(
        address=address,
        filters=[("state", "=", state)],
        detail=detail,
        limit=MAX_RECORDS,
        timeout=TIMEOUT,
        raise_on_missing_output=False,
    )
    return found


def alive_nodes(address: str) -> list[tuple[str, str]]:
    """(node id, node ip) of every alive node."""
    nodes = _list_nodes(address, "ALIVE")
    return sorted((str(_field(n, "node_id")), str(_field(n, "node_ip"))) for n in nodes)


def list_node_logs(address: str, node_id: str) -> list[str]:
    """File names (relative to the node's logs folder) the dashboard can serve for a node."""
    import requests

    query = urllib.parse.urlencode({"node_id": node_id, "glob": "*", "timeout": TIMEOUT})
    resp = requests.get(f"{address}/api/v0/logs?{query}", headers=_auth_headers(), timeout=TIMEOUT)
    resp.raise_for_status()
    body = resp.json()
    if body.get("result") is False:
        raise RuntimeError(body.get("msg", "log listing failed"))
    groups: Mapping[str, list[str]] = body["data"]["result"]
    return sorted({name for names in groups.values() for name in names})


def node_log_lines(address: str, node_id: str, filename: str, lines: int = MAX_REMOTE_LINES) -> list[str]:
    """A node log as lines, from the dashboard: its last `lines` lines (for worker files and live tails)."""
    import requests

    query = urllib.parse.urlencode({"node_id": node_id, "filename": filename, "lines": lines, "timeout": TIMEOUT})
    resp = requests.get(f"{address}/api/v0/logs/file?{query}", headers=_auth_headers(), timeout=TIMEOUT)
    if resp.status_code != 200:
        raise RuntimeError(f"HTTP {resp.status_code}: {resp.text[:200]}")
    return resp.content.decode("utf-8", "replace").splitlines()


def feed_node_log(
    triage: Triage,
    address: str,
    node_id: str,
    filename: str,
    source: str,
    since: float | None = None,
    until: float | None = None,
    kind: str = "",
    identity: Identity | None = None,
) -> None:
    """Stream one node log (its last `MAX_REMOTE_LINES` lines) from the dashboard into `triage`.

    With `since` / `until` (seconds since 1970 UTC), lines outside that time are dropped (for the
    cluster-wide raylet / GCS logs); with `identity`, a record that names a job is kept or dropped
    by that instead (`ray_owners`). `kind` (`ray_logs.RULES`) drops what is no job's failure in
    that kind of log (`ray_chatter`: rlfix's own report echoed in a driver log).
    """
    with _node_log(address, node_id, filename) as stream:
        plain = quiet(kind, None)
        stream = plain(stream) if plain is not None else stream
        cut = since is not None or identity is not None
        triage.feed_stream(Since(stream, since, until, identity=identity) if cut else stream, source)  # type: ignore[arg-type]


@contextlib.contextmanager
def _node_log(address: str, node_id: str, filename: str) -> Iterator[BinaryIO]:
    """One node log (its last `MAX_REMOTE_LINES` lines) from the dashboard, as a binary stream."""
    import requests

    query = urllib.parse.urlencode(
        {"node_id": node_id, "filename": filename, "lines": MAX_REMOTE_LINES, "timeout": TIMEOUT}
    )
    with requests.get(
        f"{address}/api/v0/logs/file?{query}", headers=_auth_headers(), stream=True, timeout=TIMEOUT
    ) as resp:
        if resp.status_code != 200:
            raise RuntimeError(f"HTTP {resp.status_code}: {resp.text[:200]}")
        yield _Chunks(resp.iter_content(chunk_size=1 << 20))  # type: ignore[misc]


def _feed_workers_in_order(
    triage: Triage, address: str, node_id: str, ip: str, names: list[str], driver: str | None
) -> None:
    """A job's worker files on one node, read in the order their first errors happened (`ray_order`, as
    `ray logs` reads a folder: timestamps, else the order its driver log received them), not by their
    random names. Each file is fetched once into a private temporary folder first, since the order
    needs every file's first error before any is fed; file times there are the fetch's, so unused."""
    with tempfile.TemporaryDirectory(prefix="rlfix-ray-") as tmp:
        fetched: dict[LogFile, str] = {}
        for index, name in enumerate([*names, *([driver] if driver else [])]):
            # One folder per file: `old/` may hold a file of the same name; the name keeps its pid.
            path = Path(tmp) / str(index) / name.rsplit("/", 1)[-1]
            path.parent.mkdir()
            try:
                with _node_log(address, node_id, name) as stream, path.open("wb") as out:
                    shutil.copyfileobj(stream, out)
            except Exception as exc:
                triage.add_skipped(f"ray log {ip}:{name}", _one_line(exc))
                continue
            fetched[LogFile(path, classify(path.name))] = name
        workers = [log for log, name in fetched.items() if name != driver]
        at = next((log.path for log, name in fetched.items() if name == driver), None)
        order = order_workers(workers, triage.kb, at, file_times=False)
        for log in order.files:
            with log.path.open("rb") as fh:
                triage.feed_stream(fh, f"{ip}:{fetched[log]}")


def feed_cluster_logs(
    triage: Triage,
    address: str,
    *,
    job_id: str | None = None,
    submission_id: str | None = None,
    since: float | None = None,
    until: float | None = None,
    supervised: bool | None = None,
) -> None:
    """Feed each alive node's signal-carrying logs (this job's only, when named) via the dashboard.

    Driver logs are left out: the Jobs API already gave the driver's output. With `since`,
    the cluster-wide logs (raylet, GCS, autoscaler) start at that time (and end at `until`); for a
    named job, a record of them that names a job (a job id, a worker or pid of the node's files, a
    lease, a supervisor) is read by that identity instead of its time, as offline (`ray_jobs.job_cut`).
    """
    try:
        nodes = alive_nodes(address)
    except Exception as exc:
        triage.add_error(f"ray state API (nodes) at {address}: {_one_line(exc)}")
        return
    for node_id, ip in nodes:
        try:
            names = list_node_logs(address, node_id)
        except Exception as exc:
            # A node that died since the listing cannot serve its logs: the job's own are read.
            triage.add_skipped(f"ray logs of node {ip}", _one_line(exc))
            continue
        chosen = _chosen(names, job_id, submission_id)
        identity = _identity(names, job_id, submission_id, job_id is None if supervised is None else supervised)
        # One job's worker files are ordered together (all jobs' files, read for no job, are not one run).
        kinds = {name: classify(name.rsplit("/", 1)[-1]).kind for _, name, _ in chosen}
        workers = [name for _, name, _ in sorted(chosen) if kinds[name] == "worker"] if job_id else []
        driver = next((n for n in names if submission_id and n.endswith(f"job-driver-{submission_id}.log")), None)
        for _, name, shared in sorted(chosen, key=lambda c: (c[0], c[1])):
            if name in workers:
                if name == workers[0]:  # the job's worker files together, by when each failed
                    _feed_workers_in_order(triage, address, node_id, ip, workers, driver)
                continue
            try:
                start, end = (since, until) if shared and since is not None else (None, None)
                own = identity if shared else None
                feed_node_log(triage, address, node_id, name, f"{ip}:{name}", start, end, identity=own)
            except Exception as exc:
                triage.add_skipped(f"ray log {ip}:{name}", _one_line(exc))


def _chosen(names: list[str], job_id: str | None, submission_id: str | None) -> list[tuple[int, str, bool]]:
    """The node's files to read for a job (or all jobs): (read order, name, whether shared by every job)."""
    chosen = []
    for name in names:
        base = name.rsplit("/", 1)[-1]
        rule = classify(base)
        if not rule.scan or rule.kind in ("driver", "other") or not belongs_to_job(base, job_id, submission_id):
            continue
        if rule.kind == "autoscaler" and (job_id or submission_id):
            continue  # names no job by design: the node's, not this job's (`ray_jobs.is_node_only`)
        chosen.append((rule.order, name, rule.kind in SHARED_KINDS))
    return chosen


def _identity(names: list[str], job_id: str | None, submission_id: str | None, supervised: bool) -> Identity | None:
    """Whether a shared-log record is this job's by what it names (None when no job is named).

    `supervised`: a submission whose driver never started, so a record naming the dashboard's job may
    be its supervisor's (`ray_jobs.JobSpan.supervised`)."""
    if job_id is None and submission_id is None:
        return None
    return Ownership.of_names(names).identity(job_id, submission=submission_id, supervised=supervised)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    # The state API wraps server errors as JSON text; show the message only.
    with contextlib.suppress(ValueError, AttributeError):
        first = str(json.loads(first).get("msg", first))
    return first[:300]
