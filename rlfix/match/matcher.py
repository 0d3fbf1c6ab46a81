"""The streaming matcher: literal prefilter over blocks, exact regex check on candidate lines only.

A log is read in blocks of a few MiB. The prefilter reports where anchor literals occur; only
the physical lines holding them are decoded, split at `\\r` redraws, normalised and checked
against the patterns that own those anchors. Ordinary lines are never decoded, which keeps the
cost near the speed of the literal scan and memory near the block size.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import regex

from rlfix.errors import Location
from rlfix.kb.anchors import derive_anchors
from rlfix.kb.load import KnowledgeBase
from rlfix.match.engines import Prefilter, make_prefilter
from rlfix.match.normalize import normalize
from rlfix.model import LazyRegex, Line, Pattern

#: Bytes read per block. Memory is a small multiple of this, whatever the log's size.
BLOCK_SIZE = 4 * 1024 * 1024
#: A line longer than this without a newline is scanned in pieces of this size.
MAX_LINE = 1024 * 1024
#: Bytes kept from the end of one piece of an overlong line to the next, so anchors that
#: straddle the cut are still found.
OVERLAP = 512
#: Candidate text around an anchor kept from an overlong line.
WINDOW = 8 * 1024
#: Seconds one regex may take on one line before it is abandoned.
REGEX_TIMEOUT = 0.05


class ProbeKind(Enum):
    """Who reads a probe's hits."""

    SIGNATURE = "signature"
    CONTEXT = "context"
    TRACEBACK = "traceback"
    ERROR_LINE = "error-line"
    TERMINATION = "termination"


@dataclass(frozen=True)
class Probe:
    """A pattern owned by a signature (`owner` = its id) or by an observer (context, tracebacks, ...).

    `kind` says who reads its hits and `detail` what the observer asked for (its own typed value);
    `owner` groups probes so that one line gives at most one hit per owner.
    Observers that only need a few sightings (which framework is this?) set `max_hits`, and those
    whose anchors can be common set `max_lines`, the candidate lines they may examine per scan:
    after that they stop costing anything, so a log's size never multiplies their cost.
    """

    owner: str
    pattern: Pattern
    max_hits: int | None = None
    max_lines: int | None = None
    kind: ProbeKind = ProbeKind.SIGNATURE
    detail: Hashable | None = None


@dataclass(frozen=True)
class Hit:
    """One probe matched one line; `offset` is where the line starts in the current block (-1: none)."""

    probe: Probe
    line: Line
    match: regex.Match[str]
    offset: int = -1


Sink = Callable[[Hit], None]
#: Called with (buffer, end) before a block's lines are matched; valid only during that call's block.
BlockHook = Callable[[bytearray | bytes, int], None]


#: Bytes a stream must have reached before numpy is imported to count its lines: importing numpy
#: costs about as much as counting 300 MB the slow way, so only long logs gain from it.
NUMPY_AFTER = 256 * 1024 * 1024
_numpy: Any = None  # False: not installed; None: not tried yet


def _load_numpy() -> Any:
    global _numpy
    if _numpy is None:
        try:
            import numpy

            _numpy = numpy
        except ImportError:
            _numpy = False
    return _numpy


def _size_hint(stream: BinaryIO) -> int:
    """The size of a regular file behind `stream` (0 for pipes and unknown streams)."""
    try:
        info = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def line_counting() -> str:
    """How large blocks have their lines counted here (shown by `rlfix kb info`)."""
    return "numpy" if _load_numpy() else "bytes.count (install numpy, or rlfix[fast], to count lines faster)"


def count_newlines(buf: bytes | bytearray, end: int, fast: bool = True) -> int:
    """Newlines in `buf[:end]`.

    Counting lines with `bytes.count` (a byte-at-a-time loop) costs as much as the literal scan
    itself; numpy, when installed (it comes with Ray and PyTorch), is several times faster.
    `fast=False` keeps to `bytes.count` (for short inputs, not worth importing numpy).
    """
    numpy: Any = _load_numpy() if fast else False
    if not numpy:
        return buf.count(b"\n", 0, end)
    view = numpy.frombuffer(memoryview(buf)[:end], dtype=numpy.uint8)
    return int(numpy.count_nonzero(view == 10))


class Budget:
    """Per-scan allowance of the limited observer probes (a Matcher is shared; budgets are not)."""

    def __init__(self, probes: Sequence[Probe]) -> None:
        self._hits = {i: p.max_hits for i, p in enumerate(probes) if p.max_hits is not None}
        self._lines = {i: p.max_lines for i, p in enumerate(probes) if p.max_lines is not None}
        self.dead: set[int] = set()

    def examine(self, index: int) -> bool:
        """Whether probe `index` may look at one more line (and count that it did)."""
        if index in self.dead:
            return False
        left = self._lines.get(index)
        if left is not None:
            if left <= 0:
                self.dead.add(index)
                return False
            self._lines[index] = left - 1
        return True

    def hit(self, index: int) -> None:
        left = self._hits.get(index)
        if left is not None:
            self._hits[index] = left - 1
            if left <= 1:
                self.dead.add(index)


