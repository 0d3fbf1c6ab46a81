"""Ray session logs: which file carries which signal, and how to feed them to a `Triage`.

Ray writes one folder per session (`/tmp/ray/session_*/logs`, `session_latest` pointing at the
newest). Most of its files are healthy chatter (dashboard modules, metrics, the log monitor);
the failures live in a few of them, listed in `RULES` with the signal each one carries. Files
are read as streams, never whole, and a file larger than `MAX_FILE_BYTES` is read at its head
and its tail only. This module does not import Ray: it works on a copied folder too.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rlfix.clock import epoch, parse
from rlfix.core import Triage
from rlfix.errors import InputError
from rlfix.integrations.ray_chatter import quiet
from rlfix.read.inputs import Input, Problem, expand

#: ANSI colour codes Ray puts around its prefixes.
ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: A worker's log file: `worker-<worker id>-<job id>-<pid>.out|err` (Ray's worker log naming).
WORKER_FILE = re.compile(r"^worker-[0-9a-f]+-(?P<job>[0-9a-f]{8})-(?P<pid>\d+)\.(?:out|err)$")

#: A file above this size is read at its head (a quarter) and its tail (the rest) only.
MAX_FILE_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Rule:
    """Files matching `pattern` (a glob on the file name) carry `signal`; lower `order` is read first."""

    pattern: str
    kind: str
    signal: str
    order: int
    scan: bool = True


#: Read in this order: the files that name a root cause (the raylet's memory monitor, worker
#: stderr) before the driver, whose RayTaskError / ActorDiedError usually only repeats them.
RULES: tuple[Rule, ...] = (
    Rule("raylet.out", "raylet", "memory-monitor kills, worker deaths, infeasible leases", 0),
    Rule("raylet.err", "raylet", "raylet crashes", 0),
    Rule("gcs_server.out", "gcs", "worker exits with exit_type / exit_detail, node deaths", 1),
    Rule("gcs_server.err", "gcs", "GCS crashes", 1),
    Rule("monitor.log", "autoscaler", "unschedulable resource requests (autoscaler)", 1),
    Rule("monitor.out", "autoscaler", "autoscaler output", 1),
    Rule("monitor.err", "autoscaler", "autoscaler errors", 1),
    Rule("worker-*.err", "worker", "task and actor stderr: tracebacks, CUDA / NCCL errors", 2),
    Rule("worker-*.out", "worker", "task and actor stdout", 3),
    Rule("job-driver-*.log", "driver", "a submitted job's driver: RayTaskError, ActorDiedError, OutOfMemoryError", 4),
    Rule("python-core-driver-*.log", "core-driver", "the driver's core-worker: lost objects, owner deaths", 5),
    Rule("python-core-worker-*.log", "core-worker", "core-worker C++ log: lost objects, crashes", 5),
    # Written per job id, but the job supervisor's (the dashboard's job) holds every submission's setup.
    Rule("runtime_env_setup-*.log", "runtime-env-setup", "runtime environment setup failures", 5),
    Rule("raylet.*", "raylet", "rotated raylet log", 6),
    Rule("gcs_server.*", "gcs", "rotated GCS log", 6),
    # Healthy chatter, or copies of what the files above already say.
    Rule("dashboard*", "dashboard", "dashboard modules (HTTP and metrics chatter)", 9, scan=False),
    Rule("log_monitor*", "log-monitor", "the process that tails the other logs", 9, scan=False),
    Rule("runtime_env_agent*", "runtime-env", "runtime-env agent chatter", 9, scan=False),
    Rule("ray_client_server*", "client", "Ray Client server", 9, scan=False),
    Rule("debug_state*", "debug", "periodic state dumps", 9, scan=False),
    Rule("*.pid", "pid", "pid files", 9, scan=False),
    Rule("*", "other", "other Ray log", 8),
)

#: Sub-folders of `logs/` that hold binary profiles or event copies of the text logs.
SKIP_DIRS = frozenset({"events", "export_events", "nsight", "profiles", "rocprof_sys"})

_WORKER_FILE = re.compile(r"^worker-([0-9a-f]+)-([0-9a-f]+)-(\d+)\.(?:out|err)$")
_DRIVER_FILE = re.compile(r"^job-driver-(.+)\.log$")


@dataclass(frozen=True)
class LogFile:
    """One file of a session's logs folder and what rlfix expects to find in it."""

    path: Path
    rule: Rule

    @property
    def name(self) -> str:
        return self.path.name


