"""Lines of a Ray log that look like a job's failure and are not one, read as empty lines before matching.

- **Ray's own non-fatal trouble.** Ray's autoscaler (`monitor.log`) starts a Prometheus metrics
  server; when its port is taken (another Ray cluster on the machine, say) it logs `An exception
  occurred while starting the metrics server.` with the traceback, ending `OSError: [Errno 98]
  Address already in use`, and goes on running without metrics (`ray/autoscaler/_private/monitor.py`,
  `Monitor.__init__`). That last line is what a rendezvous port clash prints too, so it read as a
  fatal `dist-port-in-use` with torchrun advice. Such a record (its stamped line and the unstamped
  traceback lines that continue it) is dropped.
- **rlfix's own report, echoed.** The driver hook (`diagnose_on_failure`) prints its text report
  on the driver's stderr, which is the job's driver log: read back, its quoted evidence lines were
  counted a second time ("3 workers; 10 matching lines" for one dead actor). A text report runs from
  its header (`rlfix: 2 findings in …`) to its version line (`rlfix 0.2.0`); the hook's exception
  note (`rlfix: most likely cause: …`) is one line. Those are dropped.
- **The autoscaler's events, broadcast.** Ray prints the autoscaler's cluster-wide events into the
  log of every driver connected at the time, each line opening with `(autoscaler +8s)` (the driver
  subscribes to them: `ray/_private/worker.py`), e.g. `(autoscaler +8s) Error: No available node
  types can fulfill resource request {'CPU': 1.0, 'GPU': 1.0}`. They name no job: in the trial of
  issue 22 one job's GPU request put that line in five drivers' logs, and four jobs with a cause of
  their own read as unschedulable. The autoscaler's own log (`monitor.log`) holds the same events,
  and the raylet's infeasible-lease line names the job that asked (`ray_owners`). A line whose
  first prefix is `(autoscaler +Ns)` is dropped from a driver log; one a worker printed (`(rollout
  pid=N) (autoscaler …`) is that worker's output, and stays.

A dropped line is read as an empty line, so line numbers stay the file's own. This module does
not import Ray.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

#: Decides, line by line (state kept between lines), whether a line is dropped.
Drop = Callable[[bytes], bool]

# A new record starts at a stamped line: Python logging's `2026-11-26 06:40:55,123`, or Ray's `[2026-…`.
_STAMP = re.compile(rb"^\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}")
_METRICS_SERVER = b"An exception occurred while starting the metrics server."
# rlfix's text report (render/text.py): its header with findings, its last line (the version), the hook's note.
_REPORT_HEAD = re.compile(rb"^rlfix: [\d,]+ findings? in ")
_REPORT_END = re.compile(rb"^rlfix \d+\.\d+\S*\s*$")
_NOTE = re.compile(rb"^rlfix: most likely cause: ")
# The autoscaler's event as the driver prints it: its prefix first, coloured or not.
_AUTOSCALER_EVENT = re.compile(rb"^(?:\x1b\[[0-9;]*m)?\(autoscaler \+[\d.]+[hms]?\)")
#: A report longer than this many lines is not one the hook printed: stop dropping there.
MAX_REPORT_LINES = 2000
_CHUNK = 1 << 20


def autoscaler_records() -> Drop:
    """Drops the autoscaler's metrics-server records (see the module's docstring)."""
    dropping = False

    def drop(line: bytes) -> bool:
        nonlocal dropping
        if _STAMP.match(line):
            dropping = _METRICS_SERVER in line
        return dropping

    return drop


def echoed_reports() -> Drop:
    """Drops the text reports rlfix's driver hook printed into a driver log (see the module's docstring)."""
    left = 0

    def drop(line: bytes) -> bool:
        nonlocal left
        if left:
            left = 0 if _REPORT_END.match(line) else left - 1
            return True
        if _REPORT_HEAD.match(line):
            left = MAX_REPORT_LINES
            return True
        return bool(_NOTE.match(line))

    return drop


def driver_chatter() -> Drop:
    """Drops rlfix's echoed reports and the autoscaler's broadcast events from a driver log (see the
    module's docstring)."""
    echoed = echoed_reports()

    def drop(line: bytes) -> bool:
        # Always asked first: it counts the lines of an echoed report.
        return echoed(line) or bool(_AUTOSCALER_EVENT.match(line))

    return drop


#: The kinds of Ray log (`ray_logs.RULES`) with lines to drop, and what drops them (one per stream).
CHATTER: dict[str, Callable[[], Drop]] = {"autoscaler": autoscaler_records, "driver": driver_chatter}


class BlankLines:
    """A binary stream over `raw` in which every line `drop` decides on is an empty line."""

    def __init__(self, raw: BinaryIO, drop: Drop) -> None:
        self._raw = raw
        self._drop = drop
        self._carry = b""

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:  # read all, as a file's read() does
            parts = []
            while part := self.read(_CHUNK):
                parts.append(part)
            return b"".join(parts)
        while True:
            chunk = self._raw.read(n or _CHUNK)
            if not chunk:
                rest, self._carry = self._carry, b""
                return self._line(rest) if rest else b""
            lines = (self._carry + chunk).split(b"\n")
            self._carry = lines.pop()
            out = b"".join(self._line(line + b"\n") for line in lines)
            if out:
                return out

    def _line(self, line: bytes) -> bytes:
        if self._drop(line):
            return b"\n" if line.endswith(b"\n") else b""
        return line


def quiet(kind: str, cut: Callable[[BinaryIO], BinaryIO] | None) -> Callable[[BinaryIO], BinaryIO] | None:
    """`cut` (or no cut) with the lines to drop of this kind of log dropped first; `cut` as is for other kinds."""
    make = CHATTER.get(kind)
    if make is None:
        return cut
    if cut is None:
        return lambda raw: BlankLines(raw, make())  # type: ignore[return-value]
    return lambda raw: cut(BlankLines(raw, make()))  # type: ignore[arg-type]


def driver_lines(lines: Iterable[str]) -> Iterator[str]:
    """A driver log's lines (from the Jobs API, or followed live) with rlfix's echoed reports and the
    autoscaler's broadcast events as empty lines."""
    drop = driver_chatter()
    for line in lines:
        yield "" if drop(line.encode("utf-8", "surrogateescape")) else line
