"""Inputs: files, directories (recursively), `-` for stdin, gzip, never read whole into memory."""

from __future__ import annotations

import codecs
import gzip
import io
import os
import re
import stat
import sys
import zlib
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
_NUL_RUN = re.compile(rb"\0{8,}")


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
    """A gzip stream that, when the file ends early or is damaged, keeps every byte decompressed
    before the fault, and says what the fault was in `damage`.

    `GzipFile.read(n)` raises on a truncated member and drops what it had gathered for that call;
    reading with `read1` hands over each decompressed piece as soon as it exists. A bad CRC or
    bytes appended after the last member (`echo more >> x.gz`) raise only after the text before
    them was handed over: that text is the log, and it must keep its findings.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self._gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self._raw = raw
        self.damage: str | None = None

    @property
    def truncated(self) -> bool:
        return self.damage is not None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.truncated:
            return 0
        try:
            data = self._gz.read1(len(buffer))
        except EOFError:
            self.damage = "truncated gzip file; diagnosed the part before the cut"
            return 0
        except (gzip.BadGzipFile, zlib.error) as exc:
            self.damage = f"damaged gzip file ({exc}); diagnosed the part before the damage"
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
    # CJK or emoji text has NULs only in its ASCII characters (spaces, newlines, digits): fewer
    # of them, still on one side only, and the whole head must then read as printable lines.
    if odd > 0.1 * pairs and even < odd / 2:
        return _readable_utf16(head[: pairs * 2], "utf-16-le")
    if even > 0.1 * pairs and odd < even / 2:
        return _readable_utf16(head[: pairs * 2], "utf-16-be")
    return None


def _readable_utf16(head: bytes, encoding: str) -> str | None:
    """`encoding` when `head` decodes as text with line breaks and almost no control characters."""
    try:
        text = head.decode(encoding)
    except UnicodeDecodeError:  # a lone surrogate, or the head cut inside a pair
        text = head[:-2].decode(encoding, "replace")
    if "\n" not in text or text.count("\ufffd") > 2:
        return None
    odd = sum(1 for ch in text if not (ch.isprintable() or ch in "\t\r\n"))
    return encoding if odd <= 0.02 * len(text) else None


@dataclass(frozen=True)
class Problem:
    """An input that could not be used, with a one-line reason."""

    name: str
    message: str
    skipped: bool = False  # True: a warning (e.g. binary file), False: an error

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


def looks_binary(head: bytes) -> bool:
    """An image, a core dump or a checkpoint, not a log: control bytes throughout the head.

    What a log may hold without being binary is left out of the count: runs of NUL (a hole left
    by a power loss or a copytruncate), and backspaces (spinners and progress bars redraw with
    them). A few stray control bytes in invalid UTF-8 still mean random data; GBK or Latin-1 text
    has high bytes but next to no control bytes.
    """
    if not head or head[:2] == _GZIP_MAGIC:
        return False
    text = _NUL_RUN.sub(b"", head).replace(b"\b", b"")
    if len(text) < 64:
        return False
    control = len(text) - len(text.translate(None, _BINARY_CONTROL))
    if control / len(text) > 0.10:
        return True
    invalid = text.decode("utf-8", "replace").count("\ufffd")
    return control / len(text) > 0.02 and invalid / len(text) > 0.20


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
    """Regular files under `directory`, sorted, depth first; links leading out of the tree only
    with `follow_symlinks`.

    The walk keeps its own stack: `os.walk` recurses, and a tree a thousand folders deep would end
    in a RecursionError. FIFOs, sockets and devices found by a walk are skipped (opening a FIFO
    with no writer blocks forever); they are read only when named on the command line.
    """
    root = directory.resolve()
    seen: set[tuple[int, int]] = set()
    stack: list[Path] = [directory]
    while stack:
        where = stack.pop()
        try:
            here = os.stat(where)
            with os.scandir(where) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            yield Problem(str(where), exc.strerror or str(exc))
            continue
        if (here.st_dev, here.st_ino) in seen:  # a link loop, when following links
            continue
        seen.add((here.st_dev, here.st_ino))
        folders: list[Path] = []
        for entry in entries:
            found = _classify(Path(entry.path), entry, root, follow_symlinks)
            if found == "dir":
                folders.append(Path(entry.path))
            elif isinstance(found, (Path, Problem)):
                yield found
        stack.extend(reversed(folders))


def _classify(path: Path, entry: os.DirEntry[str], root: Path, follow_symlinks: bool) -> Path | Problem | str | None:
    """What a walk does with one entry: "dir" to descend, the path to read, a Problem, or None."""
    try:
        link = entry.is_symlink()
        if link and not follow_symlinks and not path.resolve().is_relative_to(root):
            return Problem(str(path), "link out of the directory, skipped (--follow-symlinks reads it)", True)
        mode = entry.stat(follow_symlinks=True).st_mode
    except OSError as exc:
        return Problem(str(path), exc.strerror or str(exc))
    if stat.S_ISDIR(mode):
        # A link to a folder inside the tree is read where the folder itself is.
        return "dir" if follow_symlinks or not link else None
    if stat.S_ISREG(mode):
        return path
    return Problem(str(path), "not a regular file (a FIFO, socket or device)", True)


def expand(
    paths: Sequence[str | os.PathLike[str]], stdin: BinaryIO | None = None, follow_symlinks: bool = False
) -> Iterator[Input | Problem]:
    """Yield every input named by `paths` (files, directories, `-`), or a Problem for each bad one."""
    for entry in paths:
        text = os.fspath(entry)
        if not text:
            # An empty shell variable (`rlfix diagnose "$LOG"`) must not mean "the current directory".
            yield Problem("''", "empty path (an unset shell variable?)")
            continue
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
