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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from rlfix.clock import YEARLESS, Moment, epoch
from rlfix.core import Triage
from rlfix.integrations.ray_logs import LogFile, feed_log_file
from rlfix.kb import KnowledgeBase
from rlfix.model import Evidence, Severity

BY_TIMESTAMPS = "timestamps"
BY_DRIVER_LOG = "driver log"
BY_FILE_TIMES = "file times"

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FORWARDED = re.compile(r"^\((?:[^()]*? )?pid=(\d{1,10})\) ?(.*)$")
_REPEATED = re.compile(r" \[repeated \d+x across cluster\].*$")
_NUMBERS = re.compile(r"(\d+|0x[0-9a-fA-F]+)")
_PID = re.compile(r"^worker-[0-9a-f]+-[0-9a-f]+-(\d+)\.(?:out|err)$")
_FAILING = (Severity.FATAL, Severity.ERROR)


@dataclass(frozen=True)
class WorkerOrder:
    """Worker files in the order to read them, and the rule that ordered them ("" when there was nothing
    to order: fewer than two files with an error line)."""

    files: tuple[LogFile, ...]
    by: str = ""


def first_error(log: LogFile, kb: KnowledgeBase) -> Evidence | None:
    """The first line of `log` that a fatal or error finding quotes (a scan of the file alone)."""
    triage = Triage(kb, timeline=False)
    feed_log_file(triage, log, log.name)
    firsts = [d.first for d in triage.report().diagnoses if d.severity in _FAILING]
    return min(firsts, key=lambda e: e.order, default=None)


def order_workers(workers: list[LogFile], kb: KnowledgeBase, driver_log: Path | None = None) -> WorkerOrder:
    """`workers` (one job's worker files, in name order) in the order their first errors happened."""
    found = {log: first_error(log, kb) for log in workers}
    failing = [log for log in workers if found[log] is not None]
    if len(failing) < 2:
        return WorkerOrder(tuple(workers))
    for by, rule in ((BY_TIMESTAMPS, _by_stamps), (BY_DRIVER_LOG, _by_driver(driver_log)), (BY_FILE_TIMES, _by_mtime)):
        keys = rule({log: found[log] for log in failing})  # type: ignore[misc]
        if keys is not None:
            ordered = sorted(failing, key=lambda log: keys[log])  # stable: ties keep name order
            rest = [log for log in workers if found[log] is None]
            return WorkerOrder((*ordered, *rest), by)
    return WorkerOrder(tuple(workers))


Keys = dict[LogFile, float]


def _by_stamps(firsts: dict[LogFile, Evidence]) -> Keys | None:
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


def _by_driver(driver_log: Path | None) -> Callable[[dict[LogFile, Evidence]], Keys | None]:
    def rule(firsts: dict[LogFile, Evidence]) -> Keys | None:
        if driver_log is None:
            return None
        wanted = {}
        for log, evidence in firsts.items():
            m = _PID.match(log.name)
            raw = _line_at(log.path, evidence.line)
            if m is None or raw is None:
                return None
            wanted[log] = (m.group(1), raw.strip(), _canonical(raw))
        keys = _arrivals(driver_log, wanted)
        return keys if len(keys) == len(wanted) else None

    return rule


def _arrivals(driver_log: Path, wanted: dict[LogFile, tuple[str, str, str]]) -> Keys:
    """Where in the driver log each wanted line arrived: its own copy, else after the deduplicated one."""
    exact: Keys = {}
    copies: Keys = {}
    for number, line in enumerate(_lines(driver_log), start=1):
        m = _FORWARDED.match(_ANSI.sub("", line).rstrip("\n"))
        if m is None:
            continue
        text = _REPEATED.sub("", m.group(2)).strip()
        for log, (pid, raw, canonical) in wanted.items():
            if log not in exact and pid == m.group(1) and text == raw:
                exact[log] = float(number)
            elif log not in copies and canonical and _canonical(text) == canonical:
                copies[log] = number + 0.5
        if len(exact) == len(wanted):
            break
    return {log: exact.get(log, copies.get(log, 0.0)) for log in wanted if log in exact or log in copies}


def _by_mtime(firsts: dict[LogFile, Evidence]) -> Keys | None:
    try:
        return {log: os.stat(log.path).st_mtime for log in firsts}
    except OSError:
        return None


def _lines(path: Path) -> Iterable[str]:
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            yield from fh
    except OSError:
        return


def _line_at(path: Path, number: int) -> str | None:
    """Line `number` (from 1) of a file, streamed."""
    for at, line in enumerate(_lines(path), start=1):
        if at == number:
            return line.rstrip("\n")
    return None
