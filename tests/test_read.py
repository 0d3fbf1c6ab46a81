"""read/inputs.py: what each kind of path becomes (table of cases)."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

from rlfix.read.inputs import Input, Problem, expand


def _names(items: list[Input | Problem]) -> list[tuple[str, str]]:
    return [("input" if isinstance(i, Input) else "problem", Path(i.name).name) for i in items]


def test_kinds_of_path(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("x\n")
    with gzip.open(tmp_path / "b.log.gz", "wt") as f:
        f.write("y\n")
    (tmp_path / "img.bin").write_bytes(b"\x00\x01\x02" * 100)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "c.txt").write_text("z\n")
    got = _names(list(expand([tmp_path / "a.log", tmp_path / "b.log.gz", tmp_path / "missing.log", sub])))
    assert got == [("input", "a.log"), ("input", "b.log.gz"), ("problem", "missing.log"), ("input", "c.txt")]
    skipped = [i for i in expand([tmp_path / "img.bin"]) if isinstance(i, Problem)]
    assert skipped and skipped[0].skipped


def test_gzip_is_opened_transparently(tmp_path: Path) -> None:
    with gzip.open(tmp_path / "b.gz", "wt") as f:
        f.write("hello\n")
    (item,) = list(expand([tmp_path / "b.gz"]))
    assert isinstance(item, Input) and item.open().read() == b"hello\n"


def test_dash_is_stdin() -> None:
    stdin = io.BytesIO(b"line\n")
    (item,) = list(expand(["-"], stdin))
    assert isinstance(item, Input) and item.open() is stdin