def classify(name: str) -> Rule:
    """The rule for a log file name (the last rule matches anything)."""
    for rule in RULES:
        if fnmatch.fnmatchcase(name, rule.pattern):
            return rule
    return RULES[-1]


def belongs_to_job(name: str, job_id: str | None = None, submission_id: str | None = None) -> bool:
    """Whether a per-job file (worker or driver log) is one of this job's; shared files always are.

    Worker logs are named `worker-<worker id>-<job id hex>-<pid>`, driver logs
    `job-driver-<submission id>.log`, the driver's core-worker log
    `python-core-driver-<job id hex>ff…_<pid>.log`; other core-worker logs carry no job id and
    are left out when a job is named, because on a long-lived cluster most of them belong to
    other jobs. A submission without a job id (it failed before its driver started) owns no
    worker file at all: only its driver log and the shared logs.
    """
    if job_id is None and submission_id is None:
        return True
    m = _WORKER_FILE.match(name)
    if m:
        return job_id is not None and m.group(2) == job_id
    m = _DRIVER_FILE.match(name)
    if m:
        # A driver started by hand (`ray.init()` in a script) has no job-driver file of its own.
        return m.group(1) == submission_id
    if name.startswith("python-core-driver-"):
        return job_id is not None and name.startswith(f"python-core-driver-{job_id}")
    return not name.startswith("python-core-worker-")


#: Characters of one line `text_lines` keeps; the rest of a longer line is read and dropped (as the
#: matcher keeps `rlfix.match.matcher.MAX_LINE` bytes), so one huge line never fills memory.
MAX_LINE_CHARS = 1024 * 1024


def text_lines(path: Path, limit: int = MAX_LINE_CHARS) -> Iterator[str]:
    """The lines of a text file, streamed, each cut at `limit` characters (a newline kept); none if unreadable."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            while line := fh.readline(limit):
                if len(line) == limit and not line.endswith("\n"):
                    # The rest of an overlong line: read in bounded pieces, dropped.
                    while (rest := fh.readline(limit)) and not rest.endswith("\n"):
                        pass
                    line += "\n"
                yield line
    except OSError:
        return


def default_logs_dir() -> Path:
    """The current session's logs folder: `$RAY_TMPDIR/ray/session_latest/logs` (default /tmp)."""
    root = Path(os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()) / "ray"
    return root / "session_latest" / "logs"


def resolve_logs_dir(directory: str | os.PathLike[str] | None) -> Path:
    """Accept a logs folder, a session folder, or a Ray temp root (`/tmp/ray`); return the logs folder."""
    path = Path(directory) if directory is not None else default_logs_dir()
    for candidate in (path, path / "logs", path / "session_latest" / "logs"):
        if candidate.is_dir() and (candidate.name == "logs" or any(candidate.glob("raylet*"))):
            return candidate
    if not path.exists():
        hint = " (is a Ray cluster running on this machine? pass the logs folder)" if directory is None else ""
        raise InputError(f"{path}: no such directory{hint}")
    raise InputError(f"{path}: not a Ray session logs folder (no raylet.out or logs/ found)")


