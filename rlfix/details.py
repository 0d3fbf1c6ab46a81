"""Typed details of a diagnosis and insights of a report, each with the JSON it has always had.

These are what renderers and integrations read; `to_dict()` keeps the JSON contract (docs/json.md)
exactly as it was when these were plain dictionaries.
"""

from __future__ import annotations

import re
import signal as _signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlfix.errors import UsageError
from rlfix.i18n import join, phrase


@dataclass(frozen=True)
class ExceptionInfo:
    """The uncaught exception behind a `python-exception` diagnosis."""

    exception: str | None = None
    message: str | None = None
    raised_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        pairs = (("exception", self.exception), ("message", self.message), ("raised_at", self.raised_at))
        return {key: value for key, value in pairs if value is not None}


@dataclass(frozen=True)
class SimilarSignature:
    """A known signature whose examples look like an unexplained error (rapidfuzz score, 0-100)."""

    id: str
    score: int

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "score": self.score}


@dataclass(frozen=True)
class ErrorTemplate:
    """Error lines that differ only in numbers, paths and ids, counted together."""

    template: str
    count: int
    source: str = ""
    line: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"template": self.template, "count": self.count}

    def to_summary(self) -> dict[str, Any]:
        """With where it was first seen (the form `insights.error_templates` uses)."""
        return {**self.to_dict(), "first": {"source": self.source, "line": self.line}}


@dataclass(frozen=True)
class UnrecognizedFailure:
    """A failure no signature knows: how the job ended and its most recent error templates."""

    exit_code: str | None
    templates: tuple[ErrorTemplate, ...] = ()
    raised_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"exit_code": self.exit_code, "templates": [t.to_dict() for t in self.templates]}
        if self.raised_at is not None:
            out["raised_at"] = self.raised_at
        return out


@dataclass(frozen=True)
class VersionMismatch:
    """Two installed packages that do not fit together: `caller` uses `callee` in a way it does not support."""

    callee: str
    caller: str | None = None
    callee_version: str | None = None
    caller_version: str | None = None
    #: What the caller's own requirements ask of the callee (`vllm>=0.10.0`), and where that is written.
    wanted: str | None = None
    wanted_source: str | None = None

    def describe(self, lang: str = "en") -> str:
        """One sentence: which two packages, at which versions, and what the caller asks for."""
        callee = f"{self.callee} {self.callee_version}" if self.callee_version else self.callee
        if self.caller is None:
            text = phrase("the installed {callee} is not the version this code was written for", lang, callee=callee)
        else:
            caller = f"{self.caller} {self.caller_version}" if self.caller_version else self.caller
            text = phrase(
                "{caller} calls {callee} in a way that version does not support", lang, caller=caller, callee=callee
            )
        if self.wanted:
            wanted = f"{self.callee}{self.wanted}"
            text += phrase("; it asks for {wanted} ({source})", lang, wanted=wanted, source=self.wanted_source)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "callee": self.callee,
            "caller": self.caller,
            "callee_version": self.callee_version,
            "caller_version": self.caller_version,
            "wanted": self.wanted,
            "wanted_source": self.wanted_source,
        }


