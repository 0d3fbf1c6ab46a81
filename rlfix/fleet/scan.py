"""One job scanned into a `JobSummary`: the same `Triage` as `rlfix diagnose`, then only the summary kept."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from rlfix.clock import to_datetime
from rlfix.conclude.nodes import node_names
from rlfix.conclude.unrecognized import UNRECOGNIZED_ID as UNRECOGNIZED
from rlfix.core import Triage
from rlfix.errors import RlfixError
from rlfix.fleet.jobs import Job, iso, newest_mtime
from rlfix.fleet.model import HEALTHY, JobSummary
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.report import Report
from rlfix.templates import template

#: Characters of an evidence line or error template kept per job.
MAX_TEXT = 300


@dataclass(frozen=True)
class ScanSettings:
    """How every job is scanned; small and picklable, so worker processes and Ray tasks get it as is."""

    kb_dirs: tuple[str, ...] = ()
    engine: str = "auto"
    redact: bool = True
    follow_symlinks: bool = False


@lru_cache(maxsize=4)
def knowledge(kb_dirs: tuple[str, ...]) -> KnowledgeBase:
    """The knowledge base, loaded once per process (a worker scans many jobs with it)."""
    return load_knowledge(list(kb_dirs))


def scan_job(job: Job, settings: ScanSettings, kb: KnowledgeBase | None = None) -> JobSummary:
    """Diagnose one job and keep its summary (the report is dropped here, in the worker)."""
    try:
        return _scan(job, settings, kb if kb is not None else knowledge(settings.kb_dirs))
    except (RlfixError, OSError) as exc:
        # One unreadable job (a session folder without logs, a vanished file) must not stop the fleet.
        return JobSummary(job=job.path, cause=HEALTHY, key=HEALTHY, errors=(str(exc),))


def _scan(job: Job, settings: ScanSettings, kb: KnowledgeBase) -> JobSummary:
    # No timeline: the fleet never draws one, and without it repeats of a known line cost nothing.
    triage = Triage(kb, engine=settings.engine, redact=settings.redact, timeline=False)
    if job.ray:
        from rlfix.integrations.ray_logs import feed_session_logs, resolve_logs_dir

        feed_session_logs(triage, resolve_logs_dir(job.path))
    else:
        triage.feed_paths([job.path], strict=False, follow_symlinks=settings.follow_symlinks)
    report = triage.report()
    triage.close()
    return summarize(job.path, report, newest_mtime(job.path))


def summarize(name: str, report: Report, mtime: float | None) -> JobSummary:
    """The fleet's view of one job's report."""
    top = report.top
    read = [s for s in report.sources if not s.skipped]
    common: dict[str, Any] = {
        "job": name,
        "ids": tuple(report.ids),
        "frameworks": tuple(report.context.active_frameworks()),
        "files": len(read),
        "lines": sum(s.lines for s in read),
        "bytes": sum(s.bytes for s in read),
        "errors": tuple(report.errors),
    }
    # The parsed time of the line, with the year its input's other stamps gave it when it had none.
    stamp = to_datetime(top.first.time) if top is not None else None
    if stamp is not None:
        common.update(seen=iso(stamp), seen_from="log")
    elif mtime is not None:
        common.update(seen=iso(datetime.fromtimestamp(mtime, timezone.utc)), seen_from="mtime")
    if top is None:
        return JobSummary(cause=HEALTHY, key=HEALTHY, title="no failure recognised", **common)
    first = top.first
    evidence: dict[str, Any] = {
        "evidence": first.text[:MAX_TEXT],
        "evidence_source": first.source,
        "evidence_line": first.line,
        "action": top.action.value,
        "owner": top.owner.value,
        "nodes": tuple(n[:MAX_TEXT] for n in node_names(top)),
    }
    if top.id != UNRECOGNIZED:
        return JobSummary(cause=top.id, key=top.id, title=top.title, **evidence, **common)
    known = top.details.unrecognized
    # The most recent error template is where the job died; jobs that died the same way group together.
    shape = known.templates[0].template if known is not None and known.templates else template(first.message)
    shape = shape[:MAX_TEXT]
    return JobSummary(
        cause=UNRECOGNIZED, key=f"{UNRECOGNIZED}: {shape}", title=top.title, template=shape, **evidence, **common
    )
