"""What every profile shares: sizes, the batched writer, Ray's coloured prefixes."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

UNITS = {"KB": 1024, "MB": 1024**2, "GB": 1024**3, "K": 1024, "M": 1024**2, "G": 1024**3, "B": 1}
BATCH = 4096  # lines per write: one syscall per few hundred KB keeps generation I/O-bound, not call-bound


def parse_size(text: str) -> int:
    """`200MB`, `1GB`, `512K` or a byte count."""
    upper = text.strip().upper()
    for unit in sorted(UNITS, key=len, reverse=True):
        if upper.endswith(unit) and upper[: -len(unit)].replace(".", "", 1).isdigit():
            return int(float(upper[: -len(unit)]) * UNITS[unit])
    return int(upper)


def ray_prefix(actor: str, pid: int, ip: str | None = None) -> str:
    """The prefix Ray's log monitor puts on every line it forwards from a worker to the driver.

    Cyan `(Actor pid=N, ip=A)` then a reset, as in fixtures/logs/cuda-oom--verl-fsdp-update.log
    (Ray's python/ray/_private/worker.py `print_to_stdstream` colours it with colorama).
    """
    where = f"pid={pid}, ip={ip}" if ip else f"pid={pid}"
    return f"\x1b[36m({actor} {where})\x1b[0m "


class Writer:
    """Collects encoded lines and writes them in batches; counts bytes so generators stop on size."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.batch: list[bytes] = []
        self.written = 0

    def line(self, text: str) -> None:
        data = text.encode() + b"\n"
        self.batch.append(data)
        self.written += len(data)
        if len(self.batch) >= BATCH:
            self.flush()

    def lines(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.line(text)

    def raw(self, data: bytes) -> None:
        self.batch.append(data)
        self.written += len(data)
        if len(self.batch) >= BATCH:
            self.flush()

    def extend(self, encoded: list[bytes]) -> None:
        """Lines already encoded, each ending in a newline (the fast path of the big generators)."""
        self.batch.extend(encoded)
        self.written += sum(map(len, encoded))
        if len(self.batch) >= BATCH:
            self.flush()

    def flush(self) -> None:
        self.fh.write(b"".join(self.batch))
        self.batch.clear()


def fill_from_pool(writer: Writer, pool: list[bytes], size: int, rng: random.Random) -> None:
    """Append lines drawn from `pool` until `size` bytes are written (the pool holds encoded lines)."""
    while writer.written < size:
        for data in rng.choices(pool, k=256):
            writer.raw(data)
            if writer.written >= size:
                return


def write_file(path: Path, fill: Callable[[Writer], None]) -> int:
    """Open `path`, run `fill(writer)`, flush; returns the bytes written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        writer = Writer(fh)
        fill(writer)
        writer.flush()
    return writer.written
