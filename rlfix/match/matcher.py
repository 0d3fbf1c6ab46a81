"""The streaming matcher: literal prefilter over blocks, exact regex check on candidate lines only.

A log is read in blocks of a few MiB. The prefilter reports where anchor literals occur; only
the physical lines holding them are decoded, split at `\\r` redraws, normalised and checked
against the patterns that own those anchors. Ordinary lines are never decoded, which keeps the
cost near the speed of the literal scan and memory near the block size.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    pass

from rlfix.errors import Location
from rlfix.kb.anchors import derive_anchors
from rlfix.kb.load import KnowledgeBase
from rlfix.match.engines import Prefilter, make_prefilter
from rlfix.match.lines import NUMPY_AFTER, BlockLines
from rlfix.match.normalize import normalize
from rlfix.model import SEARCH_TIMEOUTS, LazyRegex, Line, Match, Pattern

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
#: Pruned prefilters a Matcher keeps (each a compiled literal set).
MAX_PRUNED = 16
#: Bytes scanned between two rebuilds of a scan's prefilter without its finished probes' anchors.
REBUILD_BYTES = 64 * 1024 * 1024
#: Lines up to this long are remembered when no pattern matched them (a repeated warning is
#: checked once), and this many of them per scan.
QUIET_LINE_BYTES = 2048
QUIET_LINES = 16_384
#: Every ASCII digit becomes "0": repeats of a line that differ only in numbers share one key.
DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
# What may hold digits in a regex without making it care which digits: quantifiers, \d, escapes,
# classes of all digits.
_NUMBERLESS = re.compile(
    r"\{\d+(?:,\d*)?\}|\\[dDx](?:[0-9a-fA-F]{2})?|\\[0-7]{3}"
    # A character class that holds every digit (`[0-9a-f]`) and no other digit character.
    r"|\[\^?(?:[^\]\\0-9]|\\.)*0-9(?:[^\]\\0-9]|\\.)*\]"
)


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
    `head_bytes` confines a probe to lines that start within the first that many bytes of each
    input (job context is printed at the start): past it, its anchors leave the literal scan.
    """

    owner: str
    pattern: Pattern
    max_hits: int | None = None
    max_lines: int | None = None
    head_bytes: int | None = None
    kind: ProbeKind = ProbeKind.SIGNATURE
    detail: Hashable | None = None


@dataclass(frozen=True)
class Hit:
    """One probe matched one line.

    `offset` is where the line starts in the current block (-1: fed line by line), `position`
    where it starts in its input (-1: unknown).
    """

    probe: Probe
    line: Line
    match: Match
    offset: int = -1
    position: int = -1


Sink = Callable[[Hit], None]
#: Offered a repeat of a line that matched these probes before; True when it counted it. With
#: `again` > 0, that many lines are offered that are the same (digits aside) as the last one it
#: counted, with no other line checked since: nothing that decided to count that one can have
#: changed, so it just counts them.
RepeatHook = Callable[[tuple["Probe", ...], Line, int], bool]
#: What a line matched (no probes: nothing) and, for a repeat, the line to count it as.
Verdict = tuple[tuple["Probe", ...], Line | None]
#: Receives a candidate line unchecked: (bytes, [(end offset in the line, anchor)], line number, position).
Collect = Callable[[bytes, list[tuple[int, int]], int, int], None]
#: Called with (buffer, end) before a block's lines are matched; valid only during that call's block.
BlockHook = Callable[[bytearray | bytes, int], None]


def _size_hint(stream: BinaryIO) -> int:
    """The size of a regular file behind `stream` (0 for pipes and unknown streams)."""
    try:
        info = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


