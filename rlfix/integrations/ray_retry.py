"""`rlfix ray job --follow --retry N`: follow a job; when it fails for a transient cause, submit it
again, as it was, and follow the new attempt.

The resubmission keeps what the user chose: the entrypoint, the runtime_env and the entrypoint's
resources (CPUs, GPUs, memory, custom resources); its metadata keeps the original's and adds
`rlfix_retry_of` (the first attempt's submission id) and `rlfix_attempt` (1 for the first retry).
Whether to retry is `rlfix.retry.RetryPolicy`'s rule: transient causes only, at most N times,
never a failure that came back the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlfix.alerts import Alert
from rlfix.integrations.ray import job_info, jobs_client, watch_job
from rlfix.integrations.ray_connect import DEFAULT_TIMEOUT, bounded
from rlfix.integrations.ray_state import dashboard_url
from rlfix.kb.load import KnowledgeBase
from rlfix.report import Report
from rlfix.retry import RetryDecision, RetryPolicy

#: The job fields a resubmission copies (`JobSubmissionClient.submit_job` takes them by these names).
RESUBMITTED = ("entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory", "entrypoint_resources")

OnRetry = Callable[[str, RetryDecision, "str | None"], None]


@dataclass
class Attempts:
    """Every attempt of a followed job: submission ids and reports, first first."""

    job_ids: list[str] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)

    @property
    def last(self) -> Report:
        return self.reports[-1]


def follow_with_retries(
    job_id: str,
    policy: RetryPolicy,
    *,
    address: str | None = None,
    kb: KnowledgeBase | None = None,
    on_alert: Alert | None = None,
    on_retry: OnRetry | None = None,
    connect_timeout: float = DEFAULT_TIMEOUT,
) -> Attempts:
    """Follow `job_id` to its end, resubmitting it while `policy` says the failure is transient.

    `on_retry(job_id, decision, new_job_id)` is called after each failed attempt with the
    policy's decision (and the new submission id, None when it stops there).
    """
    attempts = Attempts()
    url = dashboard_url(address, connect_timeout)
    original = job_id
    while True:
        report = watch_job(job_id, address=url, kb=kb, on_alert=on_alert, connect_timeout=connect_timeout)
        attempts.job_ids.append(job_id)
        if not report.failed:
            attempts.reports.append(report)
            return attempts
        decision = policy.should_retry(report, attempts.reports)
        attempts.reports.append(report)
        new_id = resubmit(url, job_id, original, len(attempts.reports), connect_timeout) if decision else None
        if on_retry is not None:
            on_retry(job_id, decision, new_id)
        if new_id is None:
            return attempts
        job_id = new_id


def resubmit(url: str, job_id: str, original: str, attempt: int, connect_timeout: float = DEFAULT_TIMEOUT) -> str:
    """Submit `job_id` again as it was; returns the new submission id."""
    client = jobs_client(url, connect_timeout)
    info = job_info(client, job_id, connect_timeout)
    options: dict[str, Any] = {k: getattr(info, k, None) for k in RESUBMITTED if getattr(info, k, None) is not None}
    metadata = {**(getattr(info, "metadata", None) or {}), "rlfix_retry_of": original, "rlfix_attempt": str(attempt)}
    new_id: str = bounded(
        lambda: client.submit_job(
            entrypoint=info.entrypoint, runtime_env=getattr(info, "runtime_env", None), metadata=metadata, **options
        ),
        connect_timeout,
        f"resubmitting Ray job {job_id}",
    )
    return new_id
