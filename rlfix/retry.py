"""Whether to run a failed job again: `RetryPolicy(max_retries=N).should_retry(report, history)`.

The rule, in order:
1. A job that did not fail is not retried.
2. At most `max_retries` retries (`history` holds the reports of the earlier attempts, oldest first).
3. Only a cause whose action is `retry` is retried: a node lost, a preemption, a scheduler's
   cancel, an NCCL timeout with no other cause. Every other action (`fix-config`, `fix-code`,
   `fix-environment`, `cordon-node`, `report-upstream`, `investigate`) would fail the same way on a
   rerun, and an unrecognised failure is never retried: a retry would be a guess.
4. A transient cause that comes back the same way is not transient: when an earlier attempt
   failed with the same cause, the same first evidence (numbers and ids masked) and at the same
   training step, the failure is deterministic and is not retried a second time.

The same policy drives `diagnose_on_failure(retry=...)` around a function and
`rlfix ray job --follow --retry N`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rlfix.model import Action
from rlfix.report import Report
from rlfix.templates import template


@dataclass(frozen=True)
class RetryDecision:
    """Whether to retry, and the one-line reason (true in a boolean context when it says retry)."""

    retry: bool
    reason: str

    def __bool__(self) -> bool:
        return self.retry


@dataclass(frozen=True)
class RetryPolicy:
    """Retry transient failures only, at most `max_retries` times (see the module docstring)."""

    max_retries: int = 2

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, not {self.max_retries}")

    def should_retry(self, report: Report, history: Sequence[Report] = ()) -> RetryDecision:
        """Whether the job whose latest attempt `report` describes should run again.

        `history`: the reports of the attempts before it, oldest first.
        """
        if not report.failed:
            return RetryDecision(False, "the job did not fail")
        if len(history) >= self.max_retries:
            return RetryDecision(False, f"retried {len(history)} times already (at most {self.max_retries})")
        top = report.top
        if top is None:
            return RetryDecision(False, "no cause was recognised: a rerun would be a guess")
        decision = top.decision
        if decision.action is not Action.RETRY:
            return RetryDecision(False, f"{top.id} calls for {decision.action.value}, not a retry: {decision.reason}")
        if any(_same_failure(report, earlier) for earlier in history):
            return RetryDecision(False, f"{top.id} came back the same way after a retry: it is not transient")
        attempt = len(history) + 1
        return RetryDecision(True, f"{top.id} is transient ({decision.reason}); retry {attempt} of {self.max_retries}")


def _same_failure(a: Report, b: Report) -> bool:
    """Same cause, same first evidence shape, same step (when the log counts steps)."""
    return _shape(a) == _shape(b)


def _shape(report: Report) -> tuple[str, str, int | None] | None:
    top = report.top
    if top is None:
        return None
    first = top.evidence[0].message if top.evidence else ""
    return top.id, template(first), report.insights.last_step