def scan_buffers() -> tuple[bytearray, bytearray]:
    """The two blocks `Matcher.scan_stream` reads into; make them once and pass them to every scan."""
    size = BLOCK_SIZE + MAX_LINE + OVERLAP
    return bytearray(size), bytearray(size)


class Matcher:
    """Compiles every probe's anchors once and matches blocks or single lines against them."""

    def __init__(
        self,
        probes: Sequence[Probe],
        engine: str = "auto",
        timeout: float = REGEX_TIMEOUT,
        fallback_owners: Iterable[str] = (),
    ) -> None:
        self.probes = tuple(probes)
        self._fallbacks = frozenset(fallback_owners)
        self.timeout = timeout
        anchor_ids: dict[tuple[bytes, bool], int] = {}
        by_anchor: list[list[int]] = []
        for index, probe in enumerate(self.probes):
            for anchor in probe.pattern.anchors:
                key = (anchor.encode("utf-8"), probe.pattern.ignore_case)
                if key not in anchor_ids:
                    anchor_ids[key] = len(by_anchor)
                    by_anchor.append([])
                by_anchor[anchor_ids[key]].append(index)
        self._probes_of_anchor = [tuple(dict.fromkeys(p)) for p in by_anchor]
        self.prefilter: Prefilter = make_prefilter(list(anchor_ids), engine)

    @classmethod
    def for_knowledge(cls, kb: KnowledgeBase, extra: Iterable[Probe] = (), engine: str = "auto") -> Matcher:
        """A matcher over every pattern of every signature in `kb`, plus observer probes."""
        probes = [Probe(sig.id, p) for sig in kb for p in sig.patterns]
        probes.extend(extra)
        return cls(probes, engine=engine, fallback_owners=[sig.id for sig in kb if sig.fallback])

    @property
    def engine(self) -> str:
        return self.prefilter.name

    # --- streams -------------------------------------------------------------------

    def budget(self) -> Budget:
        """A fresh allowance for one scan (one Triage)."""
        return Budget(self.probes)

    def scan_stream(
        self,
        stream: BinaryIO,
        source: str,
        sink: Sink,
        first_line: int = 1,
        budget: Budget | None = None,
        on_block: BlockHook | None = None,
        buffers: tuple[bytearray, bytearray] | None = None,
    ) -> tuple[int, int]:
        """Scan a binary stream block by block. Returns (lines, bytes) read.

        Two buffers are read into alternately (no block is copied), so the previous block stays
        intact for `on_block(buffer, end)` to look back from a hit. Memory: two blocks plus one
        overlong line; callers scanning many inputs reuse `buffers` (from `scan_buffers()`).
        """
        buffers = buffers or scan_buffers()
        read = _block_reader(stream)
        big = _size_hint(stream) >= NUMPY_AFTER
        which, carry, line_no, total = 0, b"", first_line, 0
        while True:
            buf, have = buffers[which], len(carry)
            buf[:have] = carry
            got = read(buf, have)
            if not got:
                break
            total += got
            end = have + got
            cut = buf.rfind(b"\n", 0, end)
            if cut < 0:
                if end >= MAX_LINE:
                    # An overlong line: scan what we have, keep a tail in case an anchor straddles.
                    self.scan_block(buf, line_no, source, sink, budget, on_block, end)
                    carry = bytes(buf[end - OVERLAP : end])
                else:
                    carry = bytes(buf[:end])
                which = 1 - which
                continue
            self.scan_block(buf, line_no, source, sink, budget, on_block, cut + 1)
            line_no += count_newlines(buf, cut + 1, fast=big or total >= NUMPY_AFTER)
            carry = bytes(buf[cut + 1 : end])
            if len(carry) >= MAX_LINE:
                self.scan_block(carry, line_no, source, sink, budget, on_block)
                carry = carry[-OVERLAP:]
            which = 1 - which
        if carry:
            self.scan_block(carry, line_no, source, sink, budget, on_block)
            line_no += 1
        return line_no - first_line, total

    def scan_block(
        self,
        block: bytes | bytearray,
        first_line: int,
        source: str,
        sink: Sink,
        budget: Budget | None = None,
        on_block: BlockHook | None = None,
        end: int | None = None,
    ) -> None:
        """Match every candidate line of `block[:end]`, whose first line has number `first_line`."""
        end = len(block) if end is None else end
        if on_block is not None:
            on_block(block, end)
        hits = self.prefilter.scan(block, end)
        if not hits:
            return
        hits.sort()
        counted_to = 0
        line_no = first_line
        i = 0
        while i < len(hits):
            hit_end = hits[i][0]
            start = block.rfind(b"\n", 0, max(hit_end - 1, 0)) + 1
            stop = block.find(b"\n", hit_end - 1, end)
            if stop < 0:
                stop = end
            line_no += block.count(b"\n", counted_to, start)
            counted_to = start
            local: list[tuple[int, int]] = []
            while i < len(hits) and hits[i][0] - 1 < stop:
                local.append((hits[i][0] - start, hits[i][1]))
                i += 1
            self._candidate(bytes(block[start:stop]), local, line_no, source, sink, budget, start)

    def scan_line(self, raw: str | bytes, number: int, source: str, sink: Sink, budget: Budget | None = None) -> None:
        """Match one line (used when lines arrive one at a time: follow, run, `Triage.feed`)."""
        data = raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else raw
        data = data.rstrip(b"\n")
        hits = self.prefilter.scan(data, len(data))
        if hits:
            self._candidate(data, sorted(hits), number, source, sink, budget, -1)

    # --- one candidate line ----------------------------------------------------------

    def _candidate(
        self,
        data: bytes,
        hits: list[tuple[int, int]],
        number: int,
        source: str,
        sink: Sink,
        budget: Budget | None,
        offset: int,
    ) -> None:
        if budget is not None and budget.dead:
            # Decoding is the expensive part: skip lines whose every probe has had its say.
            hits = [h for h in hits if any(i not in budget.dead for i in self._probes_of_anchor[h[1]])]
            if not hits:
                return
        for seg_start, seg_end in _segments(data, hits):
            anchors = {a for end, a in hits if seg_start < end <= seg_end}
            if not anchors:
                continue
            raw = data[seg_start:seg_end].decode("utf-8", "replace")
            line = normalize(raw, source, number)
            if not line.message and not line.text:
                continue
            self._verify(line, anchors, sink, budget, offset)

    def _verify(self, line: Line, anchors: set[int], sink: Sink, budget: Budget | None, offset: int) -> None:
        seen_owners: set[str] = set()
        found: list[Hit] = []
        for anchor in sorted(anchors):
            for index in self._probes_of_anchor[anchor]:
                probe = self.probes[index]
                if probe.owner in seen_owners:
                    continue
                if budget is not None and not budget.examine(index):
                    continue
                m = probe.pattern.search(line.message, self.timeout)
                if m is None and line.text != line.message:
                    m = probe.pattern.search(line.text, self.timeout)
                if m is not None:
                    seen_owners.add(probe.owner)
                    found.append(Hit(probe, line, m, offset))
                    if budget is not None:
                        budget.hit(index)
        # The fallback only speaks for lines no other signature explains.
        specific = any(h.probe.kind is ProbeKind.SIGNATURE and h.probe.owner not in self._fallbacks for h in found)
        for hit in found:
            if specific and hit.probe.owner in self._fallbacks:
                continue
            sink(hit)

    def owners_matching(self, raw_line: str) -> list[str]:
        """Ids of the owners whose patterns match one raw line (for examples and lint)."""
        found: list[str] = []
        self.scan_line(raw_line, 1, "<example>", lambda hit: found.append(hit.probe.owner))
        return found


