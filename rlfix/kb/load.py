"""Load the knowledge base: the bundled files plus the user's, merged by id, every problem raised at once."""

from __future__ import annotations

import hashlib
import importlib.resources
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from rlfix.errors import KnowledgeError, Location, Problem, UsageError
from rlfix.kb import cache
from rlfix.kb.messages import parse_messages
from rlfix.kb.parse import Pin, TaxonomyEntry, parse_pins, parse_signature_file, parse_taxonomy
from rlfix.model import KnownMessage, Signature

TAXONOMY_FILE = "taxonomy.yaml"
PINS_FILE = "pins.yaml"
#: The folder of known messages (`rlfix/kb/messages.py`), in the bundled or a user's knowledge base.
MESSAGES_DIR = "messages"


@dataclass(frozen=True)
class KnowledgeBase:
    """All signatures in force, in load order, with the files they came from."""

    signatures: tuple[Signature, ...]
    files: tuple[str, ...] = ()
    taxonomy: tuple[TaxonomyEntry, ...] = ()
    overridden: tuple[str, ...] = ()
    #: What each framework release asks of the packages it calls (knowledge/pins.yaml).
    pins: tuple[Pin, ...] = ()
    #: Messages frameworks print, with the cause each means (knowledge/messages/).
    messages: tuple[KnownMessage, ...] = ()
    _by_id: dict[str, Signature] = field(default_factory=dict, compare=False, repr=False)
    _hash: list[int] = field(default_factory=list, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id.update({s.id: s for s in self.signatures})

    def __hash__(self) -> int:
        # Indexes are cached per knowledge base (lru_cache): hashing thousands of signatures and
        # known messages on each lookup would cost more than the triage of a short paste.
        if not self._hash:
            parts = (self.signatures, self.files, self.taxonomy, self.overridden, self.pins, self.messages)
            self._hash.append(hash(parts))
        return self._hash[0]

    def __iter__(self) -> Iterator[Signature]:
        return iter(self.signatures)

    def __len__(self) -> int:
        return len(self.signatures)

    def __contains__(self, sig_id: object) -> bool:
        return sig_id in self._by_id

    def get(self, sig_id: str) -> Signature | None:
        """The signature with this id, or None."""
        return self._by_id.get(sig_id)

    def require(self, sig_id: str) -> Signature:
        """The signature with this id, or a usage error that says how to find the known ids."""
        sig = self.get(sig_id)
        if sig is None:
            raise UsageError(f"unknown id {sig_id!r}; `rlfix kb list` shows the known ids")
        return sig

    @property
    def digest(self) -> str:
        """A short hash of the patterns, to key caches such as a compiled scan database."""
        h = hashlib.sha256()
        for sig in self.signatures:
            for p in sig.patterns:
                h.update(f"{sig.id}\0{p.source}\0{p.anchors}\0{p.ignore_case}\n".encode())
        return h.hexdigest()[:16]


def builtin_dir() -> Path:
    """Where the bundled knowledge base lives: inside the installed package, or the checkout."""
    package = Path(__file__).resolve().parent.parent
    here = package
    for candidate in (package / "knowledge", package.parent / "knowledge"):
        if (candidate / TAXONOMY_FILE).is_file():
            return candidate
    try:  # an unusual install layout (zip, custom finder)
        found = Path(str(importlib.resources.files("rlfix.knowledge")))
        if (found / TAXONOMY_FILE).is_file():
            return found
    except (ModuleNotFoundError, TypeError):
        pass
    raise KnowledgeError([Problem(Location(str(here / "knowledge")), "", "the bundled knowledge base is missing")])


def _yaml_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@dataclass
class Parsed:
    """What a set of knowledge-base files holds, and every problem found in them."""

    sigs: list[Signature] = field(default_factory=list)
    taxonomy: list[TaxonomyEntry] = field(default_factory=list)
    pins: list[Pin] = field(default_factory=list)
    messages: list[KnownMessage] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def load_files(paths: Iterable[Path]) -> Parsed:
    """Parse signature files (and the taxonomy and pins files among them) collecting all problems.

    Files that parsed without a problem before, byte for byte, come from the cache (`cache.py`).
    """
    texts: list[tuple[Path, str, bytes]] = []
    problems: list[Problem] = []
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError as exc:
            problems.append(Problem(Location(_display(path)), "", f"cannot read: {exc}"))
            continue
        texts.append((path, _display(path), data))
    key = cache.key_of([(shown, data) for _path, shown, data in texts]) if not problems else None
    found = _from_cache(cache.fetch(key)) if key is not None else None
    if found is not None:
        return found
    out = _parse(texts, problems)
    if key is not None and not out.problems:
        parts = {"sigs": out.sigs, "taxonomy": out.taxonomy, "pins": out.pins, "messages": out.messages}
        cache.keep(key, {**parts, "files": out.files})
    return out


def _from_cache(found: object) -> Parsed | None:
    """A cached parse, if it has the shape one has (else None: parse the files again)."""
    if not isinstance(found, dict):
        return None
    parts = {"sigs": Signature, "taxonomy": TaxonomyEntry, "pins": Pin, "messages": KnownMessage, "files": str}
    for name, kind in parts.items():
        items = found.get(name)
        if not isinstance(items, list) or not all(isinstance(item, kind) for item in items):
            return None
    return Parsed(found["sigs"], found["taxonomy"], found["pins"], found["messages"], found["files"])


def _parse(texts: list[tuple[Path, str, bytes]], problems: list[Problem]) -> Parsed:
    out = Parsed(problems=problems)
    for path, shown, data in texts:
        try:
            # As `Path.read_text` reads: universal newlines.
            text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError as exc:
            out.problems.append(Problem(Location(shown), "", f"cannot read: {exc}"))
            continue
        out.files.append(shown)
        if path.name == TAXONOMY_FILE:
            entries, found = parse_taxonomy(text, shown)
            out.taxonomy.extend(entries)
        elif path.name == PINS_FILE:
            pins, found = parse_pins(text, shown)
            out.pins.extend(pins)
        elif path.parent.name == MESSAGES_DIR:
            messages, found = parse_messages(text, shown)
            out.messages.extend(messages)
        else:
            parsed, found = parse_signature_file(text, shown)
            out.sigs.extend(parsed)
        out.problems.extend(found)
    return out


def load_knowledge(extra: Sequence[str | Path] = (), *, builtin: bool = True) -> KnowledgeBase:
    """Load the bundled knowledge base plus the user's directories (or files) in `extra`.

    A user signature with the id of a bundled one replaces it. Raises KnowledgeError listing
    every problem (file:line: field: message) when any file is invalid.
    """
    key = tuple(str(Path(p).resolve()) for p in extra)
    return _load_cached(key, builtin, _mtimes(key))


def _mtimes(paths: tuple[str, ...]) -> tuple[float, ...]:
    out: list[float] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(f.stat().st_mtime for f in _yaml_files(path))
        elif path.exists():
            out.append(path.stat().st_mtime)
    return tuple(out)


@lru_cache(maxsize=16)
def _load_cached(extra: tuple[str, ...], builtin: bool, _stamp: tuple[float, ...]) -> KnowledgeBase:
    base_paths = _yaml_files(builtin_dir()) if builtin else []
    base = load_files(base_paths)
    sigs, taxonomy, pins, files, problems = base.sigs, base.taxonomy, base.pins, base.files, base.problems
    messages = list(base.messages)
    by_id: dict[str, Signature] = {}
    for sig in sigs:
        if sig.id in by_id:
            problems.append(
                Problem(sig.location, f"{sig.id}.id", f"duplicate id (first defined at {by_id[sig.id].location})")
            )
            continue
        by_id[sig.id] = sig
    overridden: list[str] = []
    for entry in extra:
        path = Path(entry)
        if not path.exists():
            problems.append(Problem(Location(entry), "", "no such knowledge-base file or directory"))
            continue
        user = load_files(_yaml_files(path) if path.is_dir() else [path])
        problems.extend(user.problems)
        files.extend(user.files)
        taxonomy.extend(user.taxonomy)
        pins.extend(user.pins)
        messages.extend(user.messages)
        seen: dict[str, Signature] = {}
        for sig in user.sigs:
            if sig.id in seen:
                problems.append(
                    Problem(sig.location, f"{sig.id}.id", f"duplicate id (first defined at {seen[sig.id].location})")
                )
                continue
            seen[sig.id] = sig
            if sig.id in by_id:
                overridden.append(sig.id)
            by_id[sig.id] = sig
    problems.extend(
        Problem(m.location, "id", f"no signature has the id {m.sig_id!r}") for m in messages if m.sig_id not in by_id
    )
    if problems:
        raise KnowledgeError(problems)
    return KnowledgeBase(
        signatures=tuple(by_id.values()),
        files=tuple(files),
        taxonomy=tuple(taxonomy),
        overridden=tuple(overridden),
        pins=tuple(pins),
        messages=tuple(messages),
    )


def with_signatures(kb: KnowledgeBase, signatures: Iterable[Signature]) -> KnowledgeBase:
    """A copy of `kb` whose signatures are replaced (used by tests and lint)."""
    return replace(kb, signatures=tuple(signatures), _by_id={})
