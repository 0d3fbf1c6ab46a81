"""Literal prefilters: find where any anchor literal occurs in a block of bytes.

Two engines give the same answers: Hyperscan (the `fast` extra, a C library that scans for
all literals in one pass) and a pure-Python fallback built on `bytes.find`, which is exact but
slower. `RLFIX_ENGINE=python|hyperscan` forces one; the default takes Hyperscan when it loads.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Collection, Sequence
from itertools import accumulate
from typing import Any, Protocol, cast

ENGINE_ENV = "RLFIX_ENGINE"


class Prefilter(Protocol):
    """Reports (end offset, anchor index) for every occurrence of every anchor in `block[:end]`."""

    name: str

    def scan(self, block: bytes | bytearray, end: int) -> list[tuple[int, int]]: ...


#: Bytes that mask a block before its lines are compared: every digit reads as `0` (a log repeats
#: its lines with other numbers), and `\r` ends a line like `\n` does (tqdm redraws a bar in place).
_MASK = bytes(ord("0") if chr(c).isdigit() and c < 128 else 10 if c == 13 else c for c in range(256))


class PythonPrefilter:
    """Pure-Python literal scan: distinct lines only, each pass at memchr speed where it can be.

    Logs repeat themselves: the same lines with other numbers, progress bars, metrics, one warning
    from every worker. So a block is first masked (digits to `0`, `\r` to `\n`: one `translate`),
    split into lines, and only its distinct masked lines are scanned, joined, for the masked
    anchors; a hit in a distinct line is then a hit in each line of the block that masks to it
    (masking maps bytes one to one, so an anchor's occurrence is its masked form's occurrence at
    the same offset; anchors with digits are compared again on the original bytes). A block whose
    lines are mostly distinct is scanned as it is, and the next few blocks too. Anchors holding a
    line break are always looked for in the block itself. The scan proper is `_Literals`.
    """

    name = "python"

    #: Blocks smaller than this are scanned as they are (one line, a small file).
    DEDUPE_MIN = 64 * 1024
    #: Distinct lines above this share of the block: not worth it here; blocks to wait before trying again.
    DEDUPE_SHARE, DEDUPE_BACKOFF = 0.5, 8

    def __init__(self, anchors: Sequence[tuple[int, tuple[bytes, bool]]]) -> None:
        self._anchors = list(anchors)
        self._direct: _Literals | None = None
        raw = [(i, a, c) for i, (a, c) in anchors if b"\n" in a or b"\r" in a]
        self._raw = _Literals(raw) if raw else None
        # Distinct masked needles (several anchors can mask alike, `[Errno 13]`, `[Errno 28]`), and
        # per masked needle the anchors behind it: (index, needle, caseless, compare again).
        members: dict[tuple[bytes, bool], list[tuple[int, bytes, bool, bool]]] = {}
        for i, (a, caseless) in anchors:
            if b"\n" not in a and b"\r" not in a:
                needle = a.lower() if caseless else a
                masked = needle.translate(_MASK)
                # Any digit, `0` too, may stand for another digit in the block: compare it again.
                again = masked != needle or b"0" in needle
                members.setdefault((masked, caseless), []).append((i, needle, caseless, again))
        self._members = list(members.values())
        self._masked = _Literals([(k, m, c) for k, (m, c) in enumerate(members)])
        self._wait = 0

    def scan(self, block: bytes | bytearray, end: int) -> list[tuple[int, int]]:
        hits = self._raw.scan(block, end) if self._raw is not None else []
        if end >= self.DEDUPE_MIN and self._wait <= 0:
            found = self._deduplicated(block, end)
            if found is not None:
                return hits + found
            self._wait = self.DEDUPE_BACKOFF
        self._wait -= 1
        if self._direct is None:
            self._direct = _Literals([(i, a, c) for i, (a, c) in self._anchors if b"\n" not in a and b"\r" not in a])
        return hits + self._direct.scan(block, end)

    def _deduplicated(self, block: bytes | bytearray, end: int) -> list[tuple[int, int]] | None:
        """Hits of the line-free anchors, scanning each distinct masked line once; None when the
        block's lines are mostly distinct."""
        lines = bytes(memoryview(block)[:end]).translate(_MASK).split(b"\n")
        distinct = list(dict.fromkeys(lines))
        starts = list(accumulate((len(line) + 1 for line in distinct), initial=0))
        if starts[-1] > end * self.DEDUPE_SHARE:
            return None
        text = b"\n".join(distinct)
        found: dict[bytes, list[tuple[int, int]]] = {}
        for stop, k in self._masked.scan(text, len(text)):
            nth = bisect_right(starts, stop - 1) - 1
            found.setdefault(distinct[nth], []).append((stop - starts[nth], k))
        if not found:
            return []
        return self._spread(block, lines, found)

    def _spread(
        self, block: bytes | bytearray, lines: list[bytes], found: dict[bytes, list[tuple[int, int]]]
    ) -> list[tuple[int, int]]:
        """Each hit in a distinct line, at the same offset in every line of the block that masks to it."""
        hits: list[tuple[int, int]] = []
        append = hits.append
        members = self._members
        pos = 0
        for line in lines:
            local = found.get(line)
            if local is not None:
                for stop, k in local:
                    for index, needle, caseless, again in members[k]:
                        if again:
                            start = pos + stop - len(needle)
                            same = block[start : pos + stop]
                            if (same.lower() if caseless else same) != needle:
                                continue
                        append((pos + stop, index))
            pos += len(line) + 1
        return hits