def session_log_files(
    directory: str | os.PathLike[str], *, job_id: str | None = None, submission_id: str | None = None
) -> list[LogFile]:
    """Every file of a logs folder (recursively, `old/` included), in reading order, with its rule."""
    root = Path(directory)
    found: list[LogFile] = []
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in files:
            if belongs_to_job(name, job_id, submission_id):
                found.append(LogFile(Path(base) / name, classify(name)))
    # Within one kind, live files before rotated or moved ones (`old/`), then by name: stable output.
    found.sort(key=lambda f: (f.rule.order, f.path.parent != root, f.name, str(f.path)))
    return found


class _HeadTail:
    """A read-only stream over the first `head` and the last `tail` bytes of a file."""

    def __init__(self, raw: BinaryIO, size: int, head: int, tail: int) -> None:
        self._raw = raw
        self._head_left = head
        self._tail_at = size - tail
        self._in_tail = False

    def read(self, n: int = -1) -> bytes:
        if not self._in_tail:
            if self._head_left > 0:
                chunk = self._raw.read(min(n if n > 0 else self._head_left, self._head_left))
                self._head_left -= len(chunk)
                if chunk:
                    return chunk
            self._raw.seek(self._tail_at)
            self._in_tail = True
            # Start the tail on a line boundary, and keep the two parts apart.
            self._raw.readline()
            return b"\n"
        return self._raw.read(n)


def head_and_tail(raw: BinaryIO, size: int, max_bytes: int = MAX_FILE_BYTES) -> BinaryIO:
    """`raw` (a file of `size` bytes), or over `max_bytes` its head (a quarter) and its tail only, as
    `feed_log_file` reads a file."""
    if size <= max_bytes:
        return raw
    head = max_bytes // 4
    return _HeadTail(raw, size, head, max_bytes - head)  # type: ignore[return-value]


#: Kinds of file shared by every job of a cluster: with `since`, their older lines are dropped.
SHARED_KINDS = frozenset({"raylet", "gcs", "autoscaler", "runtime-env-setup"})
# The dated stamps Ray's files start lines with: its C++ and Python logs (`[2026-11-23 18:43:08,104`),
# Python logging (`2026-11-23 18:43:07,006\tINFO`), ISO 8601 with a zone. `rlfix.clock` reads them.
_STAMP = re.compile(rb"^\[?(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})([.,]\d{1,9})?(Z|[+-]\d{2}:?\d{2})?")
_MAX_CACHED = 4096

#: A time window in seconds since 1970 UTC; None is open on that side.
Window = tuple[float | None, float | None]


def at(value: float | str | None) -> float | None:
    """A time as seconds since 1970 UTC: a number as it is, a stamp read by `rlfix.clock` (no zone:
    this machine's local time, as the node logs write it); raise `InputError` for text that is no time."""
    if value is None or isinstance(value, (int, float)):
        return None if value is None else float(value)
    seconds = epoch(parse(value))
    if seconds is None:
        raise InputError(f"{value!r} is not a date and time (give e.g. 2026-11-22 01:20:00)")
    return seconds


def _bound(value: float | str | None, open_end: float) -> float:
    seconds = at(value)
    return open_end if seconds is None else seconds


