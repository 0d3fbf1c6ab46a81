"""Did the log end with this error, or did the job go on after it?

A paste is often only its last lines (`ZeroDivisionError: division by zero`), and a crashed job's
log ends with its error followed by a little teardown (frames, launcher summaries, SIGTERMs to
other ranks, wandb sync). A job that logged an error and carried on prints progress after it
(`step 5 loss 0.3`, `flaky task: ok`, `training finished`). `TailWatch` remembers the last
candidate line and, once its input ends, reads what came after it, once: no cost per line.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

#: Lines after an error that neither fail nor progress (prompts, config echoes) before the job is
#: taken to have gone on anyway.
QUIET_LINES = 60
#: Bytes after the candidate that are read at most.
READ_AFTER = 256 * 1024

_WENT_ON = re.compile(
    rb"(?i)\b(?:step|epoch|iter(?:ation)?|it/s|s/it|loss|reward|finished|completed|done|ok|"
    rb"success(?:ful(?:ly)?)?|saved|saving|resum\w*|retr(?:y|ying|ied))\b"
)
# A process or run that says it ended well ("Process 115970 exits successfully." of DeepSpeed's
# launcher, "Training completed successfully"): checked before teardown, whose words it shares.
_ENDED_WELL = re.compile(
    rb"(?i)\b(?:exit(?:s|ed)? (?:successfully|normally|with (?:status|code) 0\b)|"
    rb"(?:finished|completed|succeeded|done) successfully|training (?:is )?(?:complete|completed|finished|done)\b)"
)
# Unmistakable progress, checked before teardown words (a metrics dump names `rollout/aborted`,
# `clip_ratio`...): verl's `step:44 - key:value - ...` and a tqdm bar's `| 44/1093 [11:33<...`.
_PROGRESS = re.compile(rb"\bstep:\s*\d+ - \S|\|\s*\d+/\d+ \[\d+:\d\d")
# Teardown: what dying jobs print after the error (and what never counts as progress).
_TEARDOWN = re.compile(
    rb"(?i)error|exception|traceback|fail|abort|kill|fatal|sig[a-z]{3,4}\b|exit|core dumped|terminat|"
    rb"wandb:|^\s*(?:File \"|\^|~|raise |\.\.\.|frame #|\[?\d+\]?\s*$)|^\s+\S"
)


def went_on(after: bytes) -> bool:
    """Whether the text after an error shows the job going on rather than dying."""
    quiet = 0
    for line in after[:READ_AFTER].split(b"\n"):
        if _ENDED_WELL.search(line) or _PROGRESS.search(line):
            return True
        if not line.strip() or _TEARDOWN.search(line):
            continue
        if _WENT_ON.search(line):
            return True
        quiet += 1
        if quiet > QUIET_LINES:
            return True
    return False


#: A candidate followed by more than this many bytes of its file did not end it. (A block: the
#: same reach as a stream's, whose candidate must be in one of its last two blocks.)
TAIL_BYTES = 4 * 1024 * 1024
#: Bytes searched for the end of the candidate line in a file.
_LINE_REACH = 2 * 1024 * 1024

Reader = Callable[[int, int], bytes]


@dataclass
class _Seen:
    source: str
    offset: int  # where the line starts in its block; -1 when fed line by line or read from a file
    block: int  # which block it was in
    fed: int  # lines fed one by one so far, when fed that way
    position: int = -1  # where the line starts in its file, when read from a file


class TailWatch(Generic[T]):
    """The last line of one kind (say, a bare exception) and whether its input ended with it."""

    def __init__(self) -> None:
        self.last: T | None = None
        self._seen: _Seen | None = None
        self.ended: bool | None = None

    def saw(self, item: T, source: str, offset: int, block: int, fed: int, position: int = -1) -> None:
        """Remember `item` as the latest candidate; the verdict waits for the end of its input."""
        self.last, self._seen, self.ended = item, _Seen(source, offset, block, fed, position), None

    def judge_file(self, source: str, read: Reader, size: int) -> None:
        """At the end of a file of `size` bytes: read what followed the candidate (`read(at, n)`)."""
        seen = self._seen
        if seen is None or seen.source != source or self.ended is not None or seen.position < 0:
            return
        head = read(seen.position, _LINE_REACH)
        newline = head.find(b"\n")
        after = seen.position + newline + 1 if newline >= 0 else size
        if size - after > TAIL_BYTES:
            self.ended = False
            return
        self.ended = not went_on(read(after, READ_AFTER) if after < size else b"")

    def judge_blocks(self, source: str, blocks: deque[tuple[bytearray | bytes, int]], block: int) -> None:
        """At the end of a stream: read what followed the candidate in the last two blocks."""
        seen = self._seen
        if seen is None or seen.source != source or self.ended is not None or seen.offset < 0:
            return
        back = block - seen.block
        if back > 1 or back >= len(blocks):
            self.ended = False  # more than a whole block came after it
            return
        data, end = blocks[-1 - back]
        newline = data.find(b"\n", seen.offset, end)
        after = bytes(data[newline + 1 : end]) if newline >= 0 else b""
        if back == 1:
            last, last_end = blocks[-1]
            after += bytes(last[:last_end])
        self.ended = not went_on(after)

    def judge_lines(self, recent: deque[bytes], fed: int) -> bool:
        """For lines fed one by one: whether the candidate is where they end (so far)."""
        seen = self._seen
        if seen is None:
            return False
        if seen.offset >= 0 or seen.position >= 0:
            return bool(self.ended)
        count = fed - seen.fed
        if count >= len(recent):
            return False
        return not went_on(b"\n".join(list(recent)[len(recent) - count :]) if count else b"")
