"""Scanning regular files in byte ranges, in this process or in worker processes.

A file is cut into ranges that end just after a newline. Each range is read and put through the
literal prefilter on its own (the expensive, per-byte part), giving the lines that hold an anchor
and the range's newline count. The caller then checks those candidate lines against the patterns
in file order, in one process, with one budget: that part keeps every order-dependent decision
(observer budgets, first occurrences, evidence samples), so any number of processes gives the
report of a serial run, byte for byte.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, overload

if TYPE_CHECKING:  # the process pool is imported only when one is started
    from concurrent.futures import Executor, Future

from rlfix.match.matcher import DIGITS_AS_ZERO, Budget, Matcher, scan_buffers

#: Bytes per range: large enough that a range costs far more than shipping its result, small
#: enough that two workers share a 1 GB log evenly and a range's candidates stay few megabytes.
RANGE_BYTES = 32 * 1024 * 1024
#: Files smaller than this are sent to a worker together, up to RANGE_BYTES or BATCH_FILES per task.
BATCH_FILES = 256
#: Tasks sent between two updates of the anchors workers leave out (finished probes').
DEAD_EVERY = 4
#: Bytes read at a time when looking for the newline that ends a range.
_PROBE = 64 * 1024


class Piece(NamedTuple):
    """Bytes `[start, stop)` of a file; `skip` is where its text starts (a leading NUL hole)."""

    path: str
    start: int
    stop: int
    skip: int = 0


class Candidate(NamedTuple):
    """A line holding an anchor: which line of its piece it is (from 0), where it starts in its file,
    its bytes and the (end offset in the line, anchor) pairs found in it.

    `same` (on the first line of a run): how many of the candidates right after this one are the
    same line but for digits (`Matcher.repeat_key`), on the same side of the head window. Once one
    of them is counted as a repeat, the checking process counts the rest of the run at once.
    """

    nth: int
    position: int
    data: bytes
    hits: list[tuple[int, int]]
    same: int = 0


class Candidates(Sequence[Candidate]):
    """A piece's candidate lines, stored for the trip between processes: places in arrays, bytes in
    one string, and the hits once per run.

    A chatty log sends tens of thousands of repeats of one warning per gigabyte; as objects, each
    cost about as much to pickle and unpickle as to find. Here a piece is a handful of objects
    whatever its candidate count, and a `Candidate` is built only for the lines that are read.
    """

    def __init__(
        self,
        nths: array[int],
        positions: array[int],
        ends: array[int],
        data: bytes,
        hits: list[list[tuple[int, int]]],
        which: array[int],
        same: dict[int, int],
    ) -> None:
        self._nths, self._positions, self._ends, self._data = nths, positions, ends, data
        self._hits, self._which, self._same = hits, which, same

    def __len__(self) -> int:
        return len(self._nths)

    @overload
    def __getitem__(self, index: int) -> Candidate: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Candidate]: ...

    def __getitem__(self, index: int | slice) -> Candidate | Sequence[Candidate]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("candidate index out of range")
        start = self._ends[index - 1] if index > 0 else 0
        data = self._data[start : self._ends[index]]
        hits = self._hits[self._which[index]]
        return Candidate(self._nths[index], self._positions[index], data, hits, self._same.get(index, 0))


@dataclass
class PieceScan:
    """What the prefilter found in one piece: newlines (lines, for the last piece of a file that
    does not end with one), bytes and candidate lines."""

    lines: int
    size: int
    candidates: Sequence[Candidate]
    #: Why the piece could not be read to its end (what was read is kept).
    error: str | None = None


def cut(path: str, skip: int, size: int, target: int | None = None) -> list[Piece]:
    """Ranges of about `target` bytes (RANGE_BYTES) covering `[skip, size)`, each ending just after a newline."""
    target = target or RANGE_BYTES
    if size - skip <= target:  # one piece: no line end to look for (most files of a directory)
        return [Piece(path, skip, size, skip)]
    pieces: list[Piece] = []
    start = skip
    with open(path, "rb") as fh:
        while size - start > target:
            stop = _line_end(fh, start + target, size)
            if stop >= size:
                break
            pieces.append(Piece(path, start, stop, skip))
            start = stop
    pieces.append(Piece(path, start, size, skip))
    return pieces


def _line_end(fh: BinaryIO, at: int, size: int) -> int:
    """The offset just after the first newline at or after `at` (or `size`)."""
    fh.seek(at)
    while at < size:
        chunk = fh.read(_PROBE)
        if not chunk:
            break
        newline = chunk.find(b"\n")
        if newline >= 0:
            return at + newline + 1
        at += len(chunk)
    return size


class _Window:
    """A file object limited to `[start, stop)`: what `Matcher.scan_stream` reads a piece through."""

    def __init__(self, path: str, start: int, stop: int) -> None:
        self._fh = open(path, "rb")  # noqa: SIM115 - closed by close(), from the `with` in scan_piece
        self._fh.seek(start)
        self._left = stop - start

    def readinto(self, buffer: memoryview) -> int:
        if self._left <= 0:
            return 0
        view = buffer[: min(len(buffer), self._left)]
        got = self._fh.readinto(view) or 0
        self._left -= got
        return got

    def close(self) -> None:
        self._fh.close()


def scan_piece(
    matcher: Matcher,
    piece: Piece,
    dead_anchors: frozenset[int],
    buffers: tuple[bytearray, bytearray] | None = None,
) -> PieceScan:
    """Prefilter one piece; `dead_anchors` are left out of the scan (their probes are done).
    `buffers` (from `scan_buffers()`) are reused across pieces: a thousand small files must not
    cost a thousand pairs of multi-megabyte blocks."""
    budget = matcher.budget()
    budget.assume_dead(dead_anchors)
    found = _Runs(matcher)

    try:
        window = _Window(piece.path, piece.start, piece.stop)
    except OSError as exc:
        return PieceScan(0, 0, found.candidates(), f"read failed: {exc.strerror or exc}")
    try:
        lines, size = matcher.scan_stream(
            window,  # type: ignore[arg-type]
            "",
            None,
            first_line=0,
            budget=budget,
            collect=found.collect,
            base=piece.start - piece.skip,
            buffers=buffers,
            fast=True,  # worker processes start only for large scans: numpy's import pays
        )
    except OSError as exc:
        return PieceScan(0, 0, found.candidates(), f"read failed: {exc.strerror or exc}")
    finally:
        window.close()
    return PieceScan(lines, size, found.candidates())


class _Runs:
    """Collects candidate lines in order into `Candidates`, marking runs of the same line (digits
    aside, with the same hits) on their first line."""

    def __init__(self, matcher: Matcher) -> None:
        self._matcher = matcher
        self._head_limit = matcher.head_limit
        self._nths: array[int] = array("q")
        self._positions: array[int] = array("q")
        self._ends: array[int] = array("q")
        self._parts: list[bytes] = []
        self._size = 0
        self._hits: list[list[tuple[int, int]]] = []
        self._which: array[int] = array("q")
        # Run lengths by the index of their first line; the key of the run being extended.
        self._runs: dict[int, int] = {}
        self._run_start = -1
        self._run_key: tuple[bytes, bool] | None = None

    def collect(self, data: bytes, hits: list[tuple[int, int]], nth: int, position: int) -> None:
        run_key = self._run_key
        # The common case first: the run goes on. The same hits, and the same bytes but for digits,
        # give the same `repeat_key` (same length, same `\r`, same anchors).
        if (
            run_key is not None
            and hits == self._hits[-1]
            and data.translate(DIGITS_AS_ZERO) == run_key[0]
            and (position < self._head_limit) == run_key[1]
        ):
            self._runs[self._run_start] = self._runs.get(self._run_start, 0) + 1
        else:
            masked = self._matcher.repeat_key(data, hits)
            self._run_start = len(self._nths)
            self._run_key = None if masked is None else (masked, position < self._head_limit)
            self._hits.append(hits)
        self._nths.append(nth)
        self._positions.append(position)
        self._size += len(data)
        self._ends.append(self._size)
        self._parts.append(data)
        self._which.append(len(self._hits) - 1)

    def candidates(self) -> Candidates:
        data = b"".join(self._parts)
        return Candidates(self._nths, self._positions, self._ends, data, self._hits, self._which, self._runs)


# --- worker processes ------------------------------------------------------------------

_worker_matcher: Matcher | None = None
_worker_buffers: tuple[bytearray, bytearray] | None = None


def _init_worker(factory: Callable[[], Matcher]) -> None:
    global _worker_matcher, _worker_buffers
    _worker_matcher = factory()
    _worker_buffers = scan_buffers()


def _scan_task(pieces: Sequence[Piece], dead_anchors: frozenset[int]) -> list[PieceScan]:
    assert _worker_matcher is not None
    return [scan_piece(_worker_matcher, p, dead_anchors, _worker_buffers) for p in pieces]


class PieceScanner:
    """Prefilters pieces in `jobs` worker processes, a few tasks ahead, and yields their scans in
    the order they were submitted.

    The dead anchors are read from `budget` when a task is sent, so work sent later skips more.
    """

    def __init__(self, factory: Callable[[], Matcher], jobs: int, budget: Budget) -> None:
        self._budget = budget
        self._jobs = jobs
        self._factory = factory
        self._pool: Executor | None = None
        self._batch: list[Piece] = []
        self._batch_bytes = 0
        self._tasks: deque[tuple[list[Piece], Future[list[PieceScan]]]] = deque()
        self._sent = 0
        self._dead: frozenset[int] = frozenset()

    def submit(self, piece: Piece) -> None:
        """Queue `piece`; small pieces wait to be sent together."""
        self._batch.append(piece)
        self._batch_bytes += piece.stop - piece.start
        if self._batch_bytes >= RANGE_BYTES or len(self._batch) >= BATCH_FILES:
            self.flush()

    def flush(self) -> None:
        """Send the pieces queued so far as one task."""
        if not self._batch:
            return
        batch, self._batch, self._batch_bytes = self._batch, [], 0
        if self._pool is None:
            from rlfix.process_pool import process_pool  # only when a pool is started

            self._pool = process_pool(self._jobs, _init_worker, (self._factory,))
        if self._sent % DEAD_EVERY == 0:
            # A new set of anchors costs each worker a compile: send one every few tasks.
            self._dead = self._budget.dead_now()
        self._sent += 1
        self._tasks.append((batch, self._pool.submit(_scan_task, batch, self._dead)))

    @property
    def in_flight(self) -> int:
        """Tasks sent and not read back yet."""
        return len(self._tasks)

    def oldest(self) -> list[tuple[Piece, PieceScan]]:
        """The scans of the oldest task sent (waiting for it)."""
        batch, future = self._tasks.popleft()
        return list(zip(batch, future.result(), strict=True))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
