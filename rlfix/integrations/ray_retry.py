"""`rlfix ray job --follow --retry N`: follow a job; when it fails for a transient cause, submit it
again, as it was, and follow the new attempt.

The resubmission keeps what the user chose: the entrypoint, the runtime_env and the entrypoint's
resources (CPUs, GPUs, memory, custom resources); its metadata keeps the original's and adds
`rlfix_retry_of` (the first attempt's submission id) and `rlfix_attempt` (1 for the first retry).
Whether to retry is `rlfix.retry.RetryPolicy`'s rule: transient causes only, at most N times,
never a failure that came back the same way.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlfix.alerts import Alert
from rlfix.errors import UsageError
from rlfix.integrations.ray import job_info, jobs_client, watch_job
from rlfix.integrations.ray_auth import auth_headers
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
        # An --address that is not the dashboard (dashboard_url resolved it to one) is the GCS.
        gcs = address if address and "://" not in address and not url.endswith(address) else None
        new_id = resubmit(url, job_id, original, len(attempts.reports), connect_timeout, gcs) if decision else None
        if on_retry is not None:
            on_retry(job_id, decision, new_id)
        if new_id is None:
            return attempts
        job_id = new_id


def resubmit(
    url: str,
    job_id: str,
    original: str,
    attempt: int,
    connect_timeout: float = DEFAULT_TIMEOUT,
    gcs_address: str | None = None,
) -> str:
    """Submit `job_id` again as it was; returns the new submission id.

    The entrypoint resources are not in what the Jobs API returns (Ray 2.60): they are read from
    the job's record in the GCS when `gcs_address` (or RAY_ADDRESS, or the local cluster) names it.
    Raises `UsageError` when they cannot be read: a resubmission without them could run elsewhere.
    """
    client = jobs_client(url, connect_timeout)
    info = job_info(client, job_id, connect_timeout)
    stored = _stored_job(url, job_id, connect_timeout)
    if not any(k in stored for k in RESUBMITTED):
        stored = _gcs_job_record(info.submission_id or job_id, gcs_address, connect_timeout)
    options: dict[str, Any] = {k: stored[k] for k in RESUBMITTED if stored.get(k) is not None}
    metadata = {**(getattr(info, "metadata", None) or {}), "rlfix_retry_of": original, "rlfix_attempt": str(attempt)}
    new_id: str = bounded(
        lambda: client.submit_job(
            entrypoint=info.entrypoint, runtime_env=getattr(info, "runtime_env", None), metadata=metadata, **options
        ),
        connect_timeout,
        f"resubmitting Ray job {job_id}",
    )
    return new_id


def _gcs_job_record(submission_id: str, gcs_address: str | None, timeout: float) -> dict[str, Any]:
    """The Jobs API's own record of a submission, from the GCS's internal key-value store."""
    address = gcs_address or _gcs_from_env()
    if address is None:
        raise UsageError(
            "--retry needs the cluster's GCS address to resubmit with the same entrypoint resources: "
            "set RAY_ADDRESS=<head ip>:6379 (the Jobs API does not return them)"
        )
    import importlib

    from ray._private import ray_constants

    # Where the Jobs API keeps a submission (ray/dashboard/modules/job/common.py, JobInfoStorageClient).
    key = f"_ray_internal_job_info_{submission_id}".encode()
    try:
        gcs_client = importlib.import_module("ray._raylet").GcsClient(address=address)
        raw = gcs_client.internal_kv_get(key, namespace=ray_constants.KV_NAMESPACE_JOB, timeout=timeout)
    except Exception as exc:  # Ray raises its own types here, none of them public
        raise UsageError(f"cannot read the job's record from the GCS at {address}: {exc}") from None
    if raw is None:
        raise UsageError(f"no Jobs API record of {submission_id} in the GCS at {address}")
    record: dict[str, Any] = json.loads(raw)
    return record


def _gcs_from_env() -> str | None:
    """RAY_ADDRESS when it is a GCS `host:port` (not a dashboard URL), else the local cluster's."""
    named = os.environ.get("RAY_ADDRESS", "").strip()
    if named and "://" not in named and named != "auto":
        return named
    current = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    try:
        return current.read_text().strip() or None
    except OSError:
        return None


def _stored_job(url: str, job_id: str, timeout: float) -> dict[str, Any]:
    """The job as the Jobs API stores it: its JSON holds the entrypoint resources, which the SDK's
    `JobDetails` (Ray 2.60) leaves out."""
    import requests

    response = requests.get(f"{url}/api/jobs/{job_id}", headers=auth_headers(), timeout=timeout)
    response.raise_for_status()
    stored: dict[str, Any] = response.json()
    return stored