@dataclass(frozen=True)
class CollectiveHang:
    """An NCCL hang read from every rank's watchdog report: who waits where, who differs, who is silent."""

    op: str
    seq: int
    #: Ranks waiting in the collective most ranks are in.
    waiting: tuple[int, ...]
    #: (rank, op, seq) of ranks in another collective or at another sequence number.
    odd: tuple[tuple[int, str, int], ...] = ()
    #: Ranks of the job (by world size) that never reported a timeout.
    silent: tuple[int, ...] = ()

    @property
    def culprits(self) -> tuple[int, ...]:
        """The ranks to look at first."""
        return tuple(r for r, _op, _seq in self.odd) or self.silent

    def describe(self, lang: str = "en") -> str:
        """ "rank 2 is at BROADCAST #88 while ranks 0, 1, 3 wait in ALLREDUCE #89: look at rank 2"."""
        where = f"{self.op} #{self.seq}"
        waiting = _rank_list(self.waiting)
        verb = "wait" if len(self.waiting) > 1 else "waits"
        text = ""
        if self.odd:
            parts = [
                phrase("rank {rank} is at {where}", lang, rank=r, where=f"{op} #{seq}") for r, op, seq in self.odd[:4]
            ]
            text = join(parts, lang) + (f" (+{len(self.odd) - 4})" if len(self.odd) > 4 else "")
            text += phrase(" while {ranks} {verb} in {where}", lang, ranks=waiting, verb=verb, where=where)
        else:
            text = phrase("{ranks} {verb} in {where}", lang, ranks=waiting, verb=verb, where=where)
        if self.silent:
            text += phrase(
                "; {ranks} never reported a timeout (dead or stuck before it)", lang, ranks=_rank_list(self.silent)
            )
        if self.culprits:
            return text + phrase(": look at {ranks}", lang, ranks=_rank_list(self.culprits))
        return text + phrase(
            ": every rank waits in the same collective, so the cause is outside it (a rank that stopped "
            "calling collectives, or the network)",
            lang,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "seq": self.seq,
            "waiting": list(self.waiting),
            "odd": [{"rank": r, "op": op, "seq": seq} for r, op, seq in self.odd],
            "silent": list(self.silent),
            "culprits": list(self.culprits),
        }


def _rank_list(ranks: tuple[int, ...]) -> str:
    shown = ", ".join(str(r) for r in ranks[:8]) + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")
    return f"rank{'s' if len(ranks) > 1 else ''} {shown}"


@dataclass(frozen=True)
class DeadWorker:
    """A Ray worker or actor that died, in Ray's own words, with the last lines it wrote."""

    worker_id: str
    pid: int | None = None
    #: The actor's class (None for a task's worker).
    actor: str | None = None
    node: str | None = None
    #: Ray's exit type (SYSTEM_ERROR, NODE_OUT_OF_MEMORY, USER_ERROR, ...) and the first line of its detail.
    exit_type: str | None = None
    exit_detail: str | None = None
    #: The signal that ended it, when a log says (the memory monitor kills with SIGKILL).
    signal: str | None = None
    exit_code: int | None = None
    #: (file, line, text): the last lines of its own worker-….err / .out, with the file's line numbers.
    last_lines: tuple[tuple[str, int, str], ...] = ()
    #: A kernel OOM-killer line naming its pid, if one was read.
    kernel_oom: str | None = None

    def describe(self) -> str:
        """ "Learner (pid 31513) on 10.0.0.3: SYSTEM_ERROR, Worker unexpectedly exits …"."""
        who = self.actor or "worker"
        how = [
            x
            for x in (
                self.exit_type,
                self.signal,
                f"exit code {self.exit_code}" if self.exit_code is not None else None,
            )
            if x
        ]
        text = f"{who} (pid {self.pid})" if self.pid is not None else who
        text += f" on {self.node}" if self.node else ""
        text += f": {', '.join(how)}" if how else ""
        detail = self.exit_detail or ""
        return text + (f" - {detail[:160]}…" if len(detail) > 160 else f" - {detail}" if detail else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "worker_id": self.worker_id,
            "pid": self.pid,
            "actor": self.actor,
            "node": self.node,
            "exit_type": self.exit_type,
            "exit_detail": self.exit_detail,
            "signal": self.signal,
            "exit_code": self.exit_code,
            "last_lines": [{"source": s, "line": n, "text": t} for s, n, t in self.last_lines],
            "kernel_oom": self.kernel_oom,
        }


