"""A cache of parsed knowledge-base files: a run need not parse YAML and regexes parsed before.

Parsing the bundled files (YAML construction and the stdlib regex parser, both pure Python) is
about half of rlfix's start-up, more than scanning a log of 100 MB. What a set of files parses
to, when it has no problem, is kept as JSON in the user's cache directory under a key that hashes
everything it depends on: the files' names as shown and their bytes, rlfix's version and the bytes
of its modules, and Python's version (an upgraded or edited rlfix parses afresh). JSON, not pickle: a
cache file is data, and only the knowledge base's own classes are rebuilt from it.

`RLFIX_CACHE_DIR` names the directory (default `$XDG_CACHE_HOME/rlfix` or `~/.cache/rlfix`);
`RLFIX_CACHE_DIR=off` turns the cache off. A cache that cannot be read or written is skipped:
it never changes an answer, and never fails a run.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from rlfix.errors import Location
from rlfix.kb.parse import Pin, TaxonomyEntry
from rlfix.model import (
    Examples,
    Flag,
    FlagForm,
    Kind,
    LazyRegex,
    Localized,
    LocalizedFlag,
    Pattern,
    Remediation,
    Severity,
    Signature,
)
from rlfix.version import __version__

CACHE_ENV = "RLFIX_CACHE_DIR"
#: Cache files kept; the oldest beyond this are removed when one is written.
KEEP = 8
#: Bumped when the layout of a cache file changes.
FORMAT = 1

_CLASSES: dict[str, Callable[..., Any]] = {
    c.__name__: c
    for c in (Signature, Pattern, Flag, Remediation, Examples, Localized, LocalizedFlag, Location, TaxonomyEntry, Pin)
}
_ENUMS: dict[str, type[enum.Enum]] = {c.__name__: c for c in (Kind, Severity, FlagForm)}


def cache_dir() -> Path | None:
    """Where parsed knowledge-base files are kept, or None when the cache is off."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "no") else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rlfix"


def key_of(files: Sequence[tuple[str, bytes]]) -> str:
    """The cache key of these files (name as shown, bytes) parsed by this rlfix and Python."""
    h = hashlib.sha256(f"rlfix-kb-cache {FORMAT} {__version__} {sys.version}\n".encode())
    h.update(_code_digest())
    for name, data in files:
        h.update(f"{len(name)}:{name}{len(data)}:".encode())
        h.update(data)
    return h.hexdigest()


@lru_cache(maxsize=1)
def _code_digest() -> bytes:
    """A hash of rlfix's modules: any change to the code that parses may change what it gives."""
    package = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    try:
        for path in sorted(package.rglob("*.py")):
            h.update(str(path.relative_to(package)).encode())
            h.update(path.read_bytes())
    except OSError:  # modules that cannot be read (a zip): the version in the key stands for them
        return b"unreadable"
    return h.digest()


def fetch(key: str) -> Any | None:
    """What was kept under `key` (rebuilt), or None: not there, unreadable or not ours."""
    where = cache_dir()
    if where is None:
        return None
    try:
        raw = json.loads((where / f"kb-{key}.json").read_text(encoding="utf-8"))
        return _decode(raw)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None


def keep(key: str, value: Any) -> None:
    """Write `value` under `key`, atomically; any failure is ignored (the cache is only a cache)."""
    where = cache_dir()
    if where is None:
        return
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = json.dumps(_encode(value), ensure_ascii=False, separators=(",", ":"))
        fd, temp = tempfile.mkstemp(dir=where, prefix=".kb-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(temp, where / f"kb-{key}.json")
        except BaseException:
            os.unlink(temp)
            raise
        _prune(where)
    except (OSError, TypeError, ValueError):
        return


def _prune(where: Path) -> None:
    kept = sorted(where.glob("kb-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in kept[KEEP:]:
        old.unlink(missing_ok=True)


def _encode(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return {"enum": type(value).__name__, "value": value.value}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return {"class": type(value).__name__, "fields": fields}
    if isinstance(value, LazyRegex):
        return {"regex": value.pattern, "ignore_case": value.ignore_case}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {"dict": {str(k): _encode(v) for k, v in value.items()}}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot cache a {type(value).__name__}")


def _decode(raw: Any) -> Any:
    if isinstance(raw, list):
        return [_decode(v) for v in raw]
    if not isinstance(raw, dict):
        return raw
    if "class" in raw:
        return _CLASSES[raw["class"]](**{k: _decode(v) for k, v in raw["fields"].items()})
    if "tuple" in raw:
        return tuple(_decode(v) for v in raw["tuple"])
    if "enum" in raw:
        return _ENUMS[raw["enum"]](raw["value"])
    if "regex" in raw:
        return LazyRegex(raw["regex"], raw["ignore_case"])
    return {k: _decode(v) for k, v in raw["dict"].items()}
