"""Live alerts: one per root cause, on the real line, never on what the run goes past.

Shared by every face that watches a job as it runs (`rlfix diagnose --follow`, `rlfix run`,
`rlfix ray job --follow`), so that they alert alike. A warning-severity signature is a note, never
an alert; a root first seen on a line its program logged as a warning waits for the end and alerts
only if the final report still names it; a root another alerted root explains (the NCCL timeouts
after a CUDA error) is its symptom; an uncaught exception after an alerted root is too. A job that
ends failed with nothing alerted (an actor SIGKILLed: only symptoms were printed) alerts at its end.
Ray prints a wrapper line before the real exception ("ray.exceptions.RayTaskError(ValueError):
ray::Actor.method() ..."): an alert raised on one waits up to `WRAPPER_GRACE` seconds for the real
line after it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rlfix.alerts import Alert
from rlfix.conclude.handled import logged_as_warning
from rlfix.core import Triage
from rlfix.kb.load import KnowledgeBase
from rlfix.model import Evidence, Severity
from rlfix.report import Report

#: Seconds an alert raised on Ray's wrapper line waits for the real exception line after it.
WRAPPER_GRACE = 2.0

_WRAPPER = re.compile(r"ray\.exceptions\.\w+\(\w*\)?:?|(?:\x1b\[36m)?ray::[\w.]+\(\)")


def is_wrapper(text: str) -> bool:
    """Whether a line is Ray's wrapper of an exception raised elsewhere (the real line follows)."""
    return bool(_WRAPPER.search(text)) and not re.search(r"^\s*\w+(?:Error|Exception): ", text)


@dataclass
class Alerter:
    """One alert per root cause across several triages; wrapper lines wait for the real line."""

    kb: KnowledgeBase
    on_alert: Alert | None
    grace: float = WRAPPER_GRACE
    clock: Callable[[], float] = time.monotonic
    seen: set[str] = field(default_factory=set)
    pending: list[tuple[Evidence, str, float, Triage]] = field(default_factory=list)
    #: Alerts of roots another root explains, waiting `grace` for it (dropped when it comes).
    explainable: list[tuple[Evidence, str, float]] = field(default_factory=list)
    #: Roots first seen on a line logged as a warning, waiting for the job's end to say whether the
    #: run went past them (`ended`).
    warned: dict[str, Evidence] = field(default_factory=dict)

    def callback(self, triage: Callable[[], Triage]) -> Alert:
        """The `on_new` for a triage (given lazily: the callback exists before the triage does)."""

        def on_new(evidence: Evidence, sig_id: str) -> None:
            sig = self.kb.get(sig_id)
            if self.on_alert is None or sig is None or not sig.is_root or sig_id in self.seen:
                return
            # A warning is worth a note in the report, never an alert (issue 22: a healthy job alerted on
            # one); the fallback (an uncaught exception) after a root already alerted, or after a warned
            # one that may be the cause, is that root's symptom.
            if sig.severity is Severity.WARNING or (sig.fallback and (self.seen or self.warned)):
                return
            if self._explained(sig_id):
                return
            if logged_as_warning(evidence):
                # Its program said "warning": Ray repeats "cannot be scheduled right now" while a request
                # waits, and a healthy job's request is often served a moment later. Whether the run went
                # past it is known at the end (issue 22: both healthy jobs alerted on it).
                self.warned.setdefault(sig_id, evidence)
                return
            self.seen.add(sig_id)
            if is_wrapper(evidence.text):
                self.pending.append((evidence, sig_id, self.clock() + self.grace, triage()))
            elif any(sig_id in other.explains for other in self.kb):
                # Its explaining root may be in a file read later in the same poll (worker files are
                # polled by name, not by when they failed): the NCCL timeouts before the CUDA error.
                self.explainable.append((evidence, sig_id, self.clock() + self.grace))
            else:
                self.on_alert(evidence, sig_id)

        return on_new

    def _explained(self, sig_id: str) -> bool:
        """Whether a root already alerted explains this one (a CUDA error explains the NCCL timeouts it
        causes on the other ranks): the symptom after the root is no second alert."""
        return any(sig_id in seen.explains for seen in map(self.kb.get, self.seen) if seen is not None)

    def ended(self, report: Report) -> None:
        """A job that ended failed of a cause never alerted (an actor SIGKILLed: Ray's `ActorDiedError` is
        a symptom, and no root line was ever printed) is alerted now, on its report's first evidence.

        A root seen only on warning lines alerts only here, and only when the report still names it the
        cause (first): a job that succeeded, or went past the warning, has no diagnosis of it."""
        top = report.top
        warned, self.warned = self.warned, {}
        # Only when nothing was alerted: a job whose root was alerted live has had its alert.
        if self.on_alert is None or not report.failed or top is None or not top.evidence or self.seen:
            return
        self.seen.add(top.id)
        self.on_alert(warned.get(top.id, top.first), top.id)

    def tick(self, force: bool = False) -> None:
        """Fire the waiting alerts whose grace is over (all of them with `force`)."""
        now = self.clock()
        due = [p for p in self.pending if force or now >= p[2]]
        self.pending = [p for p in self.pending if p not in due]
        for evidence, sig_id, _deadline, triage in due:
            assert self.on_alert is not None
            self.on_alert(_real_line(triage, sig_id, evidence), sig_id)
        waited = [p for p in self.explainable if force or now >= p[2]]
        self.explainable = [p for p in self.explainable if p not in waited]
        for evidence, sig_id, _deadline in waited:
            if not self._explained(sig_id):
                assert self.on_alert is not None
                self.on_alert(evidence, sig_id)


def _real_line(triage: Triage, sig_id: str, wrapper: Evidence) -> Evidence:
    """The first line of the finding after Ray's wrapper line that is not a wrapper itself."""
    diag = triage.report().get(sig_id)
    for ev in diag.evidence if diag is not None else ():
        if ev.source == wrapper.source and ev.line > wrapper.line and not is_wrapper(ev.text):
            return ev
    return wrapper
