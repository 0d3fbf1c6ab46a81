"""Load knowledge-base YAML into typed signatures, reporting every problem with file:line."""

from __future__ import annotations

import hashlib
import importlib.resources
import re
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from rlfix.errors import KnowledgeError, Location, Problem
from rlfix.kb.anchors import MIN_ANCHOR, capture_groups, derive_anchors
from rlfix.kb.anchors import parse as parse_regex
from rlfix.model import (
    FRAMEWORKS,
    Examples,
    Flag,
    FlagForm,
    Kind,
    LazyRegex,
    Pattern,
    Remediation,
    Severity,
    Signature,
)

TAXONOMY_FILE = "taxonomy.yaml"
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_SIGNATURE_KEYS = {
    "id",
    "title",
    "kind",
    "severity",
    "confidence",
    "summary",
    "patterns",
    "extract",
    "explains",
    "supersedes",
    "fallback",
    "order_free",
    "remediation",
    "references",
    "examples",
}
_FLAG_FORMS = tuple(f.value for f in FlagForm)
_FLAG_KEYS = {"framework", "versions", "purpose", "cost", "note", *_FLAG_FORMS}
_PURPOSES = ("fix", "mitigate", "diagnose", "workaround")
_DEFAULT_CONFIDENCE = {Kind.ROOT: 0.9, Kind.SYMPTOM: 0.6}


# --- YAML with line marks -------------------------------------------------------------


class _Marked(dict):  # type: ignore[type-arg]
    """A mapping that remembers where each key's value starts in the file."""

    mark: Any = None
    marks: dict[Any, Any]


class _MarkedList(list):  # type: ignore[type-arg]
    mark: Any = None
    marks: list[Any]


class _MarkingLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader (its C parser when built), recording line marks and rejecting duplicate keys."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[Any, str]] = []


def _construct_mapping(loader: _MarkingLoader, node: yaml.MappingNode) -> _Marked:
    loader.flatten_mapping(node)
    out = _Marked()
    out.mark = node.start_mark
    out.marks = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, Hashable):  # `? [a, b]` is valid YAML but no field name
            raise yaml.constructor.ConstructorError(None, None, "a key must be a plain value", key_node.start_mark)
        if key in out:
            loader.duplicates.append((key_node.start_mark, f"duplicate key {key!r}"))
        out[key] = loader.construct_object(value_node, deep=True)
        out.marks[key] = value_node.start_mark
    return out


def _construct_sequence(loader: _MarkingLoader, node: yaml.SequenceNode) -> _MarkedList:
    out = _MarkedList(loader.construct_object(child, deep=True) for child in node.value)
    out.mark = node.start_mark
    out.marks = [child.start_mark for child in node.value]
    return out


_MarkingLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_MarkingLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def reject_aliases(text: str) -> None:
    """Raise a YAMLError at the first anchor: knowledge-base files need none, and aliases can
    expand exponentially (a "billion laughs" file). Only text holding `&` can define one."""
    if "&" not in text:
        return
    for token in yaml.scan(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        if isinstance(token, (yaml.AnchorToken, yaml.AliasToken)):
            raise yaml.MarkedYAMLError(problem="anchors and aliases are not allowed", problem_mark=token.start_mark)


def load_yaml(text: str) -> Any:
    """Parse untrusted YAML safely: no aliases, plain keys only; raises yaml.YAMLError."""
    reject_aliases(text)
    loader = _MarkingLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _loc(file: str, mark: Any) -> Location:
    if mark is None:
        return Location(file)
    return Location(file, mark.line + 1, mark.column + 1)


# --- Validation ---------------------------------------------------------------------


class _Checker:
    """Turns one file's parsed YAML into signatures, collecting problems instead of raising."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []

    def problem(self, mark: Any, field_path: str, message: str) -> None:
        self.problems.append(Problem(_loc(self.file, mark), field_path, message))

    def mark_of(self, node: Any, key: Any) -> Any:
        if isinstance(node, _Marked):
            return node.marks.get(key, node.mark)
        if isinstance(node, _MarkedList) and isinstance(key, int) and key < len(node.marks):
            return node.marks[key]
        return getattr(node, "mark", None)

    def text(self, node: Mapping[str, Any], key: str, path: str, required: bool = True) -> str:
        value = node.get(key)
        if value is None:
            if required:
                self.problem(getattr(node, "mark", None), f"{path}.{key}", "is required")
            return ""
        if not isinstance(value, str) or not value.strip():
            self.problem(self.mark_of(node, key), f"{path}.{key}", "must be a non-empty string")
            return ""
        return value.strip()

    def str_list(self, node: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
        value = node.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.problem(self.mark_of(node, key), f"{path}.{key}", "must be a list of strings")
            return ()
        return tuple(value)

    def choice(self, node: Mapping[str, Any], key: str, path: str, options: Sequence[str]) -> str | None:
        value = node.get(key)
        if value not in options:
            where = self.mark_of(node, key) if key in node else getattr(node, "mark", None)
            self.problem(where, f"{path}.{key}", f"must be one of {', '.join(options)} (got {value!r})")
            return None
        return str(value)

    def signature(self, node: Any, index: int) -> Signature | None:
        path = f"signatures[{index}]"
        if not isinstance(node, dict):
            self.problem(getattr(node, "mark", None), path, "must be a mapping")
            return None
        before = len(self.problems)
        sig_id = self.text(node, "id", path)
        if sig_id:
            path = sig_id
            if not _ID.match(sig_id):
                self.problem(self.mark_of(node, "id"), f"{path}.id", "must be kebab-case (a-z, 0-9, -)")
        for key in node:
            if key not in _SIGNATURE_KEYS:
                self.problem(self.mark_of(node, key), f"{path}.{key}", "unknown field")
        title = self.text(node, "title", path)
        kind_name = self.choice(node, "kind", path, [k.value for k in Kind])
        severity_name = self.choice(node, "severity", path, [s.value for s in Severity])
        summary = self.text(node, "summary", path)
        kind = Kind(kind_name) if kind_name else Kind.ROOT
        confidence = node.get("confidence", _DEFAULT_CONFIDENCE[kind])
        if not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
            self.problem(self.mark_of(node, "confidence"), f"{path}.confidence", "must be a number in [0, 1]")
            confidence = _DEFAULT_CONFIDENCE[kind]
        patterns = self.patterns(node, path)
        extract = self.extract(node, path)
        fallback = node.get("fallback", False)
        if not isinstance(fallback, bool):
            self.problem(self.mark_of(node, "fallback"), f"{path}.fallback", "must be true or false")
            fallback = False
        order_free = node.get("order_free", False)
        if not isinstance(order_free, bool):
            self.problem(self.mark_of(node, "order_free"), f"{path}.order_free", "must be true or false")
            order_free = False
        remediation = self.remediation(node, path, kind)
        examples = self.examples(node, path)
        references = self.str_list(node, "references", path)
        if not references:
            self.problem(getattr(node, "mark", None), f"{path}.references", "needs at least one source")
        if len(self.problems) > before:
            return None
        return Signature(
            id=sig_id,
            title=title,
            kind=kind,
            severity=Severity(severity_name),
            summary=" ".join(summary.split()),
            patterns=patterns,
            confidence=float(confidence),
            extract=extract,
            explains=self.str_list(node, "explains", path),
            supersedes=self.str_list(node, "supersedes", path),
            fallback=fallback,
            order_free=order_free,
            remediation=remediation,
            references=references,
            examples=examples,
            location=_loc(self.file, getattr(node, "mark", None)),
        )

    def compile(self, source: str, ignore_case: bool, mark: Any, path: str, literal: bool = False) -> LazyRegex | None:
        """Check the syntax now (the stdlib parser is quick), compile with `regex` on first use."""
        if not literal and parse_regex(source)[0] is None:
            try:  # syntax only the `regex` module knows
                import regex

                regex.compile(source)
            except regex.error as exc:
                self.problem(mark, path, f"invalid regex: {exc}")
                return None
        return LazyRegex(source, ignore_case)

    def patterns(self, node: Mapping[str, Any], path: str) -> tuple[Pattern, ...]:
        items = node.get("patterns")
        if not isinstance(items, list) or not items:
            self.problem(self.mark_of(node, "patterns"), f"{path}.patterns", "needs at least one pattern")
            return ()
        out: list[Pattern] = []
        for i, item in enumerate(items):
            ppath = f"{path}.patterns[{i}]"
            mark = self.mark_of(items, i)
            if not isinstance(item, dict) or ("text" in item) == ("regex" in item):
                self.problem(mark, ppath, "must have exactly one of `text` or `regex`")
                continue
            unknown = set(item) - {"text", "regex", "anchor", "ignore_case"}
            if unknown:
                self.problem(mark, ppath, f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
            literal = "text" in item
            source = item.get("text") if literal else item.get("regex")
            if not isinstance(source, str) or not source:
                self.problem(mark, ppath, "pattern must be a non-empty string")
                continue
            ignore_case = bool(item.get("ignore_case", False))
            compiled = self.compile(re.escape(source) if literal else source, ignore_case, mark, ppath, literal)
            if compiled is None:
                continue
            anchor = item.get("anchor")
            if anchor is not None:
                anchors: tuple[str, ...]
                if isinstance(anchor, str):
                    anchors = (anchor,)
                elif isinstance(anchor, list) and all(isinstance(a, str) for a in anchor):
                    anchors = tuple(anchor)
                else:
                    self.problem(mark, f"{ppath}.anchor", "must be a string or a list of strings")
                    continue
                if any(len(a) < MIN_ANCHOR for a in anchors):
                    self.problem(mark, f"{ppath}.anchor", f"needs at least {MIN_ANCHOR} characters")
                    continue
                caseless = ignore_case
            elif literal:
                anchors, caseless = (source,), ignore_case
                if len(source) < MIN_ANCHOR:
                    self.problem(mark, ppath, f"literal needs at least {MIN_ANCHOR} characters")
                    continue
            else:
                anchors, caseless = derive_anchors(source)
                caseless = caseless or ignore_case
                if not anchors:
                    self.problem(
                        mark,
                        ppath,
                        f"no literal of {MIN_ANCHOR}+ characters can be derived; add `anchor:`",
                    )
                    continue
            if caseless:
                anchors = tuple(a.lower() for a in anchors)
            out.append(
                Pattern(
                    source=source,
                    literal=literal,
                    anchors=anchors,
                    ignore_case=caseless,
                    compiled=compiled,
                    location=_loc(self.file, mark),
                )
            )
        return tuple(out)

    def extract(self, node: Mapping[str, Any], path: str) -> tuple[tuple[str, LazyRegex], ...]:
        items = node.get("extract")
        if items is None:
            return ()
        if not isinstance(items, dict):
            self.problem(self.mark_of(node, "extract"), f"{path}.extract", "must map names to regexes")
            return ()
        out = []
        for name, source in items.items():
            mark = self.mark_of(items, name)
            if not isinstance(source, str):
                self.problem(mark, f"{path}.extract.{name}", "must be a regex string")
                continue
            compiled = self.compile(source, False, mark, f"{path}.extract.{name}")
            if compiled is None:
                continue
            groups = capture_groups(source)
            if groups is None:
                groups = compiled.groups
            if groups < 1:
                self.problem(mark, f"{path}.extract.{name}", "needs a capturing group")
                continue
            out.append((str(name), compiled))
        return tuple(out)

    def remediation(self, node: Mapping[str, Any], path: str, kind: Kind) -> Remediation:
        rem = node.get("remediation")
        if rem is None:
            if kind is Kind.ROOT:
                self.problem(getattr(node, "mark", None), f"{path}.remediation", "is required for a root")
            return Remediation()
        if not isinstance(rem, dict):
            self.problem(self.mark_of(node, "remediation"), f"{path}.remediation", "must be a mapping")
            return Remediation()
        steps = self.str_list(rem, "steps", f"{path}.remediation")
        if kind is Kind.ROOT and not steps:
            self.problem(self.mark_of(node, "remediation"), f"{path}.remediation.steps", "needs at least one step")
        flags: list[Flag] = []
        raw_flags = rem.get("flags") or []
        if not isinstance(raw_flags, list):
            self.problem(self.mark_of(rem, "flags"), f"{path}.remediation.flags", "must be a list")
            raw_flags = []
        for i, item in enumerate(raw_flags):
            fpath = f"{path}.remediation.flags[{i}]"
            mark = self.mark_of(raw_flags, i)
            if not isinstance(item, dict):
                self.problem(mark, fpath, "must be a mapping")
                continue
            unknown = set(item) - _FLAG_KEYS
            if unknown:
                self.problem(mark, fpath, f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
            forms = [f for f in _FLAG_FORMS if f in item]
            if len(forms) != 1:
                self.problem(mark, fpath, f"needs exactly one of {', '.join(_FLAG_FORMS)}")
                continue
            framework = item.get("framework")
            if framework not in FRAMEWORKS:
                self.problem(mark, f"{fpath}.framework", f"must be one of {', '.join(FRAMEWORKS)}")
                continue
            purpose = item.get("purpose", "mitigate")
            if purpose not in _PURPOSES:
                self.problem(mark, f"{fpath}.purpose", f"must be one of {', '.join(_PURPOSES)}")
                continue
            versions = item.get("versions")
            if versions is not None and not _valid_versions(str(versions)):
                self.problem(mark, f"{fpath}.versions", f"not a version range: {versions!r}")
                continue
            value = item[forms[0]]
            if not isinstance(value, (str, int, float, bool)) or str(value).strip() == "":
                self.problem(mark, f"{fpath}.{forms[0]}", "must be a non-empty string")
                continue
            flags.append(
                Flag(
                    framework=str(framework),
                    form=FlagForm(forms[0]),
                    value=str(value).strip(),
                    purpose=str(purpose),
                    versions=str(versions) if versions is not None else None,
                    cost=_opt_str(item.get("cost")),
                    note=_opt_str(item.get("note")),
                )
            )
        return Remediation(steps=steps, flags=tuple(flags))

    def examples(self, node: Mapping[str, Any], path: str) -> Examples:
        ex = node.get("examples")
        if not isinstance(ex, dict):
            self.problem(self.mark_of(node, "examples"), f"{path}.examples", "needs `match:` lines")
            return Examples()
        match = self.str_list(ex, "match", f"{path}.examples")
        if not match:
            self.problem(self.mark_of(node, "examples"), f"{path}.examples.match", "needs at least one line")
        return Examples(match=match, no_match=self.str_list(ex, "no_match", f"{path}.examples"))


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


_VERSION_CLAUSE = re.compile(r"^\s*(==|!=|>=|<=|>|<|~=)?\s*v?\d+(?:\.\d+)*(?:\.\*)?\s*$")


def _valid_versions(spec: str) -> bool:
    return all(_VERSION_CLAUSE.match(part) for part in spec.split(","))


# --- Knowledge base -----------------------------------------------------------------


@dataclass(frozen=True)
class TaxonomyEntry:
    """An id the project promises to name, with its kind."""

    id: str
    kind: Kind
    what: str


@dataclass(frozen=True)
class KnowledgeBase:
    """All signatures in force, in load order, with the files they came from."""

    signatures: tuple[Signature, ...]
    files: tuple[str, ...] = ()
    taxonomy: tuple[TaxonomyEntry, ...] = ()
    overridden: tuple[str, ...] = ()
    _by_id: dict[str, Signature] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id.update({s.id: s for s in self.signatures})

    def __iter__(self) -> Iterator[Signature]:
        return iter(self.signatures)

    def __len__(self) -> int:
        return len(self.signatures)

    def __contains__(self, sig_id: object) -> bool:
        return sig_id in self._by_id

    def get(self, sig_id: str) -> Signature | None:
        """The signature with this id, or None."""
        return self._by_id.get(sig_id)

    @property
    def digest(self) -> str:
        """A short hash of the patterns, to key caches such as a compiled scan database."""
        h = hashlib.sha256()
        for sig in self.signatures:
            for p in sig.patterns:
                h.update(f"{sig.id}\0{p.source}\0{p.anchors}\0{p.ignore_case}\n".encode())
        return h.hexdigest()[:16]


def parse_signature_file(text: str, file: str) -> tuple[list[Signature], list[Problem]]:
    """Parse one YAML document of signatures; never raises for content problems."""
    checker = _Checker(file)
    loader = _MarkingLoader(text)
    try:
        reject_aliases(text)
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        return [], [_yaml_problem(exc, file)]
    finally:
        loader.dispose()
    for mark, message in loader.duplicates:
        checker.problem(mark, "", message)
    if not isinstance(data, dict) or not isinstance(data.get("signatures"), list):
        checker.problem(getattr(data, "mark", None), "signatures", "the file needs a top-level `signatures:` list")
        return [], checker.problems
    unknown = set(data) - {"signatures"}
    for key in sorted(unknown):
        checker.problem(checker.mark_of(data, key), str(key), "unknown top-level field")
    items = data["signatures"]
    sigs = [s for i, node in enumerate(items) if (s := checker.signature(node, i)) is not None]
    return sigs, checker.problems


def _yaml_problem(exc: yaml.YAMLError, file: str) -> Problem:
    mark = getattr(exc, "problem_mark", None)
    reason = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unreadable"])[0]
    return Problem(_loc(file, mark), "", f"invalid YAML: {reason}")


def parse_taxonomy(text: str, file: str) -> tuple[list[TaxonomyEntry], list[Problem]]:
    """Parse the taxonomy of ids rlfix promises to name; never raises for content problems."""
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        return [], [_yaml_problem(exc, file)]
    items = data.get("ids", []) if isinstance(data, dict) else None
    if not isinstance(items, list):
        return [], [Problem(_loc(file, getattr(data, "mark", None)), "ids", "the file needs a top-level `ids:` list")]
    entries, problems = [], []
    kinds = {k.value for k in Kind}
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or item.get("kind") not in kinds:
            where = _loc(file, getattr(item, "mark", None))
            problems.append(Problem(where, f"ids[{i}]", f"needs a string `id` and a `kind` of {sorted(kinds)}"))
            continue
        entries.append(TaxonomyEntry(item["id"], Kind(item["kind"]), str(item.get("what", ""))))
    return entries, problems


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


def load_files(paths: Iterable[Path]) -> tuple[list[Signature], list[TaxonomyEntry], list[str], list[Problem]]:
    """Parse signature files (and a taxonomy file among them) collecting all problems."""
    sigs: list[Signature] = []
    taxonomy: list[TaxonomyEntry] = []
    files: list[str] = []
    problems: list[Problem] = []
    for path in paths:
        shown = _display(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(Location(shown), "", f"cannot read: {exc}"))
            continue
        files.append(shown)
        if path.name == TAXONOMY_FILE:
            entries, found = parse_taxonomy(text, shown)
            taxonomy.extend(entries)
        else:
            parsed, found = parse_signature_file(text, shown)
            sigs.extend(parsed)
        problems.extend(found)
    return sigs, taxonomy, files, problems


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
    sigs, taxonomy, files, problems = load_files(base_paths)
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
        user_sigs, user_tax, user_files, user_problems = load_files(_yaml_files(path) if path.is_dir() else [path])
        problems.extend(user_problems)
        files.extend(user_files)
        taxonomy.extend(user_tax)
        seen: dict[str, Signature] = {}
        for sig in user_sigs:
            if sig.id in seen:
                problems.append(
                    Problem(sig.location, f"{sig.id}.id", f"duplicate id (first defined at {seen[sig.id].location})")
                )
                continue
            seen[sig.id] = sig
            if sig.id in by_id:
                overridden.append(sig.id)
            by_id[sig.id] = sig
    if problems:
        raise KnowledgeError(problems)
    return KnowledgeBase(
        signatures=tuple(by_id.values()),
        files=tuple(files),
        taxonomy=tuple(taxonomy),
        overridden=tuple(overridden),
    )


def with_signatures(kb: KnowledgeBase, signatures: Iterable[Signature]) -> KnowledgeBase:
    """A copy of `kb` whose signatures are replaced (used by tests and lint)."""
    return replace(kb, signatures=tuple(signatures), _by_id={})
