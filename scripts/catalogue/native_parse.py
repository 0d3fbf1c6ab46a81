"""Reading C, C++, CUDA and Go sources for the native miners: comments out, calls and their
arguments, string literals, printf and `<<` messages made into templates with `{}` holes.

Development-time helper of scripts/catalogue/mine_native.py; it reads source text only and knows
nothing of rlfix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PRINTF = re.compile(
    r"%(?:%|[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|j|z|t|L|q)?"
    r"(?:p[A-Za-z]+|[diouxXeEfFgGcspvqwTm]))"
)
_FMT_BRACES = re.compile(r"\{[^{}]*\}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9:]*")


def strip_comments(text: str) -> str:
    """The text with // and /* */ comments blanked (newlines kept, so line numbers stay right)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'" or (c == "`" and text.startswith("`", i)):
            j = _string_end(text, i)
            out.append(text[i:j])
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _string_end(text: str, i: int) -> int:
    """Index just past the string or char literal that starts at `i`."""
    quote = text[i]
    j = i + 1
    while j < len(text):
        if text[j] == "\\" and quote != "`":
            j += 2
            continue
        if text[j] == quote:
            return j + 1
        if text[j] == "\n" and quote != "`":
            return j
        j += 1
    return j


def balanced(text: str, start: int) -> int:
    """Index of the bracket closing the one at `start` (strings skipped); -1 when unclosed."""
    depth = 0
    i = start
    while i < len(text):
        c = text[i]
        if c in "\"'`":
            i = _string_end(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` where it stands outside brackets and strings."""
    parts, depth, i, last = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c in "\"'`":
            i = _string_end(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i) and (sep != "<" or not text.startswith("<<<", i)):
            parts.append(text[last:i])
            i += len(sep)
            last = i
            continue
        i += 1
    parts.append(text[last:])
    return [p.strip() for p in parts]


@dataclass
class Call:
    """One call site: the name called, its 1-based line, its raw argument text."""

    name: str
    line: int
    args: str
    end: int


def find_calls(text: str, names: str) -> list[Call]:
    """Every call of a name matching the regex `names` (text already stripped of comments)."""
    calls = []
    for match in re.finditer(rf"(?<![A-Za-z0-9_.>]){names}\s*\(", text):
        open_at = match.end() - 1
        close = balanced(text, open_at)
        if close < 0:
            continue
        name = re.sub(r"\s*\($", "", match.group(0))
        line = text.count("\n", 0, match.start()) + 1
        calls.append(Call(name, line, text[open_at + 1 : close], close + 1))
    return calls


def statement_after(text: str, pos: int) -> str:
    """The rest of the statement from `pos` to its top-level `;`."""
    depth, i = 0, pos
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = _string_end(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return text[pos:i]
        elif c == ";" and depth == 0:
            return text[pos:i]
        i += 1
    return text[pos:]


_LITERAL = re.compile(r'(?:u8|L|u|U)?"((?:[^"\\\n]|\\.)*)"')
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "r": ""}


def literal_value(expr: str) -> str | None:
    """The text of an expression made only of adjacent string literals (and PRI* macros), else None."""
    rest = expr.strip()
    if not rest.startswith(('"', 'u8"', 'L"')):
        return None
    pieces = []
    while rest:
        match = _LITERAL.match(rest)
        if match:
            pieces.append(re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), match.group(1)))
            rest = rest[match.end() :].lstrip()
            continue
        macro = re.match(r"(PRI[a-zA-Z0-9_]+|SCN[a-z0-9]+)\s*", rest)
        if macro:
            pieces.append("d" if "d" in macro.group(1)[3:] else "u")
            rest = rest[macro.end() :]
            continue
        return None
    return "".join(pieces)


@dataclass
class Piece:
    """A part of a message: literal text, or a hole filled from the expression `expr`."""

    text: str
    expr: str | None = None
    spec: str | None = None


def expr_pieces(expr: str) -> list[Piece]:
    """An expression that builds a string (`+` chains, c10::str, std::string, fmt::format) as pieces."""
    expr = expr.strip()
    value = literal_value(expr)
    if value is not None:
        return [Piece(value)]
    wrap = re.match(r"^(?:c10::str|::c10::str|std::string|c10::detail::str|absl::StrCat)\s*\(", expr)
    if wrap and balanced(expr, wrap.end() - 1) == len(expr) - 1:
        pieces = []
        for arg in split_top(expr[wrap.end() : -1], ","):
            pieces.extend(expr_pieces(arg))
        return pieces
    fmt = re.match(r"^(?:fmt::format|std::format|fmt::sprintf|absl::StrFormat|StrFormat)\s*\(", expr)
    if fmt and balanced(expr, fmt.end() - 1) == len(expr) - 1:
        args = split_top(expr[fmt.end() : -1], ",")
        return format_pieces(args, "absl" in expr[:12] or "sprintf" in expr[:12])
    parts = split_top(expr, "+")
    if len(parts) > 1 and any(literal_value(p) is not None for p in parts):
        pieces = []
        for part in parts:
            pieces.extend(expr_pieces(part))
        return pieces
    return [Piece("", expr)]


