"""Live diagnosis of a growing log: `tail -f` that alerts on the first root cause.

`follow()` reads the file from its start, then waits for more. It survives the two ways logs are
rotated: truncation in place (`copytruncate`: the size drops below what was read, so reading
restarts at offset 0) and replacement (the path names a new inode: the old file is read to its end,
then the new one from its start). A path that vanishes for a while is waited for. Memory stays
bounded: the file is read in blocks and a line with no newline is scanned in pieces of
`rlfix.match.MAX_LINE` bytes.

`LineFeeder` and `alert_on_roots` are shared with `rlfix run`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import BinaryIO, Protocol

from rlfix.alerts import Alert
from rlfix.core import Triage
from rlfix.errors import InputError
from rlfix.integrations.alerting import Alerter
from rlfix.match.matcher import MAX_LINE, OVERLAP
from rlfix.model import Evidence, Kind, Severity
from rlfix.report import Report

#: Bytes read per call while catching up with a file.
READ_SIZE = 1024 * 1024
#: Seconds without growth after which `rlfix diagnose --follow` stops once a fatal root cause is known.


class LineFeeder:
    """Cuts a byte stream into lines for `Triage.feed`, keeping at most `max_line` bytes pending."""

    def __init__(self, triage: Triage, source: str, max_line: int = MAX_LINE) -> None:
        self.triage = triage
        self.source = source
        self.max_line = max_line
        self._partial = bytearray()

    def push(self, data: bytes) -> None:
        """Feed every line completed by `data`; keep the unfinished rest."""
        feed, source, start = self.triage.feed, self.source, 0
        if self._partial:
            nl = data.find(b"\n")
            if nl < 0:
                self._partial += data
                self._spill()
                return
            self._partial += data[: nl + 1]
            feed(bytes(self._partial), source)
            self._partial.clear()
            start = nl + 1
        nl = data.find(b"\n", start)
        while nl >= 0:
            feed(data[start : nl + 1], source)
            start = nl + 1
            nl = data.find(b"\n", start)
        if start < len(data):
            self._partial += data[start:]
            self._spill()

    def _spill(self) -> None:
        if len(self._partial) >= self.max_line:
            # An overlong line: scan what we have and keep a tail, so an anchor cut in two is still
            # found. Each piece counts as a line, so later line numbers shift by one per piece.
            self.triage.feed(bytes(self._partial), self.source)
            del self._partial[:-OVERLAP]

    def flush(self) -> None:
        """Feed the unfinished last line, if any (at end of input)."""
        if self._partial:
            self.triage.feed(bytes(self._partial), self.source)
            self._partial.clear()

    def discard(self) -> None:
        """Forget the unfinished line (the file was truncated under it)."""
        self._partial.clear()


@contextlib.contextmanager
def alert_on_roots(triage: Triage, on_alert: Alert) -> Iterator[Alerter]:
    """Alert through `on_alert(evidence, id)` as the shared policy says (`alerting.Alerter`: once per
    root cause, never on a warning or a symptom of an alerted root); on leaving, the alerts still
    waiting fire. A root seen only on a warning line is not alerted here: the report printed at the
    end says whether the run went past it."""
    previous = triage.on_new
    alerter = Alerter(triage.kb, on_alert)
    alert = alerter.callback(lambda: triage)

    def on_new(evidence: Evidence, sig_id: str) -> None:
        if previous is not None:
            previous(evidence, sig_id)
        alert(evidence, sig_id)

    triage.on_new = on_new
    try:
        yield alerter
    finally:
        triage.on_new = previous
        alerter.tick(force=True)


class StopFlag:
    """A stop request that a signal handler may raise safely.

    A `threading.Event` is not safe there: `Event.set()` takes the lock that `Event.wait()` in
    the interrupted main thread may be holding, and the process hangs.
    """

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float) -> bool:
        if not self._set:
            time.sleep(timeout)
        return self._set


class Stopper(Protocol):
    """Anything with `is_set()` and `wait(timeout)`: a StopFlag, or a threading.Event from another thread."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float) -> bool: ...


