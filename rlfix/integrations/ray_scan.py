"""Cluster-wide triage: one scan task per alive node, compact evidence back, one merged report.

Each task is pinned to its node (node-affinity scheduling, zero CPUs so a busy cluster still
runs it), scans that node's session logs with the same `Triage`, and returns at most
`MAX_LINES_PER_NODE` evidence lines (a few per signature) plus counts: never a log. The
driver feeds those lines, with their original file and line number, into one `Triage` under
the source `<node ip>:<file>`, so the merged report names the node of every evidence line and
memory on the driver grows with the number of nodes times a small constant.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlfix.core import Triage
from rlfix.details import NodeScan
from rlfix.integrations.ray_jobs import JobSpan
from rlfix.kb.load import KnowledgeBase
from rlfix.match.normalize import normalize
from rlfix.report import Report

#: Evidence lines a node sends back per signature, and in all.
MAX_LINES_PER_SIGNATURE = 8
MAX_LINES_PER_NODE = 400
#: Traceback frames sent with an exception line, the span a traceback may have, and the largest
#: file re-read to find them.
FRAMES_KEPT = 3
MAX_TRACEBACK_SPAN = 400
MAX_CONTEXT_FILE = 64 * 1024 * 1024
_FRAME = re.compile(r'^File "[^"]+", line \d+, in ')
#: Seconds to wait for all scan tasks.
SCAN_TIMEOUT = 600


def compact(report: Report) -> dict[str, Any]:
    """The evidence of a report, bounded: (signature, source, line, text) lines and per-signature counts."""
    lines: list[dict[str, Any]] = []
    per_sig: dict[str, int] = {}
    seen: set[tuple[str, int]] = set()

    def keep(sig_id: str, source: str, line: int, text: str) -> None:
        if (source, line) in seen or len(lines) >= MAX_LINES_PER_NODE:
            return
        if per_sig.get(sig_id, 0) >= MAX_LINES_PER_SIGNATURE:
            return
        seen.add((source, line))
        per_sig[sig_id] = per_sig.get(sig_id, 0) + 1
        lines.append({"sig": sig_id, "source": source, "line": line, "text": text})

    # The samples every diagnosis keeps first (they survive a full timeline), then the timeline.
    for diag in report.diagnoses:
        for d in (diag, *diag.folded):
            for ev in d.evidence:
                keep(d.id, ev.source, ev.line, ev.text)
    for sig_id, ev in report.timeline:
        keep(sig_id, ev.source, ev.line, ev.text)
    # By the order the files were read (a job's worker files by when they failed: `ray_order`), then
    # by line: the driver re-reads them in this order, so what came first still comes first there.
    read = {s.name: i for i, s in enumerate(report.sources)}
    lines.sort(key=lambda e: (read.get(e["source"], len(read)), e["source"], e["line"]))
    counts: dict[str, int] = {}
    for diag in report.diagnoses:
        for d in (diag, *diag.folded):
            counts[d.id] = d.count
    return {
        "lines": lines,
        "counts": counts,
        "sources": [[s.name, s.lines, s.bytes, s.skipped] for s in report.sources],
        "errors": list(report.errors),
    }


def traceback_context(path: Path, line_no: int) -> list[tuple[int, str]]:
    """The `Traceback` header and last frames before `line_no` in a file, verbatim (streamed).

    The fallback diagnosis only counts an exception line that closes a traceback, so a node
    sends these few lines along with it, and the driver's `Triage` sees the same traceback.
    """
    header: tuple[int, str] | None = None
    frames: deque[tuple[int, str]] = deque(maxlen=FRAMES_KEPT)
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if number >= line_no:
                break
            message = normalize(raw.decode("utf-8", "replace")).message
            if message.startswith("Traceback (most recent call last)"):
                header, frames = (number, raw.decode("utf-8", "replace").rstrip("\n")[:600]), deque(maxlen=FRAMES_KEPT)
            elif header is not None and _FRAME.match(message):
                frames.append((number, raw.decode("utf-8", "replace").rstrip("\n")[:600]))
    if header is None or line_no - header[0] > MAX_TRACEBACK_SPAN:
        return []
    return [header, *frames]


def _compact_with_context(triage: Triage, logs_dir: str) -> dict[str, Any]:
    """`compact` evidence of a triage over a logs folder, with the traceback lines a fallback needs."""
    out = compact(triage.report())
    fallbacks = {sig.id for sig in triage.kb if sig.fallback}
    for ev in out["lines"]:
        path = Path(logs_dir) / ev["source"]
        if ev["sig"] in fallbacks and path.is_file() and path.stat().st_size <= MAX_CONTEXT_FILE:
            ev["before"] = traceback_context(path, int(ev["line"]))
    return out


def _node_identity() -> dict[str, Any]:
    import ray

    node: Any = ray._private.worker.global_worker.node
    return {
        "node_id": ray.get_runtime_context().get_node_id(),
        "ip": node.node_ip_address,
        "logs_dir": node.get_logs_dir_path(),
    }


def scan_this_node(kb: KnowledgeBase | None) -> dict[str, Any]:
    """Run inside a Ray task: triage this node's session logs and return `compact` evidence."""
    from rlfix.integrations.ray_logs import feed_session_logs

    where = _node_identity()
    triage = Triage(kb)
    feed_session_logs(triage, where["logs_dir"])
    out = _compact_with_context(triage, where["logs_dir"])
    out.update(where)
    return out


