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

A cache is never believed blindly: the key can be computed by anyone with the same install, so
each file carries an HMAC-SHA256 of its bytes under a per-user secret kept beside it (`kb.key`,
mode 0600, made on first use). The directory is used only when it is owned by the user and not
writable by group or others; files are opened without following links, must be regular files of
the user under a size cap, and must carry a valid MAC. Anything else is ignored (the files parse
afresh), and `rlfix kb info` says why. Pruning removes only names of the cache's own key format.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from rlfix.errors import Location
from rlfix.kb.parse import Pin, TaxonomyEntry
from rlfix.model import (
    Action,
    Concept,
    Decision,
    Examples,
    Flag,
    FlagForm,
    Kind,
    KnownMessage,
    LazyRegex,
    Localized,
    LocalizedFlag,
    Owner,
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
FORMAT = 2

_CLASSES: dict[str, Callable[..., Any]] = {
    c.__name__: c
    for c in (
        Signature,
        Pattern,
        Flag,
        Remediation,
        Examples,
        Localized,
        LocalizedFlag,
        Location,
        TaxonomyEntry,
        Pin,
        Concept,
        KnownMessage,
        Decision,
    )
}
_ENUMS: dict[str, type[enum.Enum]] = {c.__name__: c for c in (Kind, Severity, FlagForm, Action, Owner)}


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


#: A cache file larger than this is not read (the bundled knowledge base is about 1 MB of JSON).
MAX_BYTES = 32 << 20
SECRET_NAME = "kb.key"
_OWN_NAME = re.compile(r"^kb-[0-9a-f]{64}\.json$")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: Why the cache was last passed over, for `rlfix kb info` (None: used, or nothing to say).
last_note: str | None = None


def _note(text: str) -> None:
    global last_note
    last_note = text


def _trusted_dir(where: Path) -> bool:
    """The directory is ours: a real directory (no link), owned by this user, writable by no one else."""
    try:
        info = os.lstat(where)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        _note(f"{where} is not a directory (a link?): not used")
        return False
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        _note(f"{where} belongs to another user: not used")
        return False
    if info.st_mode & 0o022:
        _note(f"{where} is writable by group or others: not used (chmod go-w)")
        return False
    return True


def _read_own(path: Path, limit: int) -> bytes | None:
    """A regular file of this user under `limit` bytes, opened without following a link; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            return None
        return fh.read(limit + 1)


def _secret(where: Path, create: bool) -> bytes | None:
    """The per-user key of the MACs (32 random bytes, 0600), made on first use when `create`."""
    path = where / SECRET_NAME
    data = _read_own(path, 64)
    if data is not None:
        try:
            if os.stat(path).st_mode & 0o077:
                _note(f"{path} is readable by others: the cache is not used")
                return None
        except OSError:
            return None
        return data if len(data) == 32 else None
    if not create:
        return None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    except OSError:
        return None
    key = secrets.token_bytes(32)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key)
    return key


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).hexdigest().encode("ascii")


def fetch(key: str) -> Any | None:
    """What was kept under `key` (rebuilt), or None: not there, unreadable, not ours or not intact."""
    where = cache_dir()
    if where is None or not _trusted_dir(where):
        return None
    secret = _secret(where, create=False)
    data = _read_own(where / f"kb-{key}.json", MAX_BYTES)
    if secret is None or data is None:
        return None
    mac, _, body = data.partition(b"\n")
    if not hmac.compare_digest(mac, _mac(secret, body)):
        _note(f"{where / f'kb-{key}.json'} failed its integrity check: ignored")
        return None
    try:
        return _decode(json.loads(body.decode("utf-8")))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None


def keep(key: str, value: Any) -> None:
    """Write `value` under `key` with its MAC, atomically; any failure is ignored (the cache is only a cache)."""
    where = cache_dir()
    if where is None:
        return
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _trusted_dir(where):
            return
        secret = _secret(where, create=True)
        if secret is None:
            return
        body = json.dumps(_encode(value), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        fd, temp = tempfile.mkstemp(dir=where, prefix=".kb-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_mac(secret, body) + b"\n" + body)
            os.replace(temp, where / f"kb-{key}.json")
        except BaseException:
            os.unlink(temp)
            raise
        _prune(where)
    except (OSError, TypeError, ValueError):
        return


def _prune(where: Path) -> None:
    """Keep the newest KEEP cache files; only names of the cache's own key format are touched."""
    own = [p for p in where.iterdir() if _OWN_NAME.match(p.name) and not p.is_symlink()]
    for old in sorted(own, key=lambda p: p.stat().st_mtime, reverse=True)[KEEP:]:
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
        items = raw["tuple"]
        # Most tuples are of strings (terms, steps, anchors, examples): no element needs decoding.
        if all(type(v) is str for v in items):
            return tuple(items)
        return tuple(_decode(v) for v in items)
    if "enum" in raw:
        return _ENUMS[raw["enum"]](raw["value"])
    if "regex" in raw:
        return LazyRegex(raw["regex"], raw["ignore_case"])
    return {k: _decode(v) for k, v in raw["dict"].items()}
