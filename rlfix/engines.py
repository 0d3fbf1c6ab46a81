"""Literal prefilters: find where any anchor literal occurs in a block of bytes.

Two engines give the same answers: Hyperscan (the `fast` extra, a C library that scans for
all literals in one pass) and a pure-Python fallback built on `bytes.find`, which is exact but
slower. `RLFIX_ENGINE=python|hyperscan` forces one; the default takes Hyperscan when it loads.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Protocol, cast

ENGINE_ENV = "RLFIX_ENGINE"


class Prefilter(Protocol):
    """Reports (end offset, anchor index) for every occurrence of every anchor in `block[:end]`."""

    name: str

    def scan(self, block: bytes | bytearray, end: int) -> list[tuple[int, int]]: ...


class PythonPrefilter:
    """Pure-Python literal scan: each anchor is found through its rarest byte in this log.

    A `bytes.find` sweep per anchor costs one pass over the block per anchor (hundreds of
    them). Instead, a sample of the block tells which bytes are rare here; anchors are grouped
    by their rarest byte (the pivot), each pivot byte is found with one memchr-speed sweep, and
    only at those few places are the anchors of the group compared. A group whose pivot is
    still common falls back to one `find` sweep per anchor, so no log can make this slower
    than the simple method.
    """

    name = "python"

    #: Bytes of the block sampled to estimate how often each byte occurs.
    SAMPLE = 64 * 1024

    def __init__(self, anchors: Sequence[tuple[bytes, bool]]) -> None:
        self._exact = [(i, a) for i, (a, caseless) in enumerate(anchors) if not caseless]
        self._caseless = [(i, a.lower()) for i, (a, caseless) in enumerate(anchors) if caseless]

    def scan(self, block: bytes | bytearray, end: int) -> list[tuple[int, int]]:
        hits: list[tuple[int, int]] = []
        for group, haystack in ((self._exact, block), (self._caseless, None)):
            if not group:
                continue
            text = haystack if haystack is not None else block[:end].lower()
            self._scan_group(group, text, end, hits)
        return hits

    def _scan_group(
        self, group: list[tuple[int, bytes]], text: bytes | bytearray, end: int, hits: list[tuple[int, int]]
    ) -> None:
        half = self.SAMPLE // 2
        sample = bytes(text[:half]) + bytes(text[max(half, end - half) : end])
        counts: dict[int, int] = {}
        pivots: dict[int, list[tuple[int, bytes, int]]] = {}
        for index, needle in group:
            for byte in set(needle):
                if byte not in counts:
                    counts[byte] = sample.count(byte)
            at = min(range(len(needle)), key=lambda k: counts[needle[k]])
            pivots.setdefault(needle[at], []).append((at, needle, index))
        scale = end / max(len(sample), 1)
        for byte, members in pivots.items():
            expected = counts[byte] * scale
            # Costs measured on this kind of machine (cProfile on a 50 MB RL log): a place costs
            # ~0.5 us plus ~1 us per member compared; a find sweep ~0.5 ns per byte per needle.
            if expected * (0.5 + 1.0 * len(members)) > len(members) * end * 0.0005:
                for _at, needle, index in members:
                    self._sweep(text, needle, index, end, hits)
                continue
            find = text.find
            pivot = bytes((byte,))
            pos = find(pivot, 0, end)
            while pos >= 0:
                for at, needle, index in members:
                    start = pos - at
                    if start >= 0 and start + len(needle) <= end and text.startswith(needle, start):
                        hits.append((start + len(needle), index))
                pos = find(pivot, pos + 1, end)

    @staticmethod
    def _sweep(text: bytes | bytearray, needle: bytes, index: int, end: int, hits: list[tuple[int, int]]) -> None:
        find = text.find
        pos = find(needle, 0, end)
        while pos >= 0:
            stop = pos + len(needle)
            hits.append((stop, index))
            pos = find(needle, stop, end)


def _hs_escape(literal: bytes) -> bytes:
    return b"".join(bytes([c]) if chr(c).isalnum() and c < 128 else b"\\x%02x" % c for c in literal)


class HyperscanPrefilter:
    """All anchors compiled into one Hyperscan database, scanned in a single pass per block."""

    name = "hyperscan"

    def __init__(self, anchors: Sequence[tuple[bytes, bool]]) -> None:
        import hyperscan

        self._hs = hyperscan
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._empty = not anchors
        if self._empty:
            return
        expressions = [_hs_escape(a) for a, _ in anchors]
        flags = [hyperscan.HS_FLAG_CASELESS if caseless else 0 for _, caseless in anchors]
        self._db.compile(
            expressions=expressions,
            ids=list(range(len(anchors))),
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


def make_prefilter(anchors: Sequence[tuple[bytes, bool]], engine: str = "auto") -> Prefilter:
    """Build the requested engine (`auto`, `hyperscan` or `python`) over `anchors`."""
    choice = os.environ.get(ENGINE_ENV, "") if engine == "auto" else engine
    if choice in ("", "auto"):
        choice = available_engines()[0]
    if choice == "hyperscan":
        return HyperscanPrefilter(anchors)
    if choice == "python":
        return PythonPrefilter(anchors)
    from rlfix.errors import UsageError

    raise UsageError(f"unknown matching engine {choice!r}; use one of: {', '.join(available_engines())}")
