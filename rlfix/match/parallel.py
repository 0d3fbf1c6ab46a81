"""Feeding inputs to a scan with several processes, in input order.

Inputs are taken in order. A regular file is cut into pieces (`ranges.cut`) that worker processes
prefilter while this process checks the candidate lines of earlier pieces; anything else (stdin,
gzip, UTF-16) is read here when its turn comes. A few tasks are kept in flight, so memory stays
bounded whatever the number or size of the inputs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from rlfix.match.matcher import Budget, Matcher
from rlfix.match.ranges import Candidate, Piece, PieceScan, PieceScanner, cut
from rlfix.read.files import file_size
from rlfix.read.inputs import Input, Problem

#: Bytes read in this process before worker processes are started: starting them costs more
#: than scanning a small log.
PARALLEL_AFTER = 64 * 1024 * 1024


class Feed(Protocol):
    """What a scan (a `Triage`) offers to be fed by position."""

    @property
    def budget(self) -> Budget: ...

    def matcher_factory(self) -> Callable[[], Matcher]: ...

    def feed_input(self, item: Input, strict: bool) -> None: ...

    def problem(self, problem: Problem, strict: bool) -> None: ...

    def begin_file(self, item: Input) -> str: ...

    def end_file(self, source: str, lines: int, size: int) -> None: ...

    def check(self, source: str, first_line: int, candidates: Sequence[Candidate]) -> None: ...


class ParallelFeed:
    """Feeds `items` to `feed` with `jobs` processes prefiltering regular files."""

    def __init__(self, feed: Feed, jobs: int) -> None:
        self._feed = feed
        self._jobs = jobs
        self._scanner: PieceScanner | None = None
        self._read_here = 0
        # Inputs waiting for their turn, with their pieces (None: read in this process).
        self._queue: deque[tuple[Input | Problem, list[Piece] | None]] = deque()
        self._ready: deque[tuple[Piece, PieceScan]] = deque()

    def run(self, items: Iterable[Input | Problem], strict: bool) -> None:
        """Feed every item, in order; worker processes are stopped at the end, also on errors."""
        try:
            for item in items:
                self._plan(item, strict)
                while self._scanner is not None and self._scanner.in_flight > 2 * self._jobs:
                    self._next(strict)
            while self._queue:
                self._next(strict)
        finally:
            if self._scanner is not None:
                self._scanner.close()

    def _plan(self, item: Input | Problem, strict: bool) -> None:
        size = file_size(item) if isinstance(item, Input) else -1
        if size < 0 or (self._scanner is None and self._read_here + size < PARALLEL_AFTER):
            if size > 0:
                self._read_here += size
            self._queue.append((item, None))
            if self._scanner is None:
                self._next(strict)  # nothing in flight: no reason to wait
            return
        if self._scanner is None:
            self._scanner = PieceScanner(self._feed.matcher_factory(), self._jobs, self._feed.budget)
        assert isinstance(item, Input) and item.path is not None
        pieces = cut(str(item.path), item.skip, size)
        for piece in pieces:
            self._scanner.submit(piece)
        self._queue.append((item, pieces))

    def _next(self, strict: bool) -> None:
        """Feed the oldest queued input."""
        item, pieces = self._queue.popleft()
        if isinstance(item, Problem):
            self._feed.problem(item, strict)
        elif pieces is None:
            self._feed.feed_input(item, strict)
        else:
            source = self._feed.begin_file(item)
            first, size, error = 1, 0, None
            for _piece, scan in self._scans(len(pieces)):
                self._feed.check(source, first, scan.candidates)
                first += scan.lines
                size += scan.size
                error = error or scan.error
            self._feed.end_file(source, first - 1, size)
            if error is not None:
                self._feed.problem(Problem(item.name, error), strict)

    def _scans(self, count: int) -> Iterator[tuple[Piece, PieceScan]]:
        assert self._scanner is not None
        for _ in range(count):
            if not self._ready:
                if not self._scanner.in_flight:
                    self._scanner.flush()
                self._ready.extend(self._scanner.oldest())
            yield self._ready.popleft()