@dataclass(frozen=True)
class JobScope:
    """What a per-job scan looks for on each node: the jobs known so far, the user's filters, and
    whether the node's own findings (no job's) are wanted."""

    spans: tuple[JobSpan, ...] = ()
    job: str | None = None
    since: float | None = None
    until: float | None = None
    node: bool = True


def scan_jobs_this_node(kb: KnowledgeBase | None, scope: JobScope) -> dict[str, Any]:
    """Run inside a Ray task: one `compact` per job of this node's logs (and the node's own), never a log.

    The jobs are those of `scope.spans` (the Jobs API's) and those this node's files name. Each
    job's part carries what this node knows of its dead workers (`ray_dead.folder_parts`) under `dead`.
    """
    from rlfix.integrations.ray_dead import folder_parts
    from rlfix.integrations.ray_jobs import Ownership, feed_job, feed_node, folder_files, merge, select, session_jobs

    where = _node_identity()
    logs = Path(where["logs_dir"])
    spans = merge(scope.spans, session_jobs(logs))
    chosen = select(spans, scope.job, scope.since, scope.until)
    files = folder_files(logs)
    owners = Ownership.of(files)
    jobs = []
    for span in chosen:
        triage = Triage(kb)
        feed_job(triage, logs, files, owners, span)
        part = _compact_with_context(triage, str(logs))
        part["dead"] = folder_parts(logs, span.job_id, span.window()) if span.job_id else None
        jobs.append((span, part))
    node = None
    if scope.node:
        triage = Triage(kb)
        feed_node(triage, logs, files, owners, spans, scope.since, scope.until)
        node = _compact_with_context(triage, str(logs))
    return {**where, "jobs": jobs, "node": node}


def merge_lines(triage: Triage, ip: str, result: Mapping[str, Any]) -> None:
    """Feed one node's compact evidence to `triage` under `<ip>:<file>`, with the file's own line numbers."""
    by_source: dict[str, dict[int, str]] = {}
    for ev in result["lines"]:
        lines = by_source.setdefault(str(ev["source"]), {})
        for number, text in ev.get("before", ()):
            lines.setdefault(int(number), str(text))
        lines[int(ev["line"])] = str(ev["text"])
    for source, lines in by_source.items():
        for number in sorted(lines):
            triage.feed(lines[number], f"{ip}:{source}", number=number)
    for err in result["errors"]:
        triage.add_error(f"{ip}: {err}")


