"""Follow Python tracebacks per stream, so an exception line can be tied to the frame that raised it.

A line such as `ValueError: bad reward` is only an uncaught exception when a traceback opened
shortly before it in the same stream (same file, rank and worker). Outside a traceback it is a
message someone printed, and the fallback diagnosis must not claim it.
"""

from __future__ import annotations

import re
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from rlfix.match.matcher import Hit, Probe, ProbeKind, observer_pattern
from rlfix.model import Line

TRACEBACK = "@traceback"
#: Lines after a `Traceback` header within which its exception line must appear.
WINDOW = 400
#: Streams tracked at once (rank x worker x file); the least recently used is forgotten.
MAX_STREAMS = 512

# Ray's wrapper exceptions: the remote frames and the real exception follow without a new header.
_RAY_WRAPPER = re.compile(r"RayTaskError|RayActorError|ActorDiedError|ray\.exceptions\.|creation task")
_EXCEPTION = re.compile(
    r"^(?P<cls>(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*)(?:\((?P<inner>[A-Za-z_][\w.]*)\))?(?::\s*(?P<msg>.*))?$"
)


class Part(Enum):
    """Which part of a traceback a probe finds."""

    HEADER = "header"
    FRAME = "frame"
    #: `File "x.py", line 161` alone: where Python reports a SyntaxError, with no header.
    SYNTAX = "syntax"


#: The compile errors Python reports at a bare `File "...", line N` (always uncaught: the module
#: never ran).
_COMPILE_ERROR = re.compile(r"^(?:SyntaxError|IndentationError|TabError):")


#: Frames remembered per open traceback: enough to see where one package calls into another.
MAX_FRAMES = 16
_SITE_PACKAGE = re.compile(r"[/\\](?:site|dist)-packages[/\\]([A-Za-z_]\w*)")
#: Frameworks often run from a source checkout rather than site-packages.
KNOWN_PACKAGES = frozenset(
    {
        "verl", "openrlhf", "trl", "vllm", "deepspeed", "ray", "transformers", "torch", "accelerate", "peft",
        "nemo_rl", "megatron", "sglang", "flash_attn", "datasets", "huggingface_hub", "tokenizers", "safetensors",
    }
)  # fmt: skip


def traceback_probes() -> list[Probe]:
    """Observer probes for traceback headers and frames."""
    return [
        Probe(
            f"{TRACEBACK}:start",
            observer_pattern(r"Traceback \(most recent call last\)"),
            kind=ProbeKind.TRACEBACK,
            detail=Part.HEADER,
        ),
        Probe(
            f"{TRACEBACK}:frame",
            observer_pattern(r'^File "(?P<file>[^"]{1,500})", line (?P<line>\d+), in (?P<func>[^\s]{1,200})'),
            kind=ProbeKind.TRACEBACK,
            detail=Part.FRAME,
        ),
        Probe(
            f"{TRACEBACK}:syntax",
            observer_pattern(r'^File "(?P<file>[^"]{1,500})", line (?P<line>\d+)$'),
            kind=ProbeKind.TRACEBACK,
            detail=Part.SYNTAX,
        ),
    ]


@dataclass
class _Open:
    started: int
    header: Line | None = None
    frames: deque[tuple[str, str, str]] = field(default_factory=lambda: deque(maxlen=MAX_FRAMES))
    #: The first and the last frame line seen (for a traceback pasted without its header).
    first: Line | None = None
    last: Line | None = None
    #: Opened by a compile error's location line: only a compile error closes it as uncaught.
    syntax: bool = False


#: Lines after a header-less traceback's last frame (its code line, a caret line) within which
#: its input must end for it to be a crash whose exception line was cut off.
CUT_OFF_LINES = 3


def _key(line: Line) -> tuple[object, ...]:
    return (line.source, line.rank, line.worker, line.pid)


