"""Which jobs the paths and globs given to `rlfix triage` name, and when each job happened.

A directory is a fleet: each entry in it is one job (a file, or a folder read whole), unless the
directory is itself a Ray session (then it is one job). A file, or each match of a glob, is one job.
Discovery is lazy: jobs are yielded one at a time, so a folder of thousands costs one listing.
"""

from __future__ import annotations

import glob
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from rlfix.clock import parse, to_datetime
from rlfix.errors import InputError, UsageError

#: Files in a folder of jobs that are notes about the logs, not logs (fixtures/logs keeps its
#: sources and labels beside the logs): never a job of their own.
NOT_LOGS = frozenset({".md", ".yaml", ".yml", ".toml", ".py", ".html", ".rst", ".cfg", ".ini"})
_RELATIVE = re.compile(r"([0-9]+)\s*([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class Job:
    """One job to scan: a file, a folder read whole, or a Ray session folder."""

    path: str
    ray: bool = False
    #: Why the job is not read (a link out of the folder, a FIFO): a warning, not an error.
    skip: str | None = None


def is_ray_session(path: Path) -> bool:
    """A Ray session folder (`session_*`, holding `logs/raylet.out`) or its `logs` folder."""
    try:
        return path.is_dir() and (any(path.glob("raylet*")) or any((path / "logs").glob("raylet*")))
    except OSError:
        return False


def check_paths(args: Sequence[str]) -> None:
    """Raise `InputError` (exit 2) for an argument that is neither a path nor a glob with matches."""
    if not args:
        raise UsageError("name at least one log file, job folder or glob")
    for arg in args:
        if not os.path.lexists(arg) and not (glob.has_magic(arg) and glob.glob(arg)):
            raise InputError(f"{arg}: no such file or directory, and no file matches it")


def find_jobs(args: Sequence[str], follow_symlinks: bool = False) -> Iterator[Job]:
    """Every job the arguments name, in argument order then name order; each path once.

    An entry of a folder that is a link leading out of it (unless `follow_symlinks`), or not a
    regular file or folder (a FIFO would block the scan forever), comes with its `skip` reason.
    """
    seen: set[str] = set()
    for arg in args:
        for job in _jobs_of(arg, follow_symlinks):
            # `/tmp/ray` holds session_latest, a link to one of its sessions: read that session once.
            real = os.path.realpath(job.path)
            if real not in seen:
                seen.add(real)
                yield job


def _jobs_of(arg: str, follow_symlinks: bool) -> Iterator[Job]:
    path = Path(arg)
    if path.is_dir() and not is_ray_session(path):
        root = path.resolve()
        children = sorted(path.iterdir())
        # Ray's temp root (`/tmp/ray`) holds its sessions and a few files of its own
        # (`ray_current_cluster`, `prom_metrics_service_discovery.json`): only the sessions are jobs.
        temp_root = any(c.name.startswith("session_") and is_ray_session(c) for c in children)
        for child in children:
            if child.name.startswith(".") or (child.suffix in NOT_LOGS and child.is_file()):
                continue
            skip = _skip_reason(child, root, follow_symlinks)
            ray = skip is None and is_ray_session(child)
            if ray or not temp_root:
                yield Job(str(child), ray=ray, skip=skip)
    elif os.path.lexists(arg):
        yield Job(arg, ray=is_ray_session(path))
    else:
        for match in sorted(glob.glob(arg)):
            yield Job(match, ray=is_ray_session(Path(match)))


def _skip_reason(child: Path, root: Path, follow_symlinks: bool) -> str | None:
    """Why a folder entry is not read as a job, or None to read it."""
    try:
        if child.is_symlink() and not follow_symlinks and not child.resolve().is_relative_to(root):
            return "link out of the folder (--follow-symlinks reads it)"
        mode = child.stat().st_mode
    except OSError as exc:
        return exc.strerror or str(exc)
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "not a regular file (a FIFO, socket or device)"
    return None


def newest_mtime(path: str) -> float | None:
    """The newest modification time of a file, or of any file under a folder (None if none is readable)."""
    try:
        if not os.path.isdir(path):
            return os.stat(path).st_mtime
    except OSError:
        return None
    newest: float | None = None
    stack = [path]  # its own stack: os.walk recurses, and deep trees raise RecursionError
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    mtime = entry.stat(follow_symlinks=False).st_mtime
                    newest = mtime if newest is None else max(newest, mtime)
            except OSError:
                continue
    return newest


def parse_stamp(text: str) -> datetime | None:
    """A dated log timestamp or ISO 8601 time, with or without zone, as an aware UTC time.

    `rlfix.clock` reads it: without a zone it is local time, as the processes that wrote it saw
    it. Shapes without a year (vLLM's `05-01 12:00:03`, glog) and seconds since boot give None:
    the caller falls back to file times.
    """
    return to_datetime(parse(text))


def parse_since(text: str, now: datetime | None = None, option: str = "--since") -> datetime:
    """`--since`: an ISO date or time (local unless it names a zone), or an age such as 90m, 2h, 3d, 1w.

    `option` names the option in errors (`--until` shares the rule).
    """
    rel = _RELATIVE.fullmatch(text.strip())
    if rel:
        now = now or datetime.now(timezone.utc)
        digits = rel.group(1).lstrip("0") or "0"
        try:
            if len(digits) > 12:  # beyond any calendar; int() of thousands of digits is refused anyway
                raise OverflowError
            return now - timedelta(**{_UNITS[rel.group(2)]: int(digits)})
        except OverflowError:
            raise UsageError(f"{option} {safe_cut(text)}: that age reaches before year 1") from None
    when = parse_stamp(text)
    if when is None:
        raise UsageError(
            f"{option} {safe_cut(text)!r}: give an ISO date or time (2024-05-01, 2024-05-01T12:00) or an age (2h, 3d)"
        )
    return when


def safe_cut(text: str, limit: int = 40) -> str:
    """An option value as an error quotes it: no more than `limit` characters."""
    return text if len(text) <= limit else text[:limit] + "…"


def iso(when: datetime) -> str:
    """A time as the fleet shows it: UTC, to the second."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
