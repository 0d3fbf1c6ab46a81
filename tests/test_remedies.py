"""conclude/remedies.py: which flags apply to this job, and what the log says they are now."""

from __future__ import annotations

import pytest

from rlfix.conclude.remedies import choose_remedies
from rlfix.job import JobContext
from rlfix.kb.load import load_knowledge

KB = load_knowledge()


def _applying(sig_id: str, ctx: JobContext) -> list[str]:
    return [r.flag.value for r in choose_remedies(KB.require(sig_id), ctx) if r.applies]


@pytest.mark.parametrize(
    ("context", "present", "absent"),
    [
        # OpenRLHF renamed its flags in 0.10.2: the version picks the spelling.
        (JobContext(frameworks={"openrlhf": 3}, versions={"openrlhf": "0.9.1"}), "--micro_rollout_batch_size", None),
        (JobContext(frameworks={"openrlhf": 3}, versions={"openrlhf": "0.10.3"}), None, "--micro_rollout_batch_size 4"),
        # No framework detected: every option is shown.
        (JobContext(), "CUDA_LAUNCH_BLOCKING=1", None),
    ],
)
def test_flags_follow_framework_and_version(context: JobContext, present: str | None, absent: str | None) -> None:
    flags = _applying("cuda-illegal-memory-access", context)
    if present:
        assert any(f.startswith(present) for f in flags), flags
    if absent:
        assert absent not in flags


def test_current_value_is_quoted_and_memory_fraction_lowered() -> None:
    ctx = JobContext(frameworks={"verl": 2}, settings={"actor_rollout_ref.rollout.gpu_memory_utilization": "0.9"})
    reasons = [r.reason for r in choose_remedies(KB.require("cuda-oom"), ctx) if r.reason]
    assert any("0.9 ->" in r for r in reasons), reasons


def test_eras_date_a_job_without_a_version_banner() -> None:
    ctx = JobContext(frameworks={"openrlhf": 1}, settings={"--zero_stage": "2"}).with_eras(
        (f.framework, f.versions, f.key) for s in KB for f in s.remediation.flags if f.versions
    )
    assert ctx.eras.get("openrlhf") and all("<" in v for v in ctx.eras["openrlhf"])


def test_flags_that_apply_come_first() -> None:
    remedies = choose_remedies(KB.require("cuda-illegal-memory-access"), JobContext(frameworks={"trl": 1}))
    flags = [r.applies for r in remedies]
    assert flags == sorted(flags, reverse=True)