@dataclass(frozen=True)
class Details:
    """What a diagnosis says beyond its evidence; every part optional."""

    exception: ExceptionInfo | None = None
    unrecognized: UnrecognizedFailure | None = None
    #: None when no look-up was made (only fallbacks and unrecognised failures look).
    similar: tuple[SimilarSignature, ...] | None = None
    #: Numbers in the evidence said in words ("asked for 2.00 GiB with 1.10 GiB free").
    quantities: tuple[str, ...] = ()
    #: For a version mismatch read from the traceback: which two packages.
    mismatch: VersionMismatch | None = None
    #: For an NCCL timeout on several ranks: the rank that differs or stayed silent.
    hang: CollectiveHang | None = None
    #: For a Ray actor death or OOM kill: the workers that died, with their last words.
    dead: tuple[DeadWorker, ...] = ()

    @property
    def raised_at(self) -> str | None:
        """The frame that raised the exception, when the traceback showed it."""
        if self.exception is not None and self.exception.raised_at:
            return self.exception.raised_at
        return self.unrecognized.raised_at if self.unrecognized is not None else None

    def names(self) -> frozenset[str]:
        """The JSON keys these details fill (values under the same names are not repeated)."""
        return frozenset(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.exception is not None:
            out.update(self.exception.to_dict())
        if self.unrecognized is not None:
            out.update(self.unrecognized.to_dict())
        if self.similar is not None:
            out["similar"] = [s.to_dict() for s in self.similar]
        if self.quantities:
            out["quantities"] = list(self.quantities)
        if self.mismatch is not None:
            out["mismatch"] = self.mismatch.to_dict()
        if self.hang is not None:
            out["hang"] = self.hang.to_dict()
        if self.dead:
            out["dead_workers"] = [d.to_dict() for d in self.dead]
        return out


#: Ray's own processes, as Ray names them in a line's prefix ("(raylet)", "(gcs_server)", "(autoscaler +12s)"):
#: a line from one of them was written by that process, not by a worker of the job.
RAY_PROCESSES = frozenset(
    {"raylet", "autoscaler", "scheduler", "gcs_server", "monitor", "dashboard", "dashboard_agent", "runtime_env_agent"}
)


@dataclass(frozen=True)
class FirstFailure:
    """Where the top root cause first showed."""

    id: str
    source: str
    line: int
    rank: int | None = None
    worker: str | None = None
    node: str | None = None

    @property
    def place(self) -> str:
        """ "rank 2, worker X", "raylet, node 10.0.0.2" or "" when the line carries no place."""
        # Ray's own processes are named by what they are (issue 22: "first seen on worker raylet").
        role = "process" if self.worker in RAY_PROCESSES else "worker"
        pairs = (("rank", self.rank), (role, self.worker), ("node", self.node))
        # A Ray task named `worker` prints as `(worker pid=N)`: "worker", not "worker worker".
        return ", ".join(
            str(value) if key == "process" or str(value).lower() == key else f"{key} {value}"
            for key, value in pairs
            if value is not None
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "line": self.line,
            "rank": self.rank,
            "worker": self.worker,
            "node": self.node,
        }


@dataclass(frozen=True)
class NodeScan:
    """What the scan of one Ray node read (`rlfix ray cluster`)."""

    node_id: str
    ip: str
    logs_dir: str
    files: int
    lines: int
    bytes: int
    counts: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "ip": self.ip,
            "logs_dir": self.logs_dir,
            "files": self.files,
            "lines": self.lines,
            "bytes": self.bytes,
            "counts": dict(self.counts),
        }


#: What a death by each signal usually means for a training job: (signature id, meaning, check).
SIGNAL_MEANINGS: Mapping[str, tuple[str, str, str]] = {
    "SIGKILL": (
        "host-oom-sigkill",
        "killed by SIGKILL, which training jobs most often get from the kernel or container OOM killer",
        "dmesg -T | grep -i -E 'killed process|out of memory', or oom_kill in the cgroup's memory.events",
    ),
    "SIGSEGV": ("native-crash", "a segmentation fault in native code", "run with PYTHONFAULTHANDLER=1 for the stack"),
    "SIGBUS": ("native-crash", "a bus error, often a too-small /dev/shm", "df -h /dev/shm"),
    "SIGILL": ("native-crash", "an illegal instruction: a binary built for another CPU", "pip check; the wheel's arch"),
    "SIGFPE": ("native-crash", "a floating point exception in native code", "run with PYTHONFAULTHANDLER=1"),
    "SIGABRT": ("native-crash", "aborted in native code (a failed C++ assert, std::terminate)", "the lines before it"),
    "SIGTERM": (
        "job-cancelled-by-scheduler",
        "terminated from outside (scheduler, operator, launcher)",
        "sacct -j JOBID / kubectl describe pod",
    ),
    "SIGHUP": ("job-cancelled-by-scheduler", "the terminal that started it went away", "run it under nohup or tmux"),
    "SIGINT": ("job-cancelled-by-scheduler", "interrupted (Ctrl-C)", "who stopped it"),
}