def has_fatal_root(triage: Triage) -> bool:
    """Whether a fatal root cause has been seen: the job is most likely dead."""
    for sig_id in triage.seen():
        sig = triage.kb.get(sig_id)
        if sig is not None and sig.kind is Kind.ROOT and sig.severity is Severity.FATAL:
            return True
    return False


def follow(
    path: str | os.PathLike[str],
    triage: Triage,
    *,
    on_alert: Alert,
    poll: float = 0.25,
    idle_exit: float | None = None,
    stop: Stopper | None = None,
) -> Report:
    """Follow `path` like `tail -f` from its first line, feeding `triage`, until told to stop.

    Stops when `stop` is set, or when the file has not grown for `idle_exit` seconds after a
    fatal root cause was seen (a crashed job writes no more). `on_alert` is called the moment
    each root cause first appears. Returns the report of everything read. Raises `InputError`
    when the file cannot be opened.
    """
    name = os.fspath(path)
    feeder = LineFeeder(triage, name)
    fh = _open(Path(name))
    last_growth = time.monotonic()
    try:
        with alert_on_roots(triage, on_alert) as alerter:
            while True:
                if stop is not None and stop.is_set():
                    # Checked before every read: on /dev/zero or a fast writer reads never come
                    # back empty, and Ctrl-C must still end the run at once.
                    break
                chunk = _read(fh)
                if chunk:
                    feeder.push(chunk)
                    last_growth = time.monotonic()
                    continue
                alerter.tick()
                reopened = _follow_rotation(Path(name), fh, feeder)
                if reopened is not None:
                    fh, last_growth = reopened, time.monotonic()
                    continue
                if idle_exit is not None and time.monotonic() - last_growth >= idle_exit and has_fatal_root(triage):
                    break
                if stop is not None:
                    stop.wait(poll)
                else:
                    time.sleep(poll)
            feeder.flush()
    finally:
        fh.close()
    return triage.report()


def _follow_rotation(path: Path, fh: BinaryIO, feeder: LineFeeder) -> BinaryIO | None:
    """After truncation, read again from the start; after rotation, finish the old file and open
    the new one. Returns the handle to read from next, or None when nothing changed."""
    change = _change(path, fh)
    if change == "truncated":
        fh.seek(0)
        feeder.discard()
        return fh
    if change == "replaced":
        rest = fh.read(READ_SIZE)
        while rest:
            feeder.push(rest)
            rest = fh.read(READ_SIZE)
        feeder.flush()
        fh.close()
        return _open(path)
    return None


def _read(fh: BinaryIO) -> bytes:
    """The next block, or b"" when there is none yet (a non-blocking pipe says so with None)."""
    try:
        return fh.read(READ_SIZE) or b""
    except BlockingIOError:
        return b""


def _open(path: Path) -> BinaryIO:
    try:
        if path.is_dir():
            raise InputError(f"{path}: is a directory; --follow needs one file")
        if stat.S_ISFIFO(path.stat().st_mode):
            # Non-blocking: a blocking open waits for a writer and a blocking read for data, and
            # neither returns to the loop that honours Ctrl-C and SIGTERM.
            return os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb", buffering=0)
        return path.open("rb", buffering=0)
    except InputError:
        raise
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc


def _change(path: Path, fh: BinaryIO) -> str:
    """'truncated', 'replaced' or '' (unchanged, or the path is briefly missing mid-rotation)."""
    try:
        now = os.stat(path)
    except OSError:
        return ""
    opened = os.fstat(fh.fileno())
    if not stat.S_ISREG(opened.st_mode):  # a pipe is neither truncated nor rotated
        return ""
    if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
        return "replaced"
    if now.st_size < fh.tell():
        return "truncated"
    return ""


@contextlib.contextmanager
def stop_on_signals(signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[StopFlag]:
    """A flag raised by Ctrl-C (and SIGTERM) instead of an exception, so a report can still be printed."""
    stop = StopFlag()

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous: dict[int, Callable[[int, FrameType | None], object] | int | None] = {}
    for sig in signals:
        previous[sig] = signal.signal(sig, handler)
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
