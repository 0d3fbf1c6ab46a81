"""Inputs: files, directories (recursively), `-` for stdin, gzip, never read whole into memory."""

from __future__ import annotations

import codecs
import gzip
import io
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

#: Bytes inspected to tell a log from a binary file.
SNIFF = 8192
#: Bytes read at a time while skipping a NUL hole.
HOLE_BLOCK = 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_TEXT_CONTROL = {9, 10, 12, 13, 27}
_BINARY_CONTROL = bytes(b for b in range(32) if b not in _TEXT_CONTROL)


@dataclass(frozen=True)
class Input:
    """One readable input: how to name it, and how to open it as a binary stream."""

    name: str
    path: Path | None = None
    stream: BinaryIO | None = None
    #: Bytes of a leading NUL hole to skip (a log truncated in place by logrotate's copytruncate).
    skip: int = 0
    #: "utf-16-le" / "utf-16-be" for UTF-16 logs, recoded to UTF-8 as they are read.
    encoding: str | None = None
    #: The size of a regular file read as it is (not gzip), which can be read by position; else -1.
    size: int = -1

    def open(self) -> BinaryIO:
        if self.stream is not None:
            return self.stream
        assert self.path is not None
        raw = self.path.open("rb")
        if self.skip:
            raw.seek(self.skip)
        if self.encoding is not None:
            return Recoded(raw, self.encoding)  # type: ignore[return-value]
        if raw.peek(2)[:2] == _GZIP_MAGIC:
            return Gunzipped(raw)  # type: ignore[return-value]
        return raw


class Gunzipped(io.RawIOBase):
    """A gzip stream that, when the file ends early, keeps every byte decompressed before the cut.

    `GzipFile.read(n)` raises on a truncated member and drops what it had gathered for that call;
    reading with `read1` hands over each decompressed piece as soon as it exists.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self._gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self._raw = raw
        self.truncated = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.truncated:
            return 0
        try:
            data = self._gz.read1(len(buffer))
        except EOFError:
            self.truncated = True
            return 0
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._gz.close()
        self._raw.close()
        super().close()


class Recoded(io.RawIOBase):
    """A UTF-16 byte stream read as UTF-8, a block at a time (never the whole file)."""

    def __init__(self, raw: BinaryIO, encoding: str) -> None:
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder(encoding)("replace")
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            chunk = self._raw.read(max(len(buffer), 2))
            self._pending = self._decoder.decode(chunk, final=not chunk).encode("utf-8", "surrogateescape")
            if not chunk:
                break
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        self._raw.close()
        super().close()


def utf16(head: bytes) -> str | None:
    """The UTF-16 flavour of a log, from its byte-order mark or its NUL-every-other-byte shape."""
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "utf-16"
    pairs = len(head) // 2
    if pairs < 8 or b"\0" not in head:  # (a memchr: most logs hold no NUL at all)
        return None
    even, odd = head[0 : pairs * 2 : 2].count(0), head[1 : pairs * 2 : 2].count(0)
    # ASCII text in UTF-16 has a NUL in one byte of (nearly) every pair and almost none in the other.
    if odd > 0.9 * pairs and even < 0.05 * pairs:
        return "utf-16-le"
    if even > 0.9 * pairs and odd < 0.05 * pairs:
        return "utf-16-be"
    return None


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
    control = len(head) - len(head.translate(None, _BINARY_CONTROL))
    return control / len(head) > 0.10


def _hole(fh: BinaryIO) -> int:
    """Length of a leading run of NUL bytes, read a block at a time (bounded memory)."""
    skipped = 0
    while True:
        block = fh.read(HOLE_BLOCK)
        if not block:
            return skipped
        rest = block.lstrip(b"\0")
        skipped += len(block) - len(rest)
        if rest:
            return skipped


def _sniff(path: Path) -> tuple[bytes, int, bool]:
    """The head of a file (decompressed when gzip), how many leading NUL bytes to skip, and
    whether it is gzip."""
    with path.open("rb") as fh:
        head = fh.read(SNIFF)
        skip = 0
        if head[:1] == b"\0" and utf16(head) is None:
            fh.seek(0)
            skip = _hole(fh)
            fh.seek(skip)
            head = fh.read(SNIFF)
    if head[:2] == _GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as gz:
                return gz.read1(SNIFF), skip, True
        except (OSError, EOFError):
            return head, skip, True
    return head, skip, False


def _walk(directory: Path, follow_symlinks: bool) -> Iterator[Path | Problem]:
    """Files under `directory`, sorted; links leading out of the tree only with `follow_symlinks`."""
    root = directory.resolve()
    problems: list[Problem] = []
    seen: set[tuple[int, int]] = set()

    def unreadable(exc: OSError) -> None:
        problems.append(Problem(str(exc.filename or directory), exc.strerror or str(exc)))

    for where, dirs, files in os.walk(directory, onerror=unreadable, followlinks=follow_symlinks):
        yield from problems
        problems.clear()
        here = os.stat(where)
        if (here.st_dev, here.st_ino) in seen:  # a link loop, when following links
            dirs.clear()
            continue
        seen.add((here.st_dev, here.st_ino))
        dirs.sort()
        for name in sorted(files):
            path = Path(where) / name
            if not follow_symlinks and path.is_symlink() and not path.resolve().is_relative_to(root):
                yield Problem(str(path), "link out of the directory, skipped (--follow-symlinks reads it)", True)
                continue
            yield path
    yield from problems


def expand(
    paths: Sequence[str | os.PathLike[str]], stdin: BinaryIO | None = None, follow_symlinks: bool = False
) -> Iterator[Input | Problem]:
    """Yield every input named by `paths` (files, directories, `-`), or a Problem for each bad one."""
    for entry in paths:
        text = os.fspath(entry)
        if text == "-":
            yield Input("<stdin>", stream=stdin if stdin is not None else sys.stdin.buffer)
            continue
        try:
            yield from _entry(Path(text), follow_symlinks)
        except OSError as exc:  # e.g. a path under a directory we may not search
            yield Problem(text, exc.strerror or str(exc))


def _entry(path: Path, follow_symlinks: bool) -> Iterator[Input | Problem]:
    text = str(path)
    if path.is_dir():
        found = False
        for child in _walk(path, follow_symlinks):
            found = True
            yield child if isinstance(child, Problem) else from_file(child)
        if not found:
            yield Problem(text, "directory holds no files", skipped=True)
    elif path.exists():
        yield from_file(path)
    else:
        yield Problem(text, "no such file or directory")


def from_file(path: Path) -> Input | Problem:
    """An input for one path: a regular file (sniffed), or a FIFO / process substitution (a stream)."""
    name = str(path)
    try:
        info = path.stat()
        mode = info.st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode):
            # `<(cmd)` and named pipes: read as a stream; sniffing would consume what it reads.
            return Input(name, path=path)
        if not stat.S_ISREG(mode):
            return Problem(name, "not a regular file", skipped=True)
        head, skip, compressed = _sniff(path)
    except OSError as exc:
        return Problem(name, exc.strerror or str(exc))
    encoding = utf16(head)
    if encoding is not None:
        return Input(name, path=path, encoding=encoding)
    if looks_binary(head):
        return Problem(name, "binary file, skipped", skipped=True)
    return Input(name, path=path, skip=skip, size=-1 if compressed else info.st_size)
