"""The retry policy (rlfix/retry.py) and the decorator that uses it, without a cluster.

The real transient fault (a Ray node killed under a job, then the job resubmitted and
succeeding) is in tests/test_ray_retry.py.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rlfix.api import diagnose
from rlfix.errors import UsageError
from rlfix.integrations.ray import diagnose_on_failure
from rlfix.report import Report
from rlfix.retry import RetryPolicy

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
NODE_DIED = (
    "ray.exceptions.NodeDiedError: Task failed because the node it was running on is dead or unavailable. "
    "Node IP: 10.0.0.{n}, node ID: {n}aed1f4f137f5554ac8c74548a3c5fed4ff0b55347e3f99179204cd1. This can happen if "
    "the node was preempted, had a hardware failure, or its raylet crashed unexpectedly."
)
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.1 GiB"


def _report(text: str) -> Report:
    return diagnose(text.encode())


def test_a_transient_cause_is_retried_up_to_the_limit() -> None:
    policy = RetryPolicy(max_retries=2)
    first = _report(f"step 1\nstep 2\n{NODE_DIED.format(n=1)}\n")
    assert first.top is not None and first.top.id == "ray-node-died"
    decision = policy.should_retry(first)
    assert decision and "retry 1 of 2" in decision.reason
    # Another node died, at another step: transient again.
    second = _report(f"step 1\nstep 2\nstep 3\nstep 4\nstep 5\n{NODE_DIED.format(n=2)}\n")
    assert policy.should_retry(second, [first])
    third = _report(f"step 9\n{NODE_DIED.format(n=3)}\n")
    refused = policy.should_retry(third, [first, second])
    assert not refused and "at most 2" in refused.reason


def test_the_same_failure_coming_back_the_same_way_is_not_transient() -> None:
    policy = RetryPolicy(max_retries=5)
    log = f"step 1\nstep 2\nstep 3\n{NODE_DIED.format(n=1)}\n"
    first, again = _report(log), _report(log)
    refused = policy.should_retry(again, [first])
    assert not refused and "came back the same way" in refused.reason


@pytest.mark.parametrize(
    ("log", "why"),
    [
        (f"step 1\n{OOM}\n", "cuda-oom calls for fix-config"),
        (
            "step 1\nValueError: reward shape mismatch: got 7 scores for 8 prompts\n",
            "python-exception calls for investigate",
        ),
        ("step 1\nsomething odd happened, exit code 3\n", "unrecognized-failure calls for investigate"),
        ("step 1\nstep 2\ntraining finished\n", "the job did not fail"),
    ],
)
def test_anything_but_a_transient_cause_is_not_retried(log: str, why: str) -> None:
    decision = RetryPolicy(max_retries=3).should_retry(_report(log))
    assert not decision
    assert why in decision.reason


def test_fixture_logs_of_a_real_node_death_are_retried() -> None:
    report = diagnose(FIXTURES / "ray-node-died--task-raylet-killed.log")
    assert RetryPolicy(1).should_retry(report)
    assert not RetryPolicy(1).should_retry(diagnose(FIXTURES / "ray-unschedulable--gpu-task.log"))


class NodeDied(Exception):
    """Stands in for ray.exceptions.NodeDiedError (no Ray needed for the decorator's own logic)."""


def test_the_decorator_runs_the_function_again_for_a_transient_failure() -> None:
    calls: list[int] = []
    err = io.StringIO()
    hook = diagnose_on_failure(exceptions=(NodeDied,), state=False, stream=err, retry=RetryPolicy(max_retries=2))

    @hook
    def train(steps: int) -> str:
        calls.append(steps)
        if len(calls) == 1:
            raise NodeDied(NODE_DIED.format(n=1))
        return f"trained {steps} steps"

    assert train(100) == "trained 100 steps"
    assert calls == [100, 100]
    assert [r.top.id for r in hook.history if r.top] == ["ray-node-died"]
    assert "rlfix: retrying: ray-node-died is transient" in err.getvalue()


def test_the_decorator_raises_what_a_rerun_would_not_fix() -> None:
    calls: list[int] = []
    hook = diagnose_on_failure(exceptions=(RuntimeError,), state=False, stream=io.StringIO(), retry=RetryPolicy(3))

    @hook
    def train() -> None:
        calls.append(1)
        raise RuntimeError(OOM)

    with pytest.raises(RuntimeError, match="CUDA out of memory"):
        train()
    assert calls == [1]
    assert hook.report is not None and hook.report.top is not None and hook.report.top.id == "cuda-oom"


def test_a_with_block_cannot_retry() -> None:
    with pytest.raises(UsageError, match="cannot run again"), diagnose_on_failure(retry=RetryPolicy(1)):
        pass
