"""Live watching of a Ray job beyond its driver: its workers' files and the raylet log, and alerts
that fire once per root cause, on the real line rather than Ray's wrapper of it.

`NodeTail` polls each alive node (through the dashboard's log API) for the job's
`worker-…-<job id>-….err|out` files and `raylet.out`, and feeds the lines written since the last
poll, with the file's own line numbers, to a `Triage`: a memory-monitor kill or an actor's
traceback alerts before the driver hears of it. It is bounded: at most `MAX_FILES` files per
node, and after the first read of a file only its last `TAIL_LINES` lines are fetched (a file
that grew by more is read again whole, up to the dashboard's `MAX_REMOTE_LINES`). Raylet lines
older than the job's start are skipped.

`Alerter` makes one alert per root cause across every stream. Ray prints a wrapper line before
the real exception ("ray.exceptions.RayTaskError(ValueError): ray::Actor.method() ...", or the
coloured "ray::Actor.method()" prefix); an alert raised on such a line waits up to
`WRAPPER_GRACE` seconds, then names the first non-wrapper line of that finding if one came.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rlfix.alerts import Alert
from rlfix.clock import epoch, parse
from rlfix.conclude.handled import logged_as_warning
from rlfix.core import Triage
from rlfix.integrations.ray_owners import Ownership
from rlfix.kb.load import KnowledgeBase
from rlfix.model import Evidence, Severity
from rlfix.report import Report

#: Seconds an alert raised on Ray's wrapper line waits for the real exception line after it.
WRAPPER_GRACE = 2.0
#: Lines fetched from the end of a file already read once.
TAIL_LINES = 2000
#: Worker files followed per node (the newest first).
MAX_FILES = 32

_WRAPPER = re.compile(r"ray\.exceptions\.\w+\(\w*\)?:?|(?:\x1b\[36m)?ray::[\w.]+\(\)")
_WORKER_FILE = re.compile(r"^worker-([0-9a-f]+)-([0-9a-f]+)-(\d+)\.(?:out|err)$")
_STAMP = re.compile(r"^\[?(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)")


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


@dataclass
class _File:
    count: int = 0
    last: str | None = None


#: fetch(node id, file name or None to list the node's files, lines or None for all) -> lines
Fetch = Callable[[str, "str | None", "int | None"], list[str]]


@dataclass
class NodeTail:
    """Follows a job's worker files and the raylet log on every node, feeding new lines to `triage`."""

    triage: Triage
    fetch: Fetch
    #: The job's start (seconds since 1970 UTC): older raylet lines are skipped.
    since: float | None = None
    files: dict[tuple[str, str], _File] = field(default_factory=dict)
    _keep: dict[tuple[str, str], bool] = field(default_factory=dict)
    #: Whether a raylet line is this job's by what it names (`ray_owners`); None: its time decides.
    _owned: Callable[[bytes], bool | None] | None = None

    def poll(self, nodes: list[tuple[str, str]], job_id: str | None, submission: str | None = None) -> None:
        """Read what each node's files gained since the last poll.

        A raylet record naming another job (its kill, its runtime_env failure) is never this job's:
        while the job id is not known yet (the driver is starting), a record naming any job is not.
        """
        for node_id, ip in nodes:
            names = self.fetch(node_id, None, None)
            known = job_id is not None or submission is not None
            self._owned = Ownership.of_names(names).identity(job_id, submission=submission) if known else None
            mine = [n for n in names if _is_job_file(n, job_id)][-MAX_FILES:]
            for name in [*mine, *(n for n in names if n == "raylet.out")]:
                self._advance(node_id, ip, name)

    def _advance(self, node_id: str, ip: str, name: str) -> None:
        state = self.files.setdefault((node_id, name), _File())
        new: list[str] | None = None
        if state.last is not None:
            lines = self.fetch(node_id, name, TAIL_LINES)
            at = _last_index(lines, state.last)
            new = lines[at + 1 :] if at is not None else None
        if new is None:
            # First read, or the file grew past the tail: read it whole and skip what was fed.
            new = self.fetch(node_id, name, None)[state.count :]
        for offset, line in enumerate(new, start=1):
            if name != "raylet.out" or self._in_window((node_id, name), line):
                self.triage.feed(line, f"{ip}:{name}", number=state.count + offset)
        if new:
            state.count += len(new)
            state.last = new[-1]

    def _in_window(self, key: tuple[str, str], line: str) -> bool:
        m = _STAMP.match(line)
        when = epoch(parse(m.group(1))) if m else None
        if when is not None:
            # A line's stamp is to the millisecond and the job's start to the second it began in.
            self._keep[key] = self.since is None or when >= math.floor(self.since)
        owned = self._owned(line.encode("utf-8", "surrogateescape")) if self._owned is not None else None
        if owned is not None:
            # The rest of the record (its unstamped lines) goes with what it named.
            self._keep[key] = owned
        return self._keep.get(key, False)


def _is_job_file(name: str, job_id: str | None) -> bool:
    m = _WORKER_FILE.match(name.rsplit("/", 1)[-1])
    return bool(m and job_id and m.group(2) == job_id)


def _last_index(lines: list[str], last: str) -> int | None:
    for i in range(len(lines) - 1, -1, -1):
        if lines[i] == last:
            return i
    return None
