"""Live watching of a Ray job beyond its driver: its workers' files and the raylet log, and alerts
that fire once per root cause, on the real line rather than Ray's wrapper of it.

`NodeTail` polls each alive node (through the dashboard's log API) for the job's
`worker-…-<job id>-….err|out` files and `raylet.out`, and feeds the lines written since the last
poll, with the file's own line numbers, to a `Triage`: a memory-monitor kill or an actor's
traceback alerts before the driver hears of it. It is bounded: at most `MAX_FILES` files per
node, and after the first read of a file only its last `TAIL_LINES` lines are fetched (a file
that grew by more is read again whole, up to the dashboard's `MAX_REMOTE_LINES`). Raylet lines
older than the job's start are skipped.

The alerts themselves (one per root cause, on the real line rather than Ray's wrapper of it) are
`rlfix.integrations.alerting.Alerter`'s, shared with `diagnose --follow` and `run`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from rlfix.clock import epoch, parse
from rlfix.core import Triage
from rlfix.integrations.ray_owners import Ownership

#: Lines fetched from the end of a file already read once.
TAIL_LINES = 2000
#: Worker files followed per node (the newest first).
MAX_FILES = 32

_WORKER_FILE = re.compile(r"^worker-([0-9a-f]+)-([0-9a-f]+)-(\d+)\.(?:out|err)$")
_STAMP = re.compile(r"^\[?(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)")


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
