"""`diagnose()`: one call from any kind of source to a ranked `Report`; `excerpt()`: its lines that matter."""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, Union

from rlfix.alerts import Alert
from rlfix.core import Triage
from rlfix.errors import InputError, UsageError
from rlfix.kb.load import KnowledgeBase
from rlfix.observe.windows import Want, read_windows
from rlfix.render.excerpt import MAX_CHARS, MAX_LINES, MAX_ROOTS
from rlfix.report import Report

Source = Union[
    str, bytes, "os.PathLike[str]", Sequence["str | os.PathLike[str]"], IO[Any], Iterable[str], Iterable[bytes]
]


def diagnose(
    source: Source,
    *,
    kb: KnowledgeBase | None = None,
    kb_dirs: Sequence[str | os.PathLike[str]] = (),
    engine: str = "auto",
    redact: bool = True,
    strict: bool = True,
    baseline: Source | Report | None = None,
    on_alert: Alert | None = None,
    follow_symlinks: bool = False,
    exit_status: int | str | None = None,
    jobs: int = 1,
) -> Report:
    """Diagnose a log and return a ranked `Report`.

    `source` may be a path (file, directory or `.gz`), a list of paths, the text of a log,
    bytes, a file object (binary or text), or any iterable of lines. A string is a path when
    such a file exists; otherwise, if it holds a newline or a space, it is log text.

    With `strict=True` (the default) an unreadable path raises `InputError`; with
    `strict=False` it is recorded in `Report.errors` and the other inputs are still read.
    `baseline` is a healthy run of the same job (any kind of source, or its report): findings
    that also show there are discounted. `on_alert(evidence, id)` is called the first time each
    signature matches. `engine` is `auto`, `hyperscan` or `python`; `redact=False` quotes
    evidence without masking credentials. Directory walks skip links that lead out of the
    directory unless `follow_symlinks`. `exit_status` is how the command that wrote the log
    ended (`137`, `-9` or `"SIGKILL"`, as a wrapper script saw it): a death by signal is evidence
    (SIGKILL suggests an OOM kill, SIGSEGV a native crash), and any non-zero status makes the
    report `failed`. `jobs` > 1 reads large files (and many files) in that many processes; the
    report is the same.

    >>> diagnose("RuntimeError: CUDA error: an illegal memory access was encountered\\n").top.id
    'cuda-illegal-memory-access'
    """
    triage = Triage(kb, kb_dirs=kb_dirs, engine=engine, redact=redact, on_new=on_alert)
    triage.set_exit_status(exit_status)
    if baseline is not None and not isinstance(baseline, Report):
        baseline = diagnose(baseline, kb=triage.kb, engine=engine, redact=redact, strict=strict)
    triage.baseline = baseline
    feed(triage, source, strict=strict, follow_symlinks=follow_symlinks, jobs=jobs)
    report = triage.report()
    triage.close()  # its scan blocks go to the next diagnose() of this process
    return report


#: The least `excerpt()` can fit: a head and one finding's evidence line.
MIN_LINES, MIN_CHARS = 15, 1000


def excerpt(
    source: Source,
    *,
    kb: KnowledgeBase | None = None,
    kb_dirs: Sequence[str | os.PathLike[str]] = (),
    engine: str = "auto",
    exit_status: int | str | None = None,
    max_lines: int = MAX_LINES,
    max_chars: int = MAX_CHARS,
    context: int = 3,
    lang: str = "en",
) -> str:
    """The lines of a log that matter, as Markdown for an issue or an LLM prompt; secrets masked.

    The same diagnosis as `diagnose()`, then each root cause's evidence line with `context` lines
    around it (and the traceback that ended there), read again from its file; the top cause's
    action, the job's frameworks, versions and flags, and where it first failed. Never more than
    `max_lines` lines nor `max_chars` characters (at least 15 and 1000: else `UsageError`). Log
    text (not a file) gets its evidence lines without the lines around them.
    """
    check_excerpt_bounds(max_lines, max_chars, context)
    report = diagnose(source, kb=kb, kb_dirs=kb_dirs, engine=engine, exit_status=exit_status)
    return with_windows(report, context).render("excerpt", max_lines=max_lines, max_chars=max_chars, lang=lang)


def check_excerpt_bounds(max_lines: int, max_chars: int, context: int) -> None:
    """Raise `UsageError` for bounds an excerpt cannot keep (the CLI and the API say the same)."""
    if max_lines < MIN_LINES or max_chars < MIN_CHARS:
        raise UsageError(f"an excerpt needs at least {MIN_LINES} lines and {MIN_CHARS} characters")
    if not 0 <= context <= 20:
        raise UsageError(f"--context {context}: give 0 to 20 lines")


def with_windows(report: Report, context: int = 3) -> Report:
    """`report` with the lines around each root cause's first evidence line, read again from its file."""
    wanted: dict[str, list[Want]] = {}
    for d in report.diagnoses[:MAX_ROOTS]:
        first = d.first
        if first.line > 0 and Path(first.source).is_file():
            wanted.setdefault(first.source, []).append(Want(first.line, d.id, before=context, after=min(context, 2)))
    found = [w for source, wants in wanted.items() for w in read_windows(source, wants, redact=report.redacted)]
    return replace(report, windows=tuple(found))


def feed(triage: Triage, source: Source, *, strict: bool = True, follow_symlinks: bool = False, jobs: int = 1) -> None:
    """Feed any supported kind of source into a `Triage` (paths with `jobs` processes)."""
    if isinstance(source, os.PathLike):
        triage.feed_paths([source], strict=strict, follow_symlinks=follow_symlinks, jobs=jobs)
    elif isinstance(source, str):
        if _is_path(source):
            triage.feed_paths([source], strict=strict, follow_symlinks=follow_symlinks, jobs=jobs)
        elif "\n" in source or any(c.isspace() for c in source) or not source:
            triage.feed_text(source)
        else:
            raise InputError(f"{source}: no such file or directory")
    elif isinstance(source, (bytes, bytearray)):
        triage.feed_stream(io.BytesIO(bytes(source)), "<bytes>")
    elif hasattr(source, "read"):
        name = str(getattr(source, "name", "<stream>"))
        if isinstance(source, io.TextIOBase) or "b" not in str(getattr(source, "mode", "b")):
            triage.feed_lines(source, name)  # type: ignore[arg-type]
        else:
            triage.feed_stream(source, name)  # type: ignore[arg-type]
    elif isinstance(source, (list, tuple)) and _names_paths(source):
        triage.feed_paths(list(source), strict=strict, follow_symlinks=follow_symlinks, jobs=jobs)
    elif isinstance(source, Iterable):
        triage.feed_lines(source)  # type: ignore[arg-type]
    else:
        raise InputError(f"cannot read a {type(source).__name__}; pass a path, text, a file or lines")


def _names_paths(items: Sequence[object]) -> bool:
    """A list names paths when one of them exists (or is a PathLike) and none is a line of text
    with a newline; otherwise it is a list of log lines."""
    if not items or not all(isinstance(i, (str, os.PathLike)) for i in items):
        return False
    if any(isinstance(i, str) and "\n" in i for i in items):
        return False
    return any(isinstance(i, os.PathLike) or _is_path(str(i)) for i in items)


def _is_path(text: str) -> bool:
    if not text or "\n" in text or len(text) > 4096:
        return False
    try:
        return text == "-" or Path(text).exists()
    except OSError:
        return False
