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
import time
from collections.abc import Mapping
from typing import Any

from rlfix.kb import KnowledgeBase
from rlfix.report import Report
from rlfix.triage import Triage

#: Evidence lines a node sends back per signature, and in all.
MAX_LINES_PER_SIGNATURE = 8
MAX_LINES_PER_NODE = 400
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
    lines.sort(key=lambda e: (e["source"], e["line"]))
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


def scan_this_node(kb: KnowledgeBase | None) -> dict[str, Any]:
    """Run inside a Ray task: triage this node's session logs and return `compact` evidence."""
    import ray

    from rlfix.integrations.ray_logs import feed_session_logs

    node = ray._private.worker.global_worker.node
    logs_dir = node.get_logs_dir_path()
    triage = Triage(kb)
    feed_session_logs(triage, logs_dir)
    out = compact(triage.report())
    out.update(node_id=ray.get_runtime_context().get_node_id(), ip=node.node_ip_address, logs_dir=logs_dir)
    return out


def merge_into(triage: Triage, results: list[Mapping[str, Any]], errors: list[str]) -> list[dict[str, Any]]:
    """Feed every node's compact evidence to `triage` (sources `<ip>:<file>`); return a summary per node."""
    nodes = []
    for result in sorted(results, key=lambda r: (str(r["ip"]), str(r["node_id"]))):
        ip = result["ip"]
        for ev in result["lines"]:
            triage.feed(ev["text"], f"{ip}:{ev['source']}", number=int(ev["line"]))
        for err in result["errors"]:
            triage.add_error(f"{ip}: {err}")
        nodes.append(
            {
                "node_id": result["node_id"],
                "ip": ip,
                "logs_dir": result["logs_dir"],
                "files": len(result["sources"]),
                "lines": sum(int(s[1]) for s in result["sources"]),
                "bytes": sum(int(s[2]) for s in result["sources"]),
                "counts": dict(result["counts"]),
            }
        )
    for err in errors:
        triage.add_error(err)
    return nodes


def with_nodes(report: Report, nodes: list[dict[str, Any]]) -> Report:
    """The report with the per-node summary under `insights["ray_nodes"]`."""
    return dataclasses.replace(report, insights={**report.insights, "ray_nodes": nodes})


def collect(kb: KnowledgeBase | None, timeout: float = SCAN_TIMEOUT) -> tuple[list[Mapping[str, Any]], list[str]]:
    """Run one scan task on every alive node of the connected cluster; return their results and failures."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    scan = ray.remote(num_cpus=0, max_retries=0)(scan_this_node)
    kb_ref = ray.put(kb)
    pending = {}
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
        ref = scan.options(scheduling_strategy=strategy, name="rlfix-scan").remote(kb_ref)
        pending[ref] = str(node.get("NodeManagerAddress") or node["NodeID"])
    results: list[Mapping[str, Any]] = []
    errors: list[str] = []
    deadline = time.monotonic() + timeout
    remaining = list(pending)
    # One result at a time, as each finishes, so the driver never holds more than the merged evidence.
    while remaining:
        ready, remaining = ray.wait(remaining, num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        try:
            results.append(ray.get(ready[0]))
        except Exception as exc:
            errors.append(f"scan on node {pending[ready[0]]} failed: {str(exc).strip().splitlines()[-1][:300]}")
    for ref in remaining:
        errors.append(f"scan on node {pending[ref]} did not finish in {timeout:.0f} s")
        ray.cancel(ref, force=True)
    return results, errors
