"""Regular files read by position: what lets a file be scanned in ranges and looked back into."""

from __future__ import annotations

import os
from pathlib import Path

from rlfix.read.inputs import Input


def file_size(item: Input) -> int:
    """The size of the file behind `item` when it can be read by position, else -1.

    That is a regular file read as it is: not stdin or a stream, not UTF-16 (recoded as it is
    read), not gzip (decompressed as it is read). Known from when the file was sniffed.
    """
    if item.path is None or item.stream is not None or item.encoding is not None:
        return -1
    return item.size


class FileView:
    """Reads bytes of a file by position (positions count from `skip`, where its text starts);
    opened on first use, since most files never need it."""

    def __init__(self, path: Path, skip: int = 0) -> None:
        self._path = path
        self._skip = skip
        self._fh: int | None = None

    def read(self, position: int, size: int) -> bytes:
        """Up to `size` bytes from `position` (fewer at the end of the file, none if it is gone)."""
        if size <= 0:
            return b""
        try:
            if self._fh is None:
                self._fh = os.open(self._path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            if hasattr(os, "pread"):
                return os.pread(self._fh, size, self._skip + position)
            os.lseek(self._fh, self._skip + position, os.SEEK_SET)
            return os.read(self._fh, size)
        except OSError:
            return b""

    def close(self) -> None:
        if self._fh is not None:
            os.close(self._fh)
            self._fh = None