class Budget:
    """Per-scan state of a shared Matcher: the limited observer probes' allowance, the literal scan
    that still matters, and counts for `--stats`.

    When every probe behind an anchor has had its say, the anchor leaves this scan's prefilter
    (rebuilt at the next block), so a word that is on every line of a chatty log stops costing
    anything once the probes that wanted it are done.
    """

    def __init__(self, matcher: Matcher) -> None:
        probes = matcher.probes
        self._matcher = matcher
        self._hits = {i: p.max_hits for i, p in enumerate(probes) if p.max_hits is not None}
        self._lines = {i: p.max_lines for i, p in enumerate(probes) if p.max_lines is not None}
        self.dead: set[int] = set()
        self.dead_anchors: frozenset[int] = frozenset()
        self._stale = False
        self._head: Prefilter | None = matcher.prefilter
        self._body: Prefilter | None = None
        self._scanned = self._built_at = 0
        #: Physical lines (or `\r` segments) decoded and checked against the patterns.
        self.candidates = 0
        #: Repeats of a known line counted by `on_repeat` without being checked again.
        self.repeats = 0
        #: Called with a repeat's probes and its line; True when it took the line as counted.
        self.on_repeat: RepeatHook | None = None
        #: The last repeat `on_repeat` counted, while no line has been checked since: its masked
        #: bytes, whether it was in a head window, its input, probes and line.
        self.last_repeat: tuple[bytes, bool, str, tuple[Probe, ...], Line] | None = None
        # What digit-masked lines (and whether they were in a head window) matched before: the
        # probes that matched, () for none.
        self._verdicts: dict[tuple[bool, bytes], Verdict] = {}

    def verdict(self, key: tuple[bool, bytes]) -> Verdict | None:
        """What a line with this key matched before (no probes: nothing), or None if it is new."""
        return self._verdicts.get(key)

    def remember(self, key: tuple[bool, bytes], probes: tuple[Probe, ...], shape: Line | None = None) -> None:
        """Remember what a line matched and, when its fields hold no digit, the line itself."""
        if len(self._verdicts) >= QUIET_LINES:
            self._verdicts.clear()
        self._verdicts[key] = (probes, shape)

    def examine(self, index: int) -> bool:
        """Whether probe `index` may look at one more line (and count that it did)."""
        if index in self.dead:
            return False
        left = self._lines.get(index)
        if left is not None:
            if left <= 0:
                self._kill(index)
                return False
            self._lines[index] = left - 1
        return True

    def hit(self, index: int) -> None:
        left = self._hits.get(index)
        if left is not None:
            self._hits[index] = left - 1
            if left <= 1:
                self._kill(index)

    def dead_now(self) -> frozenset[int]:
        """The anchors no live probe needs, as of now (for work sent to other processes)."""
        return self._matcher.dead_anchors(self.dead)

    def assume_dead(self, anchors: frozenset[int]) -> None:
        """Leave `anchors` out of the scan (a worker told which anchors the whole scan no longer needs)."""
        self.dead_anchors = anchors
        self._head = self._body = None

    def _kill(self, index: int) -> None:
        self.dead.add(index)
        self._stale = True

    def refresh(self, position: int, size: int = 0) -> Prefilter:
        """The prefilter for a block of `size` bytes starting at `position` of its input: without
        the anchors no live probe needs there.

        Finished probes leave it at most once per REBUILD_BYTES scanned: compiling a literal set
        costs tens of milliseconds, and probes finish one by one (the check of each line drops a
        finished probe's hits anyway, so the answers do not depend on when this happens).
        """
        self._scanned += size
        if self._stale and self._scanned - self._built_at >= REBUILD_BYTES:
            self._stale = False
            self._built_at = self._scanned
            self.dead_anchors = self._matcher.dead_anchors(self.dead)
            self._body = self._head = None
        if position < self._matcher.head_limit:
            if self._head is None:
                self._head = self._matcher.prefilter_without(self.dead_anchors)
            return self._head
        if self._body is None:
            self._body = self._matcher.prefilter_without(self.dead_anchors | self._matcher.head_only)
        return self._body


#: Pairs of scan blocks given back (`release_buffers`), reused before new ones are made.
_SPARE_BUFFERS: list[tuple[bytearray, bytearray]] = []
_SPARE_LOCK = threading.Lock()
#: Spare pairs kept: one per thread scanning at once is plenty.
MAX_SPARE_BUFFERS = 4


