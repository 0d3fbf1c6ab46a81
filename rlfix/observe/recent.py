"""The last lines fed one at a time (by `rlfix run` and `--follow`), bounded in bytes as well as count.

A job may print megabyte lines (a dumped tensor, a progress bar never ended with a newline): two
thousand of them would hold gigabytes beside the job being watched. Each line is kept up to
`line_bytes` (its start, where a message says what it is), and the oldest lines go once the
window holds more than `max_bytes`.
"""

from __future__ import annotations

from collections import deque

#: Lines remembered, at most.
RECENT_LINES = 2000
#: Bytes of one line kept: an error message and its first frames, never a whole dump.
RECENT_LINE_BYTES = 64 * 1024
#: Bytes of all the lines kept together.
RECENT_BYTES = 8 * 1024 * 1024


class RecentLines(deque[bytes]):
    """A deque of the last lines whose size in bytes is bounded too."""

    def __init__(
        self, lines: int = RECENT_LINES, max_bytes: int = RECENT_BYTES, line_bytes: int = RECENT_LINE_BYTES
    ) -> None:
        super().__init__(maxlen=lines)
        self.max_bytes = max_bytes
        self.line_bytes = line_bytes
        self.size = 0

    def append(self, line: bytes) -> None:
        line = line[: self.line_bytes]
        if len(self) == self.maxlen:
            self.size -= len(self[0])
        super().append(line)
        self.size += len(line)
        while self.size > self.max_bytes and len(self) > 1:
            self.size -= len(self.popleft())
