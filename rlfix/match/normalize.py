"""Turn a raw log line into a `Line`: colours removed, prefixes parsed and recorded.

The prefixes are peeled off one at a time by an ordered list of small rules, because real logs
stack them: `[default0]:[rank12]:[E602 11:29:52.185 ProcessGroupNCCL.cpp:632] ...` or
`(LLMRayActor pid=7) (EngineCore_DP0 pid=9) ERROR 06-20 09:14:48 [core.py:515] ...`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from rlfix.details import RAY_PROCESSES
from rlfix.model import Line, bounded_int

# Stdlib `re` on purpose: these run on every candidate line and `re` is faster for simple cases.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_REPEATED = re.compile(r"\s*\[repeated (\d+)x across cluster\]\s*$")

_TIMESTAMP = re.compile(
    r"\[?(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\]?(?:\s+|\t|$)"
)
# Kernel log prefixes: `[  446.560738] ` (dmesg) and `[Thu Aug 21 02:20:57 2025] ` (dmesg -T).
_KERNEL_TIME = re.compile(r"\[\s*(\d+\.\d{3,9}|\w{3} \w{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4})\]\s?")
_TORCHRUN = re.compile(r"\[(default|rank)(\d{1,5})\]:\s?")
_RAY = re.compile(r"\(([A-Za-z_][\w.:\-]{0,80})?((?:,?\s*(?:[a-z_]+=[^\s,()]{1,80}|\+[\d.hms]{1,20}))*)\)\s")
_RAY_FIELD = re.compile(r"([a-z_]+)=([^\s,()]+)")
_VLLM = re.compile(
    r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.\d+)? \[?([\w./-]+:\d+)\]\s?"
)
_GLOG = re.compile(r"\[?([IWEF])(\d{3,4} \d{2}:\d{2}:\d{2}\.\d+)(?:\s+\d+)?\s+([\w./-]+:\d+)\]\s?")
# Ray's C++ processes after the timestamp: `[2026-11-26 14:10:50,123 E 12345 12400] raylet.cc:12: ...`
# (the timestamp rule takes `[2026-11-26 14:10:50,123 `, this takes `E 12345 12400] `).
_RAY_CORE = re.compile(r"([DIWEF]) \d{1,10} \d{1,10}\]\s?")
_GLOG_SHORT = re.compile(r"\[([IWEF]) ([\w./-]+:\d+)\]\s?")
_LEVEL_BRACKET = re.compile(r"\[(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]\s*")
_LOCATION_BRACKET = re.compile(r"\[[\w./-]+:\d+(?::\w+)?\]\s*")
_PY_LOGGING = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+[\w./-]+:\d+\s+--\s")
# A margin that log viewers and pasted tables put before each line: `| [rank0]: ...`, `│ ...`.
_MARGIN = re.compile(r"[|│┃]\s*")
_GLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}
#: Bare names that make "(name) " a Ray prefix: Ray's own processes ("(1) The process ..." is prose).
_RAY_NAMED = RAY_PROCESSES

MAX_PREFIXES = 8


@dataclass
class _Fields:
    """What the prefixes said so far, filled in as rules peel them off."""

    rank: int | None = None
    local_rank: int | None = None
    worker: str | None = None
    pid: int | None = None
    node: str | None = None
    level: str | None = None
    timestamp: str | None = None
    workers: list[str] = field(default_factory=list)


def _time_rule(pattern: re.Pattern[str]) -> Callable[[str, _Fields], int]:
    """A rule that peels one kind of timestamp prefix and keeps the first timestamp seen."""

    def rule(text: str, f: _Fields) -> int:
        m = pattern.match(text)
        if not m:
            return 0
        f.timestamp = f.timestamp or m.group(1)
        return m.end()

    return rule


_timestamp = _time_rule(_TIMESTAMP)
_kernel_time = _time_rule(_KERNEL_TIME)


def _torchrun(text: str, f: _Fields) -> int:
    m = _TORCHRUN.match(text)
    if not m:
        return 0
    if m.group(1) == "rank":
        f.rank = int(m.group(2))
    else:
        f.local_rank = int(m.group(2))
    return m.end()


def _ray(text: str, f: _Fields) -> int:
    m = _RAY.match(text)
    if not m:
        return 0
    name, rest = m.group(1), m.group(2) or ""
    fields = dict(_RAY_FIELD.findall(rest))
    # A bare "(word)" is only a Ray prefix for Ray's own processes; "(1) The process ..." is prose.
    if not fields and "+" not in rest and (name is None or name not in _RAY_NAMED):
        return 0
    if name:
        f.workers.append(name)
        f.worker = name
    if "pid" in fields:
        f.pid = bounded_int(fields["pid"])
    if "ip" in fields:
        f.node = fields["ip"]
    if "rank" in fields:
        f.rank = bounded_int(fields["rank"])
    return m.end()


def _vllm(text: str, f: _Fields) -> int:
    m = _VLLM.match(text)
    if not m:
        return 0
    f.level = m.group(1)
    f.timestamp = f.timestamp or m.group(2)
    return m.end()


def _glog(text: str, f: _Fields) -> int:
    m = _GLOG.match(text)
    if m:
        f.level = _GLOG_LEVELS[m.group(1)]
        f.timestamp = f.timestamp or m.group(2)
        return m.end()
    m = _GLOG_SHORT.match(text)
    if m:
        f.level = _GLOG_LEVELS[m.group(1)]
        return m.end()
    return 0


def _ray_core(text: str, f: _Fields) -> int:
    m = _RAY_CORE.match(text)
    if not m:
        return 0
    f.level = "DEBUG" if m.group(1) == "D" else _GLOG_LEVELS[m.group(1)]
    return m.end()


def _bracketed(text: str, f: _Fields) -> int:
    m = _LEVEL_BRACKET.match(text)
    if m:
        f.level = "WARNING" if m.group(1) == "WARN" else m.group(1)
        end = m.end()
        loc = _LOCATION_BRACKET.match(text, end)
        return loc.end() if loc else end
    m = _PY_LOGGING.match(text)
    if m:
        f.level = m.group(1)
        return m.end()
    return 0


def _margin(text: str, f: _Fields) -> int:
    m = _MARGIN.match(text)
    return m.end() if m else 0


_RULES: tuple[Callable[[str, _Fields], int], ...] = (
    _margin,
    _timestamp,
    _kernel_time,
    _torchrun,
    _ray,
    _vllm,
    _glog,
    _ray_core,
    _bracketed,
)


# The characters each rule's prefix can start with: most messages start with none of them, and
# trying every rule's regex on every candidate line was most of the cost of normalising it.
_FIRST_CHARS: dict[Callable[[str, _Fields], int], str] = {
    _margin: "|│┃",
    _timestamp: "[0123456789",
    _kernel_time: "[",
    _torchrun: "[",
    _ray: "(",
    _vllm: "DIWEC",
    _glog: "[IWEF",
    _ray_core: "DIWEF",
    _bracketed: "[DIWEC",
}
_RULES_BY_FIRST: dict[str, tuple[Callable[[str, _Fields], int], ...]] = {
    c: tuple(rule for rule in _RULES if c in _FIRST_CHARS[rule]) for c in "".join(_FIRST_CHARS.values())
}


def clean(raw: str) -> str:
    """Remove ANSI escapes and control characters (tabs kept), and trailing whitespace."""
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    if _CONTROL.search(raw):
        raw = _CONTROL.sub("", raw)
    return raw.rstrip()


def split_prefixes(text: str) -> tuple[str, _Fields, int]:
    """Peel known prefixes off `text`; return the message, the fields, and the repeat count."""
    f = _Fields()
    repeat = 1
    m = _REPEATED.search(text) if "across cluster" in text else None
    if m:
        repeat = bounded_int(m.group(1)) or 1
        text = text[: m.start()]
    pos = 0
    stripped = text.lstrip()
    for _ in range(MAX_PREFIXES):
        rules = _RULES_BY_FIRST.get(stripped[pos : pos + 1], ())
        for rule in rules:
            used = rule(stripped[pos:], f)
            if used:
                pos += used
                break
        else:
            break
    return stripped[pos:].lstrip(), f, repeat


def normalize(raw: str, source: str = "<input>", number: int = 0) -> Line:
    """Build a `Line` from one physical line (or one `\\r` segment of it)."""
    text = clean(raw)
    message, f, repeat = split_prefixes(text)
    rank = f.rank if f.rank is not None else f.local_rank
    worker = " > ".join(f.workers) if len(f.workers) > 1 else f.worker
    return Line(
        source=source,
        number=number,
        text=text,
        message=message,
        rank=rank,
        worker=worker,
        pid=f.pid,
        node=f.node,
        level=f.level,
        timestamp=f.timestamp,
        repeat=repeat,
    )
