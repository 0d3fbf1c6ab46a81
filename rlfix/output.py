"""Writing a report or a table to a file (`-o`, `--report`): whole or not at all.

The text goes to a temporary file beside the target, which then replaces it: a full disk or a
killed run leaves the previous file as it was, never a truncated one. A target that is not a
regular file (`/dev/stdout`, a FIFO) cannot be replaced and is written in place. File and
command names that are not UTF-8 reach reports as surrogate escapes; they are written as
backslash escapes (`\\udcb5`), which keeps the file valid UTF-8 and the JSON valid.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

#: How text that cannot be UTF-8 (surrogate-escaped bytes of a file name) is written.
ERRORS = "backslashreplace"


def write_report(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` to `path` as UTF-8, atomically where `path` is (or will be) a regular file.

    Raises OSError as the file system reports it (the callers turn it into one line).
    """
    data = text.encode("utf-8", ERRORS)
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(target, "wb") as fh:
            fh.write(data)
        return
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name[:80]}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(temporary, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    """This process's umask: read from /proc where it can be (setting it to read it races with
    threads that create files meanwhile)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current
