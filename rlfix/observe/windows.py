"""Lines around a few line numbers of a log file, read again in one pass: the context `rlfix excerpt` quotes.

The triage reads only the lines its prefilter lets through, so the lines around a finding are not
kept anywhere; an excerpt reads the file once more, keeping a short ring of recent lines and stopping
after the last line it wants. Memory is bounded by `LOOKBACK` lines of at most `MAX_CHARS` characters.

A traceback that ends at the evidence line (Python prints the frames, then the exception) is kept
as its header, a gap, and its last frames: the frames nearest the raise say the most.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from rlfix.details import Window
from rlfix.match.normalize import clean, split_prefixes
from rlfix.read.inputs import Input, from_file
from rlfix.redact import redact_secrets

#: Lines remembered before the current one: how far back a traceback's header is looked for.
LOOKBACK = 120
#: Characters of one line kept; a line is masked before it is cut (half a secret is no secret a rule knows).
MAX_CHARS = 300
#: Lines of a traceback kept before the evidence line (its header stays too).
TRACEBACK_TAIL = 8
_TRACEBACK = "Traceback (most recent call last):"


@dataclass(frozen=True)
class Want:
    """A line whose surroundings are wanted: `before` and `after` lines, and its traceback if one ends there."""

    line: int
    label: str
    before: int = 3
    after: int = 2


def read_windows(path: str, wants: Sequence[Want], redact: bool = True) -> list[Window]:
    """The windows around `wants` in the file at `path` (none when it cannot be read as text)."""
    found = from_file(Path(path))
    if not isinstance(found, Input) or not wants:
        return []
    pending = sorted(wants, key=lambda w: w.line)
    last = max(w.line + w.after for w in pending)
    recent: deque[tuple[int, str]] = deque(maxlen=LOOKBACK)
    open_windows: list[tuple[Want, list[tuple[int, str]]]] = []
    done: list[Window] = []
    try:
        for number, text in _lines(found, last, redact):
            for want, lines in open_windows:
                if number <= want.line + want.after:
                    lines.append((number, text))
            while pending and pending[0].line == number:
                want = pending.pop(0)
                open_windows.append((want, [*_before(recent, want), (number, text)]))
            recent.append((number, text))
    except OSError:
        return []
    done.extend(Window(path, w.line, w.label, tuple(lines)) for w, lines in open_windows)
    return done


def _lines(item: Input, last: int, redact: bool) -> Iterator[tuple[int, str]]:
    """(number, cleaned text) for lines 1..last, masked then cut to `MAX_CHARS`."""
    with item.open() as stream:
        for number, raw in enumerate(stream, 1):
            if number > last:
                return
            text = clean(raw.decode("utf-8", "replace"))
            if redact:
                text = redact_secrets(text)
            yield number, text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _before(recent: deque[tuple[int, str]], want: Want) -> list[tuple[int, str]]:
    """The lines shown before the evidence: its traceback (header, a gap, the last frames) when
    one ends here, else the `before` lines just above it."""
    lines = list(recent)
    for i in range(len(lines) - 1, -1, -1):
        message = split_prefixes(lines[i][1])[0].strip()
        if message == _TRACEBACK:
            tail = lines[max(i + 1, len(lines) - TRACEBACK_TAIL) :]
            return [lines[i], *tail]
        if _ends_traceback(message):
            break  # an earlier exception's last line (or a blank one): no traceback ends here
    return lines[max(0, len(lines) - want.before) :] if want.before else []


def _ends_traceback(message: str) -> bool:
    """Whether a line is the exception line that ends a traceback (`KeyError: 'x'`) or a blank one."""
    head = message.split(":", 1)[0]
    return not message or (head.endswith(("Error", "Exception")) and " " not in head)