class TracebackTracker:
    """Open tracebacks per stream; bounded in streams and frames kept."""

    def __init__(self) -> None:
        self._open: OrderedDict[tuple[object, ...], _Open] = OrderedDict()
        #: Traceback headers seen: a log that printed one did not die silently.
        self.headers = 0

    @property
    def open_streams(self) -> int:
        """Streams with a traceback still open (waiting for the exception line that closes it)."""
        return len(self._open)

    def observe(self, hit: Hit) -> None:
        key = _key(hit.line)
        if hit.probe.detail is Part.SYNTAX:
            m = hit.match
            opened = self._open[key] = _Open(hit.line.number, hit.line, syntax=True)
            opened.frames.append((m.group("file"), m.group("line"), "<module>"))
            self._open.move_to_end(key)
            while len(self._open) > MAX_STREAMS:
                self._open.popitem(last=False)
            return
        tb = self._open.get(key)
        start = hit.probe.detail is Part.HEADER
        self.headers += start
        if start or tb is None:
            # A frame with no header before it opens a traceback too (pasted excerpts often start
            # mid-way), but only a header makes it an uncaught one: Ray also prints the frames of
            # an exception it is about to retry, without a header.
            tb = self._open[key] = _Open(hit.line.number, hit.line if start else None)
            self._open.move_to_end(key)
            while len(self._open) > MAX_STREAMS:
                self._open.popitem(last=False)
            if start:
                return
        m = hit.match
        tb.frames.append((m.group("file"), m.group("line"), m.group("func")))
        tb.first = tb.first or hit.line
        tb.last = hit.line

    def unterminated(self, ends: Mapping[str, int] | None = None) -> tuple[Line, tuple[str, str, str] | None] | None:
        """The first traceback still open at the end of the input: a crash whose last line is missing.

        One without its header (a paste that starts mid-way) counts only when its input ends right
        after its last frame (`ends`: lines per input): Ray prints the header-less frames of an
        exception it is about to retry, and goes on.
        """
        for tb in self._open.values():
            if tb.header is not None and tb.frames and not tb.syntax:
                return tb.header, tb.frames[-1]
        for tb in self._open.values():
            last = tb.last
            if (
                ends
                and tb.first is not None
                and last is not None
                and ends.get(last.source, -1) - last.number <= CUT_OFF_LINES
            ):
                return tb.first, tb.frames[-1]
        return None

    def claim(self, line: Line) -> tuple[dict[str, str], bool] | None:
        """If `line` ends an open traceback in its stream: the exception described, and whether
        the traceback had its header (an uncaught exception). Closes the traceback."""
        key = _key(line)
        tb = self._open.get(key)
        if tb is None or not 0 <= line.number - tb.started <= WINDOW:
            return None
        info = describe_exception(line.message, tb.frames[-1] if tb.frames else None)
        info.update(frame_packages(tb.frames))
        uncaught = tb.header is not None and (not tb.syntax or bool(_COMPILE_ERROR.match(line.message)))
        described = info, uncaught
        if _RAY_WRAPPER.search(line.message):
            # Ray prints the remote worker's frames right after its wrapper line, with no new
            # header: keep the traceback open so the real exception below finds its frame.
            self._open[key] = _Open(line.number, line)
        else:
            del self._open[key]
        return described


def package_of(file: str) -> str | None:
    """The installed package a frame's file belongs to (`.../site-packages/vllm/x.py` -> `vllm`), or one
    of the frameworks checked out as source (`/home/u/verl/verl/trainer/x.py` -> `verl`); None for user code."""
    m = _SITE_PACKAGE.search(file)
    if m:
        return m.group(1).lower()
    for part in reversed(file.replace("\\", "/").split("/")[:-1]):
        if part.lower() in KNOWN_PACKAGES:
            return part.lower()
    return None


def frame_packages(frames: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """`raised_in`: the package of the raising frame; `called_from`: the nearest caller in another package."""
    packages = [package_of(file) for file, _line, _func in frames]
    if not packages or packages[-1] is None:
        return {}
    raised_in = packages[-1]
    out = {"raised_in": raised_in}
    caller = next((p for p in reversed(packages[:-1]) if p is not None and p != raised_in), None)
    if caller is not None:
        out["called_from"] = caller
    return out


#: Bytes before an exception line read for the code line a traceback prints above it.
CODE_LINE = 400
# `    config = uvicorn.Config(app, **kwargs)`: the module a failing call went to.
_CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\.[A-Za-z_][\w.]*\(")
_NOT_MODULES = frozenset({"self", "cls", "super", "np", "os", "sys", "re", "json", "math", "logger", "logging"})


def called_module(before: bytes) -> dict[str, str]:
    """`calls`: the module named in the code line just above an exception line, when it names one."""
    lines = before.rstrip(b"\n").rsplit(b"\n", 1)
    code = lines[-1].decode("utf-8", "replace") if lines else ""
    m = _CALL.search(code.split("]:", 1)[-1])  # past a `[rank0]:` prefix
    if m is None or m.group(1) in _NOT_MODULES:
        return {}
    return {"calls": m.group(1)}


def describe_exception(message: str, frame: tuple[str, str, str] | None) -> dict[str, str]:
    """Class, message and raising frame of an exception line (Ray's `RayTaskError(Inner)` unwrapped)."""
    out: dict[str, str] = {}
    m = _EXCEPTION.match(message.strip())
    if m:
        out["exception"] = m.group("inner") or m.group("cls")
        # A Ray wrapper's own text names the remote call, not the error: the inner message comes later.
        if m.group("msg") and not m.group("inner"):
            out["message"] = m.group("msg")[:300]
    if frame is not None:
        file, line_no, func = frame
        out["raised_at"] = f"{file}:{line_no} in {func}"
    return out