def scan_buffers() -> tuple[bytearray, bytearray]:
    """The two blocks `Matcher.scan_stream` reads into; make them once and pass them to every scan.

    A pair given back by `release_buffers` is reused: its old bytes are never read, since every
    scan reads into the blocks before it looks at them.
    """
    with _SPARE_LOCK:
        if _SPARE_BUFFERS:
            return _SPARE_BUFFERS.pop()
    size = BLOCK_SIZE + MAX_LINE + OVERLAP
    return bytearray(size), bytearray(size)


def release_buffers(pair: tuple[bytearray, bytearray]) -> None:
    """Give a pair of scan blocks back for the next scan of this process."""
    with _SPARE_LOCK:
        if len(_SPARE_BUFFERS) < MAX_SPARE_BUFFERS:
            _SPARE_BUFFERS.append(pair)


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
        heads = [p.head_bytes for p in self.probes if p.head_bytes is not None]
        #: Where the last head window ends, and the anchors only head-window probes need.
        self.head_limit = max(heads, default=0)
        self.head_only = frozenset(
            a
            for a, owners in enumerate(self._probes_of_anchor)
            if all(self.probes[i].head_bytes is not None for i in owners)
        )
        # Anchors whose every pattern matches a line whatever its digits are: a line that held
        # only these and matched nothing need not be checked again when it repeats.
        self._number_blind = [
            all(_number_blind(self.probes[i].pattern.source) for i in owners) for owners in self._probes_of_anchor
        ]
        # Probes whose repeats can be counted without a match: a signature's pattern with no
        # named group (no value that could differ), not a fallback (it depends on the other hits).
        self._repeatable = {
            p: p.kind is ProbeKind.SIGNATURE and p.owner not in self._fallbacks and "(?P<" not in p.pattern.source
            for p in self.probes
        }
        self._anchors = list(anchor_ids)
        self._engine_choice = engine
        self.prefilter: Prefilter = make_prefilter(self._anchors, engine)
        # Prefilters without the anchors of finished probes, by the set left out (few per KB:
        # the limited probes finish in much the same order in every log).
        self._pruned: dict[frozenset[int], Prefilter] = {frozenset(): self.prefilter}

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
        return Budget(self)

    def dead_anchors(self, dead_probes: set[int]) -> frozenset[int]:
        """Anchors whose every probe is in `dead_probes`."""
        return frozenset(a for a, owners in enumerate(self._probes_of_anchor) if all(i in dead_probes for i in owners))

    def prefilter_without(self, dead: frozenset[int]) -> Prefilter:
        """A prefilter over every anchor but `dead` (anchor indices stay those of the full set)."""
        found = self._pruned.get(dead)
        if found is None:
            if len(self._pruned) > MAX_PRUNED:
                self._pruned = {frozenset(): self.prefilter}
            found = make_prefilter(self._anchors, self._engine_choice, skip=dead)
            self._pruned[dead] = found
        return found

    def scan_stream(
        self,
        stream: BinaryIO,
        source: str,
        sink: Sink | None,
        first_line: int = 1,
        budget: Budget | None = None,
        on_block: BlockHook | None = None,
        buffers: tuple[bytearray, bytearray] | None = None,
        collect: Collect | None = None,
        base: int = 0,
        fast: bool = False,
    ) -> tuple[int, int]:
        """Scan a binary stream block by block. Returns (lines, bytes) read.

        Two buffers are read into alternately (no block is copied), so the previous block stays
        intact for `on_block(buffer, end)` to look back from a hit. Memory: two blocks plus one
        overlong line; callers scanning many inputs reuse `buffers` (from `scan_buffers()`).
        `base` is where the stream starts in its input. With `collect`, candidate lines are handed
        to it unchecked (see `ranges.py`) instead of being matched and sent to `sink`. `fast`:
        count lines with numpy from the start, the stream being part of a large scan (else only a
        regular file of NUMPY_AFTER bytes or more does, or a stream once it has been that long).
        """
        state = _StreamState(self, source, sink, budget, on_block, collect, first_line, base)
        buffers = buffers or scan_buffers()
        read = _block_reader(stream)
        big = fast or _size_hint(stream) >= NUMPY_AFTER
        which, carry, total = 0, b"", 0
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
                carry = state.overlong(buf, end) if end >= MAX_LINE else bytes(buf[:end])
            else:
                state.block(buf, cut + 1, fast=big or total >= NUMPY_AFTER)
                carry = bytes(buf[cut + 1 : end])
                if len(carry) >= MAX_LINE:
                    carry = state.overlong(carry, len(carry))
            which = 1 - which
        if carry:
            state.block(carry, len(carry), fast=False)
        return state.line_no - first_line, total

    def scan_block(
        self,
        block: bytes | bytearray,
        first_line: int,
        source: str,
        sink: Sink | None,
        budget: Budget | None = None,
        on_block: BlockHook | None = None,
        end: int | None = None,
        base: int = 0,
        collect: Collect | None = None,
        lines: BlockLines | None = None,
    ) -> tuple[int, int]:
        """Match every candidate line of `block[:end]`, whose first line has number `first_line`
        and which starts at byte `base` of its input. Returns how far newlines were counted on
        the way: (offset, the number of the line that starts there). `lines` counts them, started
        on this block (by default, with `bytes.count`)."""
        end = len(block) if end is None else end
        if on_block is not None:
            on_block(block, end)
        prefilter = budget.refresh(base, end) if budget is not None else self.prefilter
        hits = prefilter.scan(block, end)
        if not hits:
            return 0, first_line
        count = (lines or BlockLines.over(block, end)).count
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
            line_no += count(counted_to, start)
            counted_to = start
            local: list[tuple[int, int]] = []
            while i < len(hits) and hits[i][0] - 1 < stop:
                local.append((hits[i][0] - start, hits[i][1]))
                i += 1
            if collect is not None:
                collect(bytes(block[start:stop]), local, line_no, base + start)
            else:
                assert sink is not None
                self._candidate(bytes(block[start:stop]), local, line_no, source, sink, budget, start, base + start)
        return counted_to, line_no

    def check(
        self,
        data: bytes,
        hits: list[tuple[int, int]],
        number: int,
        source: str,
        sink: Sink,
        budget: Budget | None,
        position: int,
    ) -> None:
        """Match one candidate line collected by `scan_stream(collect=...)` and send its hits to `sink`."""
        self._candidate(data, hits, number, source, sink, budget, -1, position)

    def scan_line(
        self,
        raw: str | bytes,
        number: int,
        source: str,
        sink: Sink,
        budget: Budget | None = None,
        position: int = 0,
    ) -> None:
        """Match one line (used when lines arrive one at a time: follow, run, `Triage.feed`);
        `position` is where it starts in its input (the bytes fed before it)."""
        data = raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else raw
        data = data.rstrip(b"\n")
        prefilter = budget.refresh(position, len(data)) if budget is not None else self.prefilter
        hits = prefilter.scan(data, len(data))
        if hits:
            self._candidate(data, sorted(hits), number, source, sink, budget, -1, position)

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
        position: int,
    ) -> None:
        key = None
        # The common case first: a whole short line seen before, that matched nothing or repeats.
        masked = self.repeat_key(data, hits)
        if budget is not None and masked is not None:
            head = position < self.head_limit
            # A warning printed every 30 s between lines that hold no anchor: the same again.
            if self._again(budget, masked, head, source, 1):
                return
            key = (head, _digest(masked))
            if self._known(budget, key, data, number, source, masked):
                return
        if position >= self.head_limit and self.head_only:
            # A block that began in the head window still reported the head-only anchors.
            hits = [h for h in hits if h[1] not in self.head_only]
        if budget is not None and budget.dead:
            # Decoding is the expensive part: skip lines whose every probe has had its say.
            hits = [h for h in hits if any(i not in budget.dead for i in self._probes_of_anchor[h[1]])]
        if not hits:
            return
        for seg_start, seg_end in _segments(data, hits):
            anchors = {a for end, a in hits if seg_start < end <= seg_end}
            if anchors:
                whole = key if seg_end - seg_start == len(data) else None
                self._check_segment(
                    (data[seg_start:seg_end], number, source), anchors, sink, budget, offset, position, whole
                )

    def repeat_key(self, data: bytes, hits: list[tuple[int, int]]) -> bytes | None:
        """A short line's bytes with its digits masked, when its anchors read no digit: two lines
        with the same key hold the same anchors and, once one is known, are checked alike."""
        if len(data) > QUIET_LINE_BYTES or b"\r" in data or not all(self._number_blind[a] for _, a in hits):
            return None
        return data.translate(DIGITS_AS_ZERO)

    def count_again(self, data: bytes, source: str, position: int, budget: Budget, times: int) -> bool:
        """Count `times` lines with the same `repeat_key` as `data` (and on the same side of the
        head window) that come next, if `data` was just counted as a repeat; False if it was not."""
        masked = data.translate(DIGITS_AS_ZERO)
        return self._again(budget, masked, position < self.head_limit, source, times)

    @staticmethod
    def _again(budget: Budget, masked: bytes, head: bool, source: str, times: int) -> bool:
        last = budget.last_repeat
        if last is None or last[0] != masked or last[1] != head or last[2] != source:
            return False
        assert budget.on_repeat is not None
        budget.on_repeat(last[3], last[4], times)
        budget.repeats += times
        return True

    def _known(
        self, budget: Budget, key: tuple[bool, bytes], data: bytes, number: int, source: str, masked: bytes
    ) -> bool:
        """Whether a line like this one was seen: it matched nothing, or it repeats and was counted."""
        before = budget.verdict(key)
        if before is None:
            budget.last_repeat = None
            return False
        probes, shape = before
        if not probes:
            return True
        budget.last_repeat = None
        if budget.on_repeat is None:
            return False
        # A repeat whose prefixes said nothing with a digit in it (no rank, node or stamp) has the
        # fields of the line it repeats: only its place differs, so it need not be parsed again.
        if shape is not None:
            # (The constructor, not `dataclasses.replace`: this runs once per repeat.)
            line = Line(source, number, shape.text, shape.message, None, shape.worker, shape.pid, None, shape.level)
        else:
            line = normalize(data.decode("utf-8", "replace"), source, number)
        if budget.on_repeat(probes, line, 0):
            budget.repeats += 1
            if shape is not None:
                budget.last_repeat = (masked, key[0], source, probes, line)
            return True
        return False

    def _check_segment(
        self,
        where: tuple[bytes, int, str],
        anchors: set[int],
        sink: Sink,
        budget: Budget | None,
        offset: int,
        position: int,
        key: tuple[bool, bytes] | None = None,
    ) -> None:
        """One line (or `\\r` segment): skipped or counted when seen before, else checked.
        `key` is the line's, when the caller already looked it up."""
        segment, number, source = where
        if budget is not None:
            if key is None and len(segment) <= QUIET_LINE_BYTES and all(self._number_blind[a] for a in anchors):
                masked = segment.translate(DIGITS_AS_ZERO)
                key = (position < self.head_limit, _digest(masked))
                if self._known(budget, key, segment, number, source, masked):
                    return
            budget.candidates += 1
            budget.last_repeat = None
        line = normalize(segment.decode("utf-8", "replace"), source, number)
        timeouts = SEARCH_TIMEOUTS[0]
        found = self._verify(line, anchors, sink, budget, offset, position) if line.message or line.text else ()
        if SEARCH_TIMEOUTS[0] != timeouts:
            return  # an abandoned search proves nothing about the line's repeats
        if key is not None and budget is not None and all(self._repeatable[p] for p in found):
            budget.remember(key, found, line if found and _plain(line, segment) else None)

    def _verify(
        self, line: Line, anchors: set[int], sink: Sink, budget: Budget | None, offset: int, position: int
    ) -> tuple[Probe, ...]:
        """Check one line against the probes of its anchors and hand the hits on; returns the probes
        whose hits were handed on."""
        seen_owners: set[str] = set()
        found: list[Hit] = []
        for anchor in sorted(anchors):
            for index in self._probes_of_anchor[anchor]:
                probe = self.probes[index]
                if probe.owner in seen_owners:
                    continue
                if probe.head_bytes is not None and position >= probe.head_bytes:
                    continue
                if budget is not None and not budget.examine(index):
                    continue
                m = probe.pattern.search(line.message, self.timeout)
                if m is None and line.text != line.message:
                    m = probe.pattern.search(line.text, self.timeout)
                if m is not None:
                    seen_owners.add(probe.owner)
                    found.append(Hit(probe, line, m, offset, position))
                    if budget is not None:
                        budget.hit(index)
        # The fallback only speaks for lines no other signature explains.
        specific = any(h.probe.kind is ProbeKind.SIGNATURE and h.probe.owner not in self._fallbacks for h in found)
        sent = tuple(hit.probe for hit in found if not (specific and hit.probe.owner in self._fallbacks))
        if len(found) > 1:
            # Signature hits first: an observer of the same line (the concept tier) asks whether one matched.
            found.sort(key=lambda h: h.probe.kind is not ProbeKind.SIGNATURE)
        for hit in found:
            if specific and hit.probe.owner in self._fallbacks:
                continue
            sink(hit)
        return sent

    def owners_matching(self, raw_line: str) -> list[str]:
        """Ids of the owners whose patterns match one raw line (for examples and lint)."""
        found: list[str] = []
        self.scan_line(raw_line, 1, "<example>", lambda hit: found.append(hit.probe.owner))
        return found


