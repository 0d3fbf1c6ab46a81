"""Records of Ray's own processes that look like a job's failure and are not one, dropped before matching.

Ray's autoscaler (`monitor.log`) starts a Prometheus metrics server; when its port is taken
(another Ray cluster on the machine, say) it logs `An exception occurred while starting the
metrics server.` with the traceback, ending `OSError: [Errno 98] Address already in use`, and goes
on running without metrics (`ray/autoscaler/_private/monitor.py`, `Monitor.__init__`). That last
line is what a rendezvous port clash prints too, so it read as a fatal `dist-port-in-use` with
torchrun advice. Such a record (its stamped line and the unstamped traceback lines that continue
it) is read as empty lines: line numbers stay the file's own, and nothing in it is matched.

This module does not import Ray.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import BinaryIO

#: Lines that start a record of Ray's own, non-fatal trouble, by the kind of file they are in.
CHATTER: dict[str, tuple[bytes, ...]] = {
    "autoscaler": (b"An exception occurred while starting the metrics server.",),
}
# A new record starts at a stamped line: Python logging's `2026-11-26 06:40:55,123`, or Ray's `[2026-…`.
_STAMP = re.compile(rb"^\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}")
_CHUNK = 1 << 20


class DropRecords:
    """A binary stream over `raw` in which every record whose stamped line holds one of `starts` is blank."""

    def __init__(self, raw: BinaryIO, starts: tuple[bytes, ...]) -> None:
        self._raw = raw
        self._starts = starts
        self._carry = b""
        self._dropping = False

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:  # read all, as a file's read() does
            parts = []
            while part := self.read(_CHUNK):
                parts.append(part)
            return b"".join(parts)
        while True:
            chunk = self._raw.read(n or _CHUNK)
            if not chunk:
                rest, self._carry = self._carry, b""
                return self._line(rest) if rest else b""
            lines = (self._carry + chunk).split(b"\n")
            self._carry = lines.pop()
            out = b"".join(self._line(line + b"\n") for line in lines)
            if out:
                return out

    def _line(self, line: bytes) -> bytes:
        if _STAMP.match(line):
            self._dropping = any(start in line for start in self._starts)
        if self._dropping:
            return b"\n" if line.endswith(b"\n") else b""
        return line


def quiet(kind: str, cut: Callable[[BinaryIO], BinaryIO] | None) -> Callable[[BinaryIO], BinaryIO] | None:
    """`cut` (or no cut) with Ray's chatter of this kind of file dropped first; `cut` as is for other kinds."""
    starts = CHATTER.get(kind)
    if starts is None:
        return cut
    if cut is None:
        return lambda raw: DropRecords(raw, starts)  # type: ignore[return-value]
    return lambda raw: cut(DropRecords(raw, starts))  # type: ignore[arg-type]