class Since:
    """A binary stream passing only lines logged from `since` (to `until`), or inside `windows`.

    Raylet and GCS logs hold every job's history; a job's diagnosis must not blame it for a
    memory-monitor kill an hour earlier, or after it ended. Times are compared on one clock
    (`rlfix.clock`: seconds since 1970 UTC; a stamp without a zone is this machine's local time,
    as Ray writes it), to the fraction the stamp gives. Lines without a timestamp follow the
    previous line. A dropped line leaves an empty line in its place, so every line kept has its
    own line number in the file (`raylet.out:214`, not its rank among the kept ones). With
    `outside`, the lines of none of the `windows` pass instead (the node's own findings, which
    belong to no job), and lines before the first timestamp pass too, unless `untimed` is False
    (a time was asked for: a line that cannot be placed in time is not shown as inside it).
    """

    def __init__(
        self,
        raw: BinaryIO,
        since: float | str | None = None,
        until: float | str | None = None,
        *,
        windows: tuple[tuple[float | str | None, float | str | None], ...] = (),
        outside: bool = False,
        identity: Identity | None = None,
        untimed: bool = True,
    ) -> None:
        self._raw = raw
        self._identity = identity
        spans = windows if since is None else ((since, until), *windows)
        self._windows = tuple((_bound(a, -math.inf), _bound(b, math.inf)) for a, b in spans)
        self._outside = outside
        self._carry = b""
        self._keep = outside and untimed
        self._seconds: dict[bytes, float | None] = {}
        # The record being read: a stamped line and the unstamped lines that continue it (the
        # raylet's OOM kill record names its job 30 lines below its stamp), decided as one.
        self._record: list[bytes] = []
        self._record_bytes = 0

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:  # read all, as a file's read() does
            parts = []
            while part := self._read_some(1 << 20):
                parts.append(part)
            return b"".join(parts)
        return self._read_some(n if n > 0 else 1 << 20)

    def _read_some(self, n: int) -> bytes:
        while True:
            chunk = self._raw.read(n)
            if not chunk:
                rest, self._carry = self._carry, b""
                out = self._filter([rest]) if rest else b""
                return out + self._flush()
            lines = (self._carry + chunk).split(b"\n")
            self._carry = lines.pop()
            out = self._filter([line + b"\n" for line in lines])
            if out:
                return out

    def _time(self, m: re.Match[bytes]) -> float | None:
        # Lines of one second share their parse: the fraction is added to the second's time.
        key = m.group(1) + (m.group(3) or b"")
        seconds = self._seconds.get(key, -1.0)
        if seconds == -1.0:
            if len(self._seconds) >= _MAX_CACHED:
                self._seconds.clear()
            seconds = self._seconds[key] = epoch(parse(key.decode("ascii")))
        if seconds is None:
            return None
        fraction = m.group(2)
        return seconds + (float(b"0." + fraction[1:]) if fraction else 0.0)

    def _filter(self, lines: list[bytes]) -> bytes:
        out = []
        for line in lines:
            m = _STAMP.match(line)
            when = self._time(m) if m else None
            if when is not None:
                out.append(self._flush())
                inside = any(a <= when <= b for a, b in self._windows)
                self._keep = inside != self._outside
            self._record.append(line)
            self._record_bytes += len(line)
            if len(self._record) >= MAX_RECORD_LINES or self._record_bytes >= MAX_RECORD_BYTES:
                out.append(self._flush())  # bounded memory: a record this long is decided by its time
        return b"".join(out)

    def _flush(self) -> bytes:
        """The record read so far, kept or blanked as a whole (each line keeps its line number)."""
        record, self._record, self._record_bytes = self._record, [], 0
        keep = self._keep
        if self._identity is not None:
            # A record that names its job (a job id, a worker, a pid) is that job's, whatever its time.
            for line in record:
                owned = self._identity(line)
                if owned is not None:
                    keep = owned
                    break
        if keep:
            return b"".join(record)
        return b"".join(b"\n" * line.endswith(b"\n") for line in record)


#: A record (a stamped line and its continuation lines) longer than this is decided by its time alone.
MAX_RECORD_LINES = 512
MAX_RECORD_BYTES = 1 << 20
#: Wraps the stream of a shared (cluster-wide) log: a `Since` over it, or the stream as is.
Cut = Callable[[BinaryIO], BinaryIO]
#: Whether a shared-log line belongs to the reader by the identity it names: True (its own job),
#: False (another job's), None (it names none: its time decides).
Identity = Callable[[bytes], "bool | None"]


