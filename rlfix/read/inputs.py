"""Inputs: files, directories (recursively), `-` for stdin, gzip, never read whole into memory."""

from __future__ import annotations

import gzip
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

#: Bytes inspected to tell a log from a binary file.
SNIFF = 8192
_GZIP_MAGIC = b"\x1f\x8b"
_TEXT_CONTROL = {9, 10, 12, 13, 27}


@dataclass(frozen=True)
class Input:
    """One readable input: how to name it, and how to open it as a binary stream."""

    name: str
    path: Path | None = None
    stream: BinaryIO | None = None

    def open(self) -> BinaryIO:
        if self.stream is not None:
            return self.stream
        assert self.path is not None
        raw = self.path.open("rb")
        if raw.peek(2)[:2] == _GZIP_MAGIC if hasattr(raw, "peek") else False:
            return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
        return raw


@dataclass(frozen=True)
class Problem:
    """An input that could not be used, with a one-line reason."""

    name: str
    message: str
    skipped: bool = False  # True: a warning (e.g. binary file), False: an error

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


def looks_binary(head: bytes) -> bool:
    """A NUL-heavy or control-heavy head means an image, a core dump or a checkpoint, not a log."""
    if not head:
        return False
    if head[:2] == _GZIP_MAGIC:
        return False
    control = sum(1 for b in head if b < 32 and b not in _TEXT_CONTROL)
    return control / len(head) > 0.10


def _sniff(path: Path) -> bytes:
    with path.open("rb") as fh:
        head = fh.read(SNIFF)
    if head[:2] == _GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as gz:
                return gz.read(SNIFF)
        except (OSError, EOFError):
            return head
    return head


def _walk(directory: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(directory, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            yield Path(root) / name


def expand(paths: Sequence[str | os.PathLike[str]], stdin: BinaryIO | None = None) -> Iterator[Input | Problem]:
    """Yield every input named by `paths` (files, directories, `-`), or a Problem for each bad one."""
    for entry in paths:
        text = os.fspath(entry)
        if text == "-":
            yield Input("<stdin>", stream=stdin if stdin is not None else sys.stdin.buffer)
            continue
        path = Path(text)
        if path.is_dir():
            found = False
            for child in _walk(path):
                found = True
                yield from _file(child)
            if not found:
                yield Problem(text, "directory holds no files", skipped=True)
        elif path.exists():
            yield from _file(path)
        else:
            yield Problem(text, "no such file or directory")


def _file(path: Path) -> Iterator[Input | Problem]:
    name = str(path)
    try:
        if not path.is_file():
            yield Problem(name, "not a regular file", skipped=True)
            return
        head = _sniff(path)
    except PermissionError:
        yield Problem(name, "permission denied")
        return
    except OSError as exc:
        yield Problem(name, exc.strerror or str(exc))
        return
    if looks_binary(head):
        yield Problem(name, "binary file, skipped", skipped=True)
        return
    yield Input(name, path=path)