class _StreamState:
    """Line numbers and input positions while `Matcher.scan_stream` reads a stream."""

    def __init__(
        self,
        matcher: Matcher,
        source: str,
        sink: Sink | None,
        budget: Budget | None,
        on_block: BlockHook | None,
        collect: Collect | None,
        first_line: int,
        base: int,
    ) -> None:
        self._matcher, self._source, self._sink, self._budget = matcher, source, sink, budget
        self._on_block, self._collect = on_block, collect
        self.line_no, self.base = first_line, base
        self._lines = BlockLines()

    def block(self, buf: bytes | bytearray, end: int, fast: bool) -> None:
        """Scan `buf[:end]`, which ends with a newline unless it ends the stream; `fast`: count its
        lines with numpy."""
        self._lines.start(buf, end, fast)
        counted_to, line_no = self._scan(buf, end, self._lines)
        # Newlines up to the last candidate were counted while matching; count only the rest.
        newlines = line_no - self.line_no + self._lines.count(counted_to, end)
        # A stream's last line may lack its newline: it is a line all the same.
        self.line_no += newlines if end and buf[end - 1] == 10 else newlines + 1
        self.base += end

    def overlong(self, buf: bytes | bytearray, end: int) -> bytes:
        """Scan a piece of a line longer than MAX_LINE; return the tail kept for the next piece,
        in case an anchor straddles the cut."""
        self._lines.start(buf, end, fast=False)
        self._scan(buf, end, self._lines)
        self.base += end - OVERLAP
        return bytes(buf[end - OVERLAP : end])

    def _scan(self, buf: bytes | bytearray, end: int, lines: BlockLines) -> tuple[int, int]:
        return self._matcher.scan_block(
            buf,
            self.line_no,
            self._source,
            self._sink,
            self._budget,
            self._on_block,
            end,
            self.base,
            self._collect,
            lines,
        )


def _plain(line: Line, raw: bytes) -> bool:
    """Whether a line's fields would be the same in any line that differs from it only in digits."""
    if line.rank is not None or line.node is not None or line.timestamp is not None or line.repeat != 1:
        return False
    return not (line.worker and any(c.isdigit() for c in line.worker)) and b"across cluster" not in raw


def _digest(masked: bytes) -> bytes:
    """The key of a line with its digits masked: a 128-bit digest, so 16,384 remembered lines of up
    to 2 KiB cost a megabyte or two, not 32 (and two lines share a key only by a 2**-128 chance)."""
    return hashlib.blake2b(masked, digest_size=16).digest()


def _number_blind(source: str) -> bool:
    """Whether a regex matches the same lines whatever digits they hold (no literal digit in it)."""
    return not any(c.isdigit() for c in _NUMBERLESS.sub("", source))


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
