"""A crash is read from the end of the log.

A paste is often only the last lines: `ZeroDivisionError: division by zero`, a traceback cut off
above its first line. When the input ends with a bare exception line (`rlfix.observe.tail` decides
that, reading what follows it once) and no root cause explains it, it is the diagnosis. An exception
printed in the middle of a run that then went on (a caught and logged error) is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from rlfix.details import ExitStatus
from rlfix.kb.load import KnowledgeBase
from rlfix.model import Evidence, Kind
from rlfix.observe.tally import Tally


def with_tail_exception(tallies: Mapping[str, Tally], bare: Evidence | None, kb: KnowledgeBase) -> Mapping[str, Tally]:
    """The tallies, plus the fallback for the bare exception the log ends with, when no root explains it.

    Returns a new mapping; the tallies passed in are not changed.
    """
    if bare is None or any(t.signature.kind is Kind.ROOT for t in tallies.values()):
        return tallies
    fallback = next((sig for sig in kb if sig.fallback), None)
    if fallback is None or fallback.id in tallies:
        return tallies
    tally = Tally(fallback)
    tally.add(bare)
    return {**tallies, fallback.id: tally}


#: The failure a process that dies without a word usually died of.
SILENT_DEATH = "host-oom-sigkill"
#: What the evidence of an inferred silent death says, in its values.
INFERRED = "inferred"
#: Launchers' reports that a worker is gone (`kb lint` checks these ids exist).
LAUNCHER_IDS = ("torch-elastic-child-failed",)
#: Lines of the job's own output before the launcher's report: a paste of the report alone says
#: nothing about what came before it, so no death can be called silent from it.
RAN_LINES = 3


def with_silent_death(tallies: Mapping[str, Tally], printed_errors: bool, kb: KnowledgeBase) -> Mapping[str, Tally]:
    """A launcher says a worker died, and nothing in the log says why: no error line, no traceback.

    A process that dies without printing anything was almost always killed by SIGKILL, and the
    kernel's OOM killer is what sends it to training jobs (a Python error would have been printed,
    a segfault would say so). The launcher's line becomes the evidence of an inferred OOM kill,
    with a lower confidence and a check to confirm it.
    """
    death = kb.get(SILENT_DEATH)
    if death is None or printed_errors or any(t.signature.kind is Kind.ROOT for t in tallies.values()):
        return tallies
    launchers = [t for t in tallies.values() if t.signature.id in LAUNCHER_IDS and t.first.line > RAN_LINES]
    if not launchers or len(launchers) != len(tallies):
        return tallies
    first = min(launchers, key=lambda t: t.first.order).first
    tally = Tally(death)
    why = "the worker died without printing an error; a silent death is most often a SIGKILL from the OOM killer"
    check = "dmesg -T | grep -i -E 'killed process|out of memory', or oom_kill in the cgroup's memory.events"
    tally.add(replace(first, values={**first.values, INFERRED: why, "check": check}))
    return {**tallies, death.id: tally}


#: The source named by the evidence of an exit status (it is no line of any log).
EXIT_SOURCE = "<exit status>"


def with_exit_status(tallies: Mapping[str, Tally], ended: ExitStatus | None, kb: KnowledgeBase) -> Mapping[str, Tally]:
    """A command killed by a signal, and no root cause in its output: the signal is the evidence.

    SIGKILL suggests an OOM kill, SIGSEGV / SIGBUS / SIGILL / SIGFPE / SIGABRT a native crash,
    SIGTERM / SIGHUP / SIGINT a stop from outside (`rlfix.details.SIGNAL_MEANINGS`). The diagnosis
    is inferred (lower confidence) and carries the check that confirms it. A root cause printed
    by the command wins: the signal is then its consequence and adds nothing.
    """
    meaning = ended.meaning if ended is not None else None
    if ended is None or meaning is None or any(t.signature.kind is Kind.ROOT for t in tallies.values()):
        return tallies
    sig_id, what, check = meaning
    sig = kb.get(sig_id)
    if sig is None or sig_id in tallies:
        return tallies
    text = ended.describe()
    values = {INFERRED: f"{text}; {what}", "check": check, "signal": str(ended.signal)}
    tally = Tally(sig)
    tally.add(Evidence(source=EXIT_SOURCE, line=0, text=text, message=text, values=values, order=1 << 62))
    return {**tallies, sig.id: tally}
