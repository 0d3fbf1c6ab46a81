"""The order a job's worker files are read in: when each one failed, not the order of their names.

The ranker decides "earlier" by two lines' timestamps when they share a clock, else by the order
the lines were read in (docs/ranking.md, "Time: earlier and later"). A Ray job's worker files are
named by random worker ids, so reading them by name put an NCCL watchdog timeout (a symptom) before
the CUDA error of another rank that caused it. Before a job's files are fed, each worker file's
first error line is found (a scan of that file alone), and the files that have one are read in
the order those lines happened, judged by, in turn:

1. **timestamps**: every such line has a stamp, and all stamps are on one clock (dated stamps:
   Ray's, Python logging's, ISO 8601; or all without a year: glog, as PyTorch and NCCL write);
2. **driver log**: the order the driver log received them. Ray forwards each worker's output to
   its driver as `(ActorName pid=N) <line>` (`ray/_private/worker.py`, `print_worker_logs`), in the
   order it arrived. A line Ray deduplicated (`ray/_private/ray_logging`: the same words once the
   words holding digits are dropped, from another worker) arrived after the copy that was printed;
3. **file times**: each file's last modification (a worker that failed first stopped writing first).

Files without an error line keep their place after those with one. `WorkerOrder.by` says which
rule was used, so a report can show it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rlfix.clock import YEARLESS, Moment, epoch, parse
from rlfix.core import matcher_for
from rlfix.integrations.ray_logs import ANSI, WORKER_FILE, LogFile, head_and_tail, text_lines
from rlfix.kb import KnowledgeBase
from rlfix.match.matcher import Hit
from rlfix.model import Severity

BY_TIMESTAMPS = "timestamps"
BY_DRIVER_LOG = "driver log"
BY_FILE_TIMES = "file times"

_FORWARDED = re.compile(r"^\((?:[^()]*? )?pid=(\d{1,10})\) ?(.*)$")
_REPEATED = re.compile(r" \[repeated \d+x across cluster\].*$")
_NUMBERS = re.compile(r"(\d+|0x[0-9a-fA-F]+)")
_FAILING = (Severity.FATAL, Severity.ERROR)


@dataclass(frozen=True)
class WorkerOrder:
    """Worker files in the order to read them, and the rule that ordered them ("" when there was nothing
    to order: fewer than two files with an error line)."""

    files: tuple[LogFile, ...]
    by: str = ""


@dataclass(frozen=True)
class FirstError:
    """A worker file's first line matching a fatal or error signature: its number, text and time."""

    line: int
    text: str
    time: Moment | None = None


@lru_cache(maxsize=8)
def _failing(kb: KnowledgeBase) -> frozenset[str]:
    return frozenset(sig.id for sig in kb if sig.severity in _FAILING)


def first_error(log: LogFile, kb: KnowledgeBase) -> FirstError | None:
    """The first line of `log` that a fatal or error signature matches.

    The matcher alone, streamed (no report is built: a job may have hundreds of worker files);
    observers and warnings do not count.
    """
    failing = _failing(kb)
    first: list[FirstError] = []

    def sink(hit: Hit) -> None:
        if not first and hit.probe.owner in failing:
            line = hit.line
            first.append(
                FirstError(line.number, line.text, parse(line.timestamp, log.name) if line.timestamp else None)
            )

    try:
        with log.path.open("rb") as raw:
            # A file over 256 MiB is read at its head and tail, as the job's report reads it.
            matcher_for(kb, "auto").scan_stream(head_and_tail(raw, os.fstat(raw.fileno()).st_size), log.name, sink)
    except OSError:
        return None
    return first[0] if first else None


def order_workers(
    workers: list[LogFile], kb: KnowledgeBase, driver_log: Path | None = None, file_times: bool = True
) -> WorkerOrder:
    """`workers` (one job's worker files, in name order) in the order their first errors happened.

    `file_times=False` for copies (fetched from a live cluster), whose modification times are the copy's.
    """
    found = {log: first_error(log, kb) for log in workers}
    failing = [log for log in workers if found[log] is not None]
    if len(failing) < 2:
        return WorkerOrder(tuple(workers))
    rules = [(BY_TIMESTAMPS, _by_stamps), (BY_DRIVER_LOG, _by_driver(driver_log))]
    for by, rule in [*rules, *([(BY_FILE_TIMES, _by_mtime)] if file_times else [])]:
        keys = rule({log: found[log] for log in failing})  # type: ignore[misc]
        if keys is not None:
            ordered = sorted(failing, key=lambda log: keys[log])  # stable: ties keep name order
            rest = [log for log in workers if found[log] is None]
            return WorkerOrder((*ordered, *rest), by)
    return WorkerOrder(tuple(workers))


Keys = dict[LogFile, float]


def _by_stamps(firsts: dict[LogFile, FirstError]) -> Keys | None:
    """Each first error's time, when all have one on a clock they share."""
    moments: dict[LogFile, Moment] = {log: e.time for log, e in firsts.items() if e.time is not None}
    if len(moments) < len(firsts):
        return None
    if all(m.absolute for m in moments.values()):
        return {log: epoch(m) or 0.0 for log, m in moments.items()}
    if all(m.clock == YEARLESS for m in moments.values()):
        # Stamps without a year (glog) from one job's files: read as the same year.
        return {log: m.seconds for log, m in moments.items()}
    return None


def _canonical(text: str) -> str:
    """A line as Ray's log deduplicator keys it: its words without the ones holding digits."""
    return " ".join(word for word in text.split() if not _NUMBERS.search(word))


def _by_driver(driver_log: Path | None) -> Callable[[dict[LogFile, FirstError]], Keys | None]:
    def rule(firsts: dict[LogFile, FirstError]) -> Keys | None:
        if driver_log is None:
            return None
        wanted = {}
        for log, first in firsts.items():
            m = WORKER_FILE.match(log.name)
            if m is None:
                return None
            wanted[log] = (m.group("pid"), first.text.strip(), _canonical(first.text))
        keys = _arrivals(driver_log, wanted)
        return keys if len(keys) == len(wanted) else None

    return rule


def _arrivals(driver_log: Path, wanted: dict[LogFile, tuple[str, str, str]]) -> Keys:
    """Where in the driver log each wanted line arrived: its own copy, else after the deduplicated one.

    Streamed once; each forwarded line is looked up (by pid and text, then by Ray's dedup key), so a
    long driver log of many ranks costs one pass.
    """
    by_line: dict[tuple[str, str], list[LogFile]] = {}
    by_shape: dict[str, list[LogFile]] = {}
    for log, (pid, raw, canonical) in wanted.items():
        by_line.setdefault((pid, raw), []).append(log)
        if canonical:
            by_shape.setdefault(canonical, []).append(log)
    exact: Keys = {}
    copies: Keys = {}
    for number, line in enumerate(text_lines(driver_log), start=1):
        if "pid=" not in line:
            continue
        m = _FORWARDED.match(ANSI.sub("", line).rstrip("\n"))
        if m is None:
            continue
        text = _REPEATED.sub("", m.group(2)).strip()
        for log in by_line.get((m.group(1), text), ()):
            exact.setdefault(log, float(number))
        if len(copies) < len(wanted):
            for log in by_shape.get(_canonical(text), ()):
                copies.setdefault(log, number + 0.5)
        if len(exact) == len(wanted):
            break
    return {log: exact.get(log, copies.get(log, 0.0)) for log in wanted if log in exact or log in copies}


def _by_mtime(firsts: dict[LogFile, FirstError]) -> Keys | None:
    try:
        return {log: os.stat(log.path).st_mtime for log in firsts}
    except OSError:
        return None