def time_cut(
    since: float | str | None,
    until: float | str | None = None,
    *,
    windows: tuple[Window, ...] = (),
    outside: bool = False,
    identity: Identity | None = None,
    untimed: bool = True,
) -> Cut | None:
    """The `Cut` passing the lines of shared logs inside `since`..`until` or `windows` (or outside them
    all); with `identity`, a line naming a job is kept or dropped by that instead of its time;
    `untimed=False` drops the lines before a file's first timestamp in `outside` mode."""
    if since is None and not windows and not outside:
        return None
    return lambda raw: Since(  # type: ignore[return-value]
        raw, since, until, windows=windows, outside=outside, identity=identity, untimed=untimed
    )


def feed_log_file(
    triage: Triage,
    log: LogFile,
    source: str,
    max_bytes: int = MAX_FILE_BYTES,
    since: float | str | None = None,
    *,
    cut: Cut | None = None,
    cut_all: bool = False,
) -> None:
    """Stream one file into `triage` under `source`; huge files are read at head and tail only.

    Shared logs (raylet, GCS, autoscaler, runtime_env setup) are read through `cut`, or from
    `since`; every file is, with `cut_all`.
    """
    cut = cut or time_cut(since)
    for item in expand([log.path]):
        if isinstance(item, Problem):
            if not item.skipped:
                triage.add_error(f"{source}: {item.message}")
            return
        chosen = cut if cut_all or log.rule.kind in SHARED_KINDS else None
        # Ray's own non-fatal trouble (the autoscaler's metrics port taken) is no job's failure.
        _feed_bounded(triage, item, source, max_bytes, quiet(log.rule.kind, chosen))


def _feed_bounded(triage: Triage, item: Input, source: str, max_bytes: int, cut: Cut | None) -> None:
    assert item.path is not None
    try:
        size = item.path.stat().st_size
        stream = item.open()
    except OSError as exc:
        triage.add_error(f"{source}: {exc.strerror or exc}")
        return
    try:
        is_plain = hasattr(stream, "seek") and not hasattr(stream, "fileobj")
        if size > max_bytes and is_plain:
            head = max_bytes // 4
            name = f"{source} (first {head >> 20} MiB and last {(max_bytes - head) >> 20} MiB of {size >> 20} MiB)"
            part: BinaryIO = _HeadTail(stream, size, head, max_bytes - head)  # type: ignore[assignment]
            triage.feed_stream(cut(part) if cut else part, name)
        else:
            triage.feed_stream(cut(stream) if cut else stream, source)  # type: ignore[arg-type]
    except (OSError, EOFError) as exc:
        triage.add_error(f"{source}: read failed: {exc}")
    finally:
        stream.close()


def feed_session_logs(
    triage: Triage,
    directory: str | os.PathLike[str],
    *,
    prefix: str = "",
    job_id: str | None = None,
    submission_id: str | None = None,
    max_bytes: int = MAX_FILE_BYTES,
    since: float | str | None = None,
    cut: Cut | None = None,
    keep: Callable[[LogFile], bool] | None = None,
    cut_all: bool = False,
    arrange: Callable[[list[LogFile]], list[LogFile]] | None = None,
) -> list[LogFile]:
    """Feed the signal-carrying files of a logs folder to `triage`; return the files read.

    Sources are named by their path relative to the folder, after `prefix` (e.g. `10.0.0.3:`).
    With `since` (seconds since 1970 UTC, or a stamp: see `at`), lines of the cluster-wide logs
    older than it are skipped;
    `cut` filters those logs instead (a job's time window; every file's with `cut_all`), and
    `keep` chooses the files, and `arrange` may reorder the chosen ones (a job's worker files by time).
    """
    root = Path(directory)
    read: list[LogFile] = []
    chosen = [
        log
        for log in session_log_files(root, job_id=job_id, submission_id=submission_id)
        if log.rule.scan and (keep is None or keep(log))
    ]
    for log in arrange(chosen) if arrange is not None else chosen:
        feed_log_file(triage, log, prefix + str(log.path.relative_to(root)), max_bytes, since, cut=cut, cut_all=cut_all)
        read.append(log)
    return read