def _segments(data: bytes, hits: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte ranges to decode: `\\r` redraw segments, and windows around anchors in huge lines."""
    if b"\r" in data:
        ranges = []
        pos = 0
        for piece in data.split(b"\r"):
            ranges.append((pos, pos + len(piece)))
            pos += len(piece) + 1
    else:
        ranges = [(0, len(data))]
    out: list[tuple[int, int]] = []
    for start, end in ranges:
        if end - start <= 2 * WINDOW + MAX_PREFIX_BYTES:
            out.append((start, end))
            continue
        # Overlong: the head (for prefixes) plus a window around each anchor, merged.
        windows = [(start, start + MAX_PREFIX_BYTES)]
        for hit_end, _ in hits:
            if start < hit_end <= end:
                windows.append((max(start, hit_end - WINDOW), min(end, hit_end + WINDOW)))
        windows.sort()
        merged = [windows[0]]
        for w_start, w_end in windows[1:]:
            if w_start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], w_end))
            else:
                merged.append((w_start, w_end))
        out.extend(merged)
    return out


#: Bytes at the start of an overlong line kept so its prefixes can still be read.
MAX_PREFIX_BYTES = 512


def _block_reader(stream: BinaryIO) -> Callable[[bytearray, int], int]:
    """A function that reads the next block into `buf` after `have` bytes; returns bytes read."""
    readinto = getattr(stream, "readinto", None)
    if readinto is not None:
        return lambda buf, have: int(readinto(memoryview(buf)[have : have + BLOCK_SIZE]) or 0)

    def copy(buf: bytearray, have: int) -> int:
        chunk = stream.read(BLOCK_SIZE)
        buf[have : have + len(chunk)] = chunk
        return len(chunk)

    return copy


def observer_pattern(source: str, anchors: tuple[str, ...] = ()) -> Pattern:
    """A Pattern for an observer probe (context, tracebacks, unknown failures), with its anchors."""
    derived, caseless = derive_anchors(source)
    anchors = tuple(a.lower() for a in anchors) if anchors and caseless else anchors or derived
    if not anchors:
        raise ValueError(f"context pattern without an anchor literal: {source!r}")
    return Pattern(
        source=source,
        literal=False,
        anchors=anchors,
        ignore_case=caseless,
        compiled=LazyRegex(source, caseless),
        location=Location("rlfix/observers"),
    )