def merge_node(triage: Triage, result: Mapping[str, Any]) -> NodeScan:
    """Feed one node's compact evidence to `triage` (sources `<ip>:<file>`); return the node's summary."""
    ip = result["ip"]
    merge_lines(triage, ip, result)
    return NodeScan(
        node_id=str(result["node_id"]),
        ip=str(ip),
        logs_dir=str(result["logs_dir"]),
        files=len(result["sources"]),
        lines=sum(int(s[1]) for s in result["sources"]),
        bytes=sum(int(s[2]) for s in result["sources"]),
        counts=dict(result["counts"]),
    )


def node_scan(result: Mapping[str, Any]) -> NodeScan:
    """One node's summary from its per-job scan (`scan_jobs_this_node`): the files it read, each once
    (a shared log is read by several jobs), their lines and bytes, and each signature's findings over
    its jobs and its own section."""
    sources: dict[str, tuple[int, int]] = {}
    counts: dict[str, int] = {}
    parts = [part for _, part in result["jobs"]] + ([result["node"]] if result["node"] is not None else [])
    for part in parts:
        for name, lines, size, *_ in part["sources"]:
            seen = sources.get(str(name), (0, 0))
            sources[str(name)] = (max(seen[0], int(lines)), max(seen[1], int(size)))
        for sig_id, count in part["counts"].items():
            counts[sig_id] = counts.get(sig_id, 0) + int(count)
    return NodeScan(
        node_id=str(result["node_id"]),
        ip=str(result["ip"]),
        logs_dir=str(result["logs_dir"]),
        files=len(sources),
        lines=sum(lines for lines, _ in sources.values()),
        bytes=sum(size for _, size in sources.values()),
        counts=counts,
    )


def with_nodes(report: Report, nodes: list[NodeScan]) -> Report:
    """The report with the per-node summary in `insights.ray_nodes`."""
    return dataclasses.replace(report, insights=dataclasses.replace(report.insights, ray_nodes=tuple(nodes)))


def scan_into(triage: Triage, timeout: float = SCAN_TIMEOUT) -> list[NodeScan]:
    """Scan every alive node of the connected cluster and merge the evidence into `triage`.

    Returns one summary per node (sorted by IP); a node whose scan fails or times out is
    recorded as an error of the report.
    """
    nodes: list[NodeScan] = []
    for result in on_every_node(scan_this_node, (triage.kb,), triage.add_error, timeout):
        nodes.append(merge_node(triage, result))
    return sorted(nodes, key=lambda n: (n.ip, n.node_id))


def on_every_node(
    func: Callable[..., dict[str, Any]], args: tuple[Any, ...], on_error: Callable[[str], None], timeout: float
) -> Iterator[dict[str, Any]]:
    """Run `func(*args)` as a zero-CPU task pinned to each alive node; yield each result as it arrives.

    A node whose task fails or does not finish in `timeout` seconds is reported to `on_error`.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(func)
    refs = [ray.put(a) for a in args]
    list_nodes: Any = ray.nodes
    pending = {}
    for node in list_nodes():
        if not node.get("Alive"):
            continue
        strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
        ref = task.options(scheduling_strategy=strategy, name="rlfix-scan").remote(*refs)
        pending[ref] = str(node.get("NodeManagerAddress") or node["NodeID"])
    deadline = time.monotonic() + timeout
    remaining = list(pending)
    # Merge each result as it arrives: the driver holds one node's evidence at a time, not all of them.
    while remaining:
        ready, remaining = ray.wait(remaining, num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        try:
            yield ray.get(ready[0])
        except Exception as exc:
            on_error(f"scan on node {pending[ready[0]]} failed: {str(exc).strip().splitlines()[-1][:300]}")
    for ref in remaining:
        on_error(f"scan on node {pending[ref]} did not finish in {timeout:.0f} s")
        ray.cancel(ref, force=True)
