"""Counting the lines of a block: every candidate line needs its number, so every byte of a log
has its newlines counted once.

`bytes.count` walks a byte at a time (about 1 GB/s here), as slow as the literal scan itself.
numpy compares a whole block with `\\n` in one vectorised pass into a reused buffer of marks, and
then counts the marks between any two offsets at memory speed: about three times faster over a
block, whatever the number of candidates in it. It is optional (Ray and PyTorch bring it).
"""

from __future__ import annotations

from typing import Any

#: Bytes a stream must have reached before numpy is imported to count its lines: importing numpy
#: costs about as much as counting 150 MB the slow way (0.15 s here), so only long logs gain from it.
NUMPY_AFTER = 256 * 1024 * 1024
#: Blocks shorter than this are counted with `bytes.count`: numpy's fixed cost per call (a few
#: microseconds) would exceed what it saves.
MARK_MIN = 64 * 1024

_numpy: Any = None  # False: not installed; None: not tried yet


def load_numpy() -> Any:
    """The numpy module, or False when it is not installed (tried once)."""
    global _numpy
    if _numpy is None:
        try:
            import numpy

            _numpy = numpy
        except ImportError:
            _numpy = False
    return _numpy


def line_counting() -> str:
    """How large blocks have their lines counted here (shown by `rlfix kb info`)."""
    return "numpy" if load_numpy() else "bytes.count (install numpy, or rlfix[fast], to count lines faster)"


class BlockLines:
    """Newline counts between offsets of one block at a time, for a whole scan.

    A block started with `fast` (and of MARK_MIN bytes or more) has its newlines marked by numpy
    once, into a buffer kept from block to block, so counting between two candidates costs no
    pass over its bytes; otherwise, and without numpy, each count is a `bytes.count`.
    """

    def __init__(self) -> None:
        self._buf: bytes | bytearray = b""
        self._marks: Any = None  # numpy bool array over the current block, or None
        self._spare: Any = None  # the marks' storage, grown as blocks need

    @classmethod
    def over(cls, block: bytes | bytearray, end: int) -> BlockLines:
        """A counter started on `block[:end]`, with `bytes.count`."""
        lines = cls()
        lines.start(block, end, fast=False)
        return lines

    def start(self, block: bytes | bytearray, end: int, fast: bool) -> None:
        """Count in `block[:end]` from now on (`block` must not change while it is counted in)."""
        self._buf = block
        self._marks = None
        numpy: Any = load_numpy() if fast and end >= MARK_MIN else False
        if not numpy:
            return
        if self._spare is None or len(self._spare) < end:
            self._spare = numpy.empty(end, dtype=bool)
        self._marks = self._spare[:end]
        numpy.equal(numpy.frombuffer(memoryview(block)[:end], dtype=numpy.uint8), 10, out=self._marks)

    def count(self, start: int, stop: int) -> int:
        """Newlines in `block[start:stop]`."""
        if self._marks is None:
            return self._buf.count(b"\n", start, stop)
        return int(_numpy.count_nonzero(self._marks[start:stop]))