def format_pieces(args: list[str], printf: bool) -> list[Piece]:
    """A format call's arguments (format string first) as pieces; `{}` or printf holes."""
    if not args:
        return []
    fmt = literal_value(args[0])
    if fmt is None:
        return [Piece("", args[0])]
    values = args[1:]
    pattern = _PRINTF if printf else _FMT_BRACES
    pieces, last, k = [], 0, 0
    for match in pattern.finditer(fmt):
        if match.group(0) == "%%":
            continue
        if match.group(0) == "%m":
            pieces.append(Piece(fmt[last : match.start()]))
            pieces.append(Piece("", "strerror(errno)"))
            last = match.end()
            continue
        pieces.append(Piece(fmt[last : match.start()].replace("%%", "%") if printf else fmt[last : match.start()]))
        expr = values[k] if k < len(values) else ""
        if "*" in match.group(0) and k + 1 < len(values):
            k += 1
            expr = values[k]
        conv = match.group(0)[-1] if not re.search(r"p[A-Za-z]+$", match.group(0)) else "p"
        pieces.append(Piece("", (expr or match.group(0)), conv if printf else None))
        k += 1
        last = match.end()
    tail = fmt[last:]
    pieces.append(Piece(tail.replace("%%", "%") if printf else tail))
    return pieces


def stream_pieces(parts: list[str]) -> list[Piece]:
    """The operands of a `<<` chain as pieces (manipulators such as std::endl dropped)."""
    pieces = []
    for part in parts:
        if re.fullmatch(r"(std::)?(endl|flush|hex|dec|boolalpha)|\s*", part):
            continue
        pieces.extend(expr_pieces(part))
    return pieces


def template_of(pieces: list[Piece]) -> str:
    """The pieces as a template: literal text with `{}` for each hole."""
    text = "".join(p.text if p.expr is None else "{}" for p in pieces)
    return " ".join(text.split())


def words(template: str) -> int:
    """How many words of at least two letters the template has once its holes are gone."""
    return len(re.findall(r"[A-Za-z][A-Za-z'_-]+", template.replace("{}", " ")))


#: Realistic values for holes, chosen by words in the expression that fills them (first match).
_FILL = [
    (r"\bentity\b", "JOB 123456"),
    (r"loglvl", ""),
    (r"cl_program->name", "nfs"),
    (r"servername|cl_server", "nfs-server01"),
    (r"time_str|timestr|tbuf|time_buf", "2026-11-26T14:10:50"),
    (r'\?\s*"s"|"s"\s*:|:\s*"s"', "s"),
    (r"backOff|BackOff", "5m0s"),
    (r"resourceToReclaim|starvedResource|resourceName|v1\.Resource", "memory"),
    (r"container\.Name|containerName|ContainerName", "trainer"),
    (r"format\.Pod|\bpod\b|podName|pod\.Name", "trainer-0_default(5f2c9a1e-3b7d-4c1a-9e8f-2d6b7a0c4e11)"),
    (r"\bimage\b|imageRef|container\.Image", "nvcr.io/nvidia/pytorch:24.05-py3"),
    (r"logPrefix", "[PG ID 0 PG GUID 0(default_pg) Rank 3] "),
    (r"hostname|host_name|node_?name|nodename|nodelist|\bhosts\b", "node01"),
    (r"severity|aer_error_severity_string", "Uncorrectable (Fatal)"),
    (r"\bip\b|ip_address|address|addr|host", "10.0.0.12"),
    (r"port", "29500"),
    (r"job_?id|jobid|step_?id", "123456"),
    (
        r"worker_id|actor_id|task_id|object_id|node_id|raylet_id|ObjectID|WorkerID|NodeID|ActorID|TaskID|\.Hex\(|\bid\b|_id\b",
        "a1b2c3d4e5f60718293a4b5c6d7e8f90",
    ),
    (r"pid", "12345"),
    (r"rank", "3"),
    (r"world_size|size_|nranks|nRanks", "8"),
    (r"timeout|Timeout|_ms\b|duration|elapsed", "600000"),
    (r"device|Device|dev\b|cudaDev|gpu", "0"),
    (r"dtype|scalar_type|ScalarType|toString\(\)", "Float"),
    (r"shape|sizes\(\)|\.sizes|IntArrayRef", "[4, 4096]"),
    (r"dim", "2"),
    (r"numel|bytes|nbytes|size|Size|length|len", "4096"),
    (r"cgroup|cg_path", "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_123456"),
    (r"path|file|dir|Dir|filename", "/home/user/run/data.bin"),
    (r"strerror|errno", "Invalid argument"),
    (r"err|Err|status|ret|res|result|code", "error 2"),
    (r"comm|task|tsk|process|current", "python"),
    (r"name|Name", "weight"),
    (r"count|num|n\b", "4"),
]


def fill(expr: str | None) -> str:
    """A realistic value for a hole filled from `expr` (the expression's words choose it)."""
    if not expr:
        return "1"
    if expr.startswith("="):
        return expr[1:]
    for pattern, value in _FILL:
        if re.search(pattern, expr):
            return value
    return "1"


def _fill_piece(piece: Piece) -> str:
    """A hole's value, shaped by its printf conversion where there is one (hex, number)."""
    value = fill(piece.expr)
    if piece.spec == "p" and re.search(r"step", piece.expr or ""):
        return "StepId=123456.0"
    if piece.spec in ("x", "X", "p"):
        return "7f3a2c001000" if re.search(r"addr|ip|sp|ptr|pc|address", piece.expr or "") else "1f"
    if piece.spec in ("d", "i", "u") and not value.isdigit():
        return "4"
    return value


def line_of(pieces: list[Piece]) -> str:
    """The message as a user sees it: holes filled with realistic values, one line."""
    return " ".join("".join(p.text if p.expr is None else _fill_piece(p) for p in pieces).split())