@dataclass(frozen=True)
class ExitStatus:
    """How a command ended: its status as a shell reports it, and the signal that killed it, if one did."""

    status: int
    signal: str | None = None

    @property
    def failed(self) -> bool:
        return self.status != 0

    @property
    def signal_number(self) -> int | None:
        return int(_signal.Signals[self.signal]) if self.signal else None

    @property
    def meaning(self) -> tuple[str, str, str] | None:
        """(signature id, what the signal means, the check to confirm it), for a known signal."""
        return SIGNAL_MEANINGS.get(self.signal) if self.signal else None

    def describe(self) -> str:
        """One line: `exit status 137: killed by signal 9 (SIGKILL)`."""
        if self.signal is None:
            return f"exit status {self.status}"
        return f"exit status {self.status}: killed by signal {self.signal_number} ({self.signal})"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "signal": self.signal, "signal_number": self.signal_number}

    @classmethod
    def parse(cls, value: int | str) -> ExitStatus:
        """From `137` (a shell's 128 + N), `-9` (Python's -N), `9`... or a signal name: `SIGKILL`, `KILL`."""
        text = str(value).strip()
        # ASCII digits, one optional minus, a few of them: `²`, `--9` and 5,000 digits are not statuses.
        if _STATUS_NUMBER.fullmatch(text):
            number = int(text)
            if number < -64:
                raise UsageError(f"exit status {text} is out of range (0-255, -N or a signal name)")
            if number < 0:
                return cls(128 - number, _signal_name(-number, text))
            if number > 255:
                raise UsageError(f"exit status {text} is out of range (0-255, -N or a signal name)")
            return cls(number, _signal_name(number - 128, text) if number > 128 else None)
        name = text.upper() if text.upper().startswith("SIG") else "SIG" + text.upper()
        try:
            return cls(128 + int(_signal.Signals[name]), name)
        except KeyError:
            hint = "give a number (137, -9) or a signal name (SIGKILL)"
            shown = text if len(text) <= 40 else text[:40] + "…"
            raise UsageError(f"unknown exit status {shown!r}: {hint}") from None


_STATUS_NUMBER = re.compile(r"-?[0-9]{1,6}")


def _signal_name(number: int, text: str) -> str | None:
    try:
        return _signal.Signals(number).name
    except ValueError:
        if text.startswith("-"):
            raise UsageError(f"exit status {text}: no signal {number}") from None
        return None


@dataclass(frozen=True)
class Window:
    """Lines of a log around one finding's evidence (with its traceback when one led to it), read
    again from the file for `rlfix excerpt`: (line number, text) pairs, gaps where lines were left out."""

    source: str
    #: The evidence line the window is about, and the signature id it is evidence of.
    focus: int
    label: str
    lines: tuple[tuple[int, str], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "focus": self.focus,
            "label": self.label,
            "lines": [{"line": n, "text": t} for n, t in self.lines],
        }


@dataclass(frozen=True)
class Insights:
    """The story of the failure: stage, last step, first failing place, collateral, unknown errors."""

    stage: str | None = None
    last_step: int | None = None
    first_failure: FirstFailure | None = None
    collateral: tuple[str, ...] = ()
    error_templates: tuple[ErrorTemplate, ...] = ()
    discounted_by_baseline: tuple[str, ...] = ()
    ray_nodes: tuple[NodeScan, ...] | None = None
    #: How the command ended, when it is known (`rlfix run`, `--exit-status`).
    exit: ExitStatus | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.first_failure is not None:
            out["stage"] = self.stage
            out["last_step"] = self.last_step
            out["first_failure"] = self.first_failure.to_dict()
            out["collateral"] = list(self.collateral)
        if self.error_templates:
            out["error_templates"] = [t.to_summary() for t in self.error_templates]
        if self.discounted_by_baseline:
            out["discounted_by_baseline"] = list(self.discounted_by_baseline)
        if self.ray_nodes is not None:
            out["ray_nodes"] = [n.to_dict() for n in self.ray_nodes]
        if self.exit is not None:
            out["exit"] = self.exit.to_dict()
        return out