class _Literals:
    """Every occurrence of each needle, built on `bytes.find` (memchr speed for a single byte).

    One `find` sweep per anchor costs a pass over the block per anchor, hundreds of passes.
    Instead, a sample of the input tells how often each byte occurs in this log, and a greedy
    cover picks pivot bytes such that every anchor contains one. Each pivot byte is found with one
    sweep; at each place, the pivot and the bytes after it select, through a dict, the few anchors
    worth comparing. Anchors whose pivots are all common here get a `find` sweep of their own, so
    no log makes this slower than the simple method. The plan is remade every few blocks.
    """

    #: Slices of the block sampled to estimate byte frequencies, and their size.
    SAMPLES, SAMPLE_SIZE = 8, 8 * 1024
    #: Blocks scanned with one plan before it is made again.
    REPLAN = 8
    #: Bytes of an anchor, from its pivot on, that select it at a place.
    KEY = 3
    # Costs measured on this kind of machine (cProfile on a 50 MB RL log), in microseconds: one
    # place where a pivot occurs; a multi-byte `find` sweep, per byte.
    _PLACE_US = 5.0
    _SWEEP_US_PER_BYTE = 0.0008

    def __init__(self, needles: Sequence[tuple[int, bytes, bool]]) -> None:
        """`needles`: (index reported, bytes, caseless) each."""
        self._groups = (
            [(i, a) for i, a, caseless in needles if not caseless],
            [(i, a.lower()) for i, a, caseless in needles if caseless],
        )
        self._plans: list[_Plan | None] = [None, None]
        self._blocks = 0

    def scan(self, block: bytes | bytearray, end: int) -> list[tuple[int, int]]:
        hits: list[tuple[int, int]] = []
        if self._blocks % self.REPLAN == 0:
            self._plans = [None, None]
        self._blocks += 1
        for which, group in enumerate(self._groups):
            if not group:
                continue
            text = block if which == 0 else block[:end].lower()
            plan = self._plans[which]
            if plan is None:
                plan = self._plans[which] = self._plan(group, text, end)
            pivots, sweeps = plan
            for needle, index in sweeps:
                _sweep(text, needle, index, end, hits)
            find = text.find
            for pivot, by_key in pivots:
                lengths = sorted({len(k) for k in by_key})
                pos = find(pivot, 0, end)
                while pos >= 0:
                    for length in lengths:
                        for at, needle, index in by_key.get(bytes(text[pos : pos + length]), ()):
                            start = pos - at
                            if start >= 0 and start + len(needle) <= end and text.startswith(needle, start):
                                hits.append((start + len(needle), index))
                    pos = find(pivot, pos + 1, end)
        return hits

    def _sample(self, text: bytes | bytearray, end: int) -> bytes:
        step = max(end // self.SAMPLES, 1)
        return b"".join(bytes(text[i : i + self.SAMPLE_SIZE]) for i in range(0, end, step))[
            : self.SAMPLES * self.SAMPLE_SIZE
        ]

    def _plan(self, group: list[tuple[int, bytes]], text: bytes | bytearray, end: int) -> _Plan:
        """Greedy cover of the anchors by pivot bytes, the cheapest per anchor first."""
        sample = self._sample(text, end)
        scale = end / max(len(sample), 1)
        containing: dict[int, int] = {}  # byte -> bitmask of the anchors that contain it
        for k, (_index, needle) in enumerate(group):
            for byte in set(needle):
                containing[byte] = containing.get(byte, 0) | (1 << k)
        expected = {byte: sample.count(byte) * scale for byte in containing}
        sweep_cost = end * self._SWEEP_US_PER_BYTE
        remaining = (1 << len(group)) - 1
        pivots: list[tuple[bytes, dict[bytes, list[tuple[int, bytes, int]]]]] = []
        sweeps: list[tuple[bytes, int]] = []
        while remaining:
            best: tuple[float, int, int] | None = None
            for byte, mask in containing.items():
                covered = mask & remaining
                if covered:
                    per_anchor = (expected[byte] * self._PLACE_US) / covered.bit_count()
                    if best is None or per_anchor < best[0]:
                        best = (per_anchor, byte, covered)
            assert best is not None
            per_anchor, byte, covered = best
            members = [group[k] for k in range(len(group)) if covered >> k & 1]
            remaining &= ~covered
            if per_anchor > sweep_cost:
                sweeps.extend((needle, index) for index, needle in members)
                continue
            by_key: dict[bytes, list[tuple[int, bytes, int]]] = {}
            for index, needle in members:
                at = needle.index(byte)
                by_key.setdefault(needle[at : at + self.KEY], []).append((at, needle, index))
            pivots.append((bytes((byte,)), by_key))
        return pivots, sweeps


_Plan = tuple[list[tuple[bytes, dict[bytes, list[tuple[int, bytes, int]]]]], list[tuple[bytes, int]]]


def _sweep(text: bytes | bytearray, needle: bytes, index: int, end: int, hits: list[tuple[int, int]]) -> None:
    find = text.find
    pos = find(needle, 0, end)
    while pos >= 0:
        hits.append((pos + len(needle), index))
        pos = find(needle, pos + 1, end)


def _hs_escape(literal: bytes) -> bytes:
    return b"".join(bytes([c]) if chr(c).isalnum() and c < 128 else b"\\x%02x" % c for c in literal)


class HyperscanPrefilter:
    """All anchors compiled into one Hyperscan database, scanned in a single pass per block."""

    name = "hyperscan"

    def __init__(self, anchors: Sequence[tuple[int, tuple[bytes, bool]]]) -> None:
        import hyperscan

        self._hs = hyperscan
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._empty = not anchors
        if self._empty:
            return
        expressions = [_hs_escape(a) for _, (a, _) in anchors]
        flags = [hyperscan.HS_FLAG_CASELESS if caseless else 0 for _, (_, caseless) in anchors]
        self._db.compile(
            expressions=expressions,
            ids=[i for i, _ in anchors],
            elements=len(anchors),
            flags=flags,
        )
        self._scratch = hyperscan.Scratch(self._db)

    def scan(self, block: bytes | bytearray, end: int) -> list[tuple[int, int]]:
        if self._empty or not end:
            return []
        hits: list[tuple[int, int]] = []
        append = hits.append

        def on_match(anchor: int, _start: int, end: int, _flags: int, _ctx: Any) -> None:
            append((end, anchor))

        # A zero-copy view of the filled part of the buffer (the stubs only name bytes and str).
        view = memoryview(block)[:end] if end < len(block) else block
        self._db.scan(cast(bytes, view), match_event_handler=on_match, scratch=self._scratch)
        return hits


def available_engines() -> list[str]:
    """Engines that can run in this environment, best first."""
    names = []
    try:
        import hyperscan  # noqa: F401

        names.append("hyperscan")
    except ImportError:
        pass
    names.append("python")
    return names


def make_prefilter(
    anchors: Sequence[tuple[bytes, bool]], engine: str = "auto", skip: Collection[int] = ()
) -> Prefilter:
    """Build the requested engine (`auto`, `hyperscan` or `python`) over `anchors` but those in `skip`.

    Hits always name an anchor by its index in `anchors`.
    """
    choice = os.environ.get(ENGINE_ENV, "") if engine == "auto" else engine
    if choice in ("", "auto"):
        choice = available_engines()[0]
    kept = [(i, a) for i, a in enumerate(anchors) if i not in skip]
    if choice == "hyperscan":
        return HyperscanPrefilter(kept)
    if choice == "python":
        return PythonPrefilter(kept)
    from rlfix.errors import UsageError

    raise UsageError(f"unknown matching engine {choice!r}; use one of: {', '.join(available_engines())}")
