"""Knowledge-base YAML -> typed signatures: one small parse function per node type, every problem
collected with its location instead of stopping at the first."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from rlfix.errors import Problem
from rlfix.kb.anchors import MIN_ANCHOR, capture_groups, derive_anchors
from rlfix.kb.anchors import parse as parse_regex
from rlfix.kb.expansion import MAX_EXPANSION, expansion
from rlfix.kb.marked_yaml import Marked, MarkedList, MarkingLoader, load_yaml, location, reject_aliases, yaml_problem
from rlfix.kb.versions import valid_range
from rlfix.model import (
    FRAMEWORKS,
    Action,
    Concept,
    Decision,
    Examples,
    Flag,
    FlagForm,
    Kind,
    LazyRegex,
    Localized,
    LocalizedFlag,
    Owner,
    Pattern,
    Remediation,
    Severity,
    Signature,
)

_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_SIGNATURE_KEYS = {
    "id",
    "title",
    "kind",
    "severity",
    "confidence",
    "action",
    "owner",
    "reason",
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
    "zh",
    "concepts",
}
_CONCEPT_KEYS = {"name", "cues", "none_of", "confidence", "examples"}
#: Characters a concept term needs: a one-letter term would be in every line.
MIN_TERM = 2
_LOCALIZED_KEYS = {"title", "summary", "steps", "reason", "flags"}
_FLAG_FORMS = tuple(f.value for f in FlagForm)
_FLAG_KEYS = {"framework", "versions", "purpose", "cost", "note", *_FLAG_FORMS}
_PURPOSES = ("fix", "mitigate", "diagnose", "workaround")
_DEFAULT_CONFIDENCE = {Kind.ROOT: 0.9, Kind.SYMPTOM: 0.6}


@dataclass(frozen=True)
class TaxonomyEntry:
    """An id the project promises to name, with its kind."""

    id: str
    kind: Kind
    what: str


class Checker:
    """Turns one file's parsed YAML into signatures, collecting problems instead of raising."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []

    def problem(self, mark: Any, field_path: str, message: str) -> None:
        self.problems.append(Problem(location(self.file, mark), field_path, message))

    def mark_of(self, node: Any, key: Any) -> Any:
        if isinstance(node, Marked):
            return node.marks.get(key, node.mark)
        if isinstance(node, MarkedList) and isinstance(key, int) and key < len(node.marks):
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
        sig_id, path = self.identity(node, path)
        title = self.text(node, "title", path)
        kind_name = self.choice(node, "kind", path, [k.value for k in Kind])
        severity_name = self.choice(node, "severity", path, [s.value for s in Severity])
        summary = self.text(node, "summary", path)
        kind = Kind(kind_name) if kind_name else Kind.ROOT
        confidence = self.confidence(node, path, kind)
        decision = self.decision(node, path)
        patterns = self.patterns(node, path)
        extract = self.extract(node, path)
        fallback = self.boolean(node, "fallback", path)
        order_free = self.boolean(node, "order_free", path)
        remediation = self.remediation(node, path, kind)
        examples = self.examples(node, path)
        references = self.references(node, path)
        zh = self.localized(node, path)
        concepts = self.concepts(node, path, confidence, fallback)
        if len(self.problems) > before or decision is None:
            return None
        return Signature(
            id=sig_id,
            title=title,
            kind=kind,
            severity=Severity(severity_name),
            summary=" ".join(summary.split()),
            patterns=patterns,
            confidence=confidence,
            decision=decision,
            extract=extract,
            explains=self.str_list(node, "explains", path),
            supersedes=self.str_list(node, "supersedes", path),
            fallback=fallback,
            order_free=order_free,
            remediation=remediation,
            references=references,
            examples=examples,
            location=location(self.file, getattr(node, "mark", None)),
            zh=zh,
            concepts=concepts,
        )

    def identity(self, node: Mapping[str, Any], path: str) -> tuple[str, str]:
        """The signature's id and the path its problems are named by; unknown fields reported."""
        sig_id = self.text(node, "id", path)
        if sig_id:
            path = sig_id
            if not _ID.match(sig_id):
                self.problem(self.mark_of(node, "id"), f"{path}.id", "must be kebab-case (a-z, 0-9, -)")
        for key in node:
            if key not in _SIGNATURE_KEYS:
                self.problem(self.mark_of(node, key), f"{path}.{key}", "unknown field")
        return sig_id, path

    def decision(self, node: Mapping[str, Any], path: str) -> Decision | None:
        """`action`, `owner` and `reason`: all three required, no default (a retry must be a decision)."""
        found: list[str | None] = []
        for key, enum in (("action", Action), ("owner", Owner)):
            options = [member.value for member in enum]
            if key not in node:
                self.problem(getattr(node, "mark", None), f"{path}.{key}", f"is required: one of {', '.join(options)}")
                found.append(None)
            else:
                found.append(self.choice(node, key, path, options))
        reason = self.text(node, "reason", path)
        if "\n" in reason:
            self.problem(self.mark_of(node, "reason"), f"{path}.reason", "must be one line")
        action, owner = found
        if action is None or owner is None or not reason or "\n" in reason:
            return None
        return Decision(Action(action), Owner(owner), reason)

    def references(self, node: Mapping[str, Any], path: str) -> tuple[str, ...]:
        """Where the signature's knowledge comes from: at least one source."""
        references = self.str_list(node, "references", path)
        if not references:
            self.problem(getattr(node, "mark", None), f"{path}.references", "needs at least one source")
        return references

    def localized(self, node: Mapping[str, Any], path: str) -> Localized | None:
        """The `zh:` node: title, summary, steps and flag words keyed by the flag's position."""
        zh = node.get("zh")
        if zh is None:
            return None
        zpath = f"{path}.zh"
        if not isinstance(zh, dict):
            self.problem(self.mark_of(node, "zh"), zpath, "must be a mapping")
            return None
        for key in zh:
            if key not in _LOCALIZED_KEYS:
                self.problem(self.mark_of(zh, key), f"{zpath}.{key}", "unknown field")
        return Localized(
            title=self.text(zh, "title", zpath),
            summary=" ".join(self.text(zh, "summary", zpath).split()),
            steps=self.str_list(zh, "steps", zpath),
            reason=self.text(zh, "reason", zpath, required=False) or None,
            flags=self.localized_flags(zh, zpath),
        )

    def localized_flags(self, zh: Mapping[str, Any], zpath: str) -> tuple[tuple[int, LocalizedFlag], ...]:
        """`flags: {0: {cost: ..., note: ...}}`: words for the English flags, by position."""
        raw = zh.get("flags")
        if raw is None:
            return ()
        if not isinstance(raw, dict):
            self.problem(self.mark_of(zh, "flags"), f"{zpath}.flags", "must map flag positions to {cost, note}")
            return ()
        out = []
        for key, item in raw.items():
            mark, fpath = self.mark_of(raw, key), f"{zpath}.flags.{key}"
            if isinstance(key, bool) or not isinstance(key, int) or key < 0:
                self.problem(mark, fpath, "keys are flag positions: 0, 1, 2, ...")
            elif (
                not isinstance(item, dict)
                or not item
                or set(item) - {"cost", "note"}
                or not all(isinstance(v, str) and v.strip() for v in item.values())
            ):
                self.problem(mark, fpath, "must be {cost: ..., note: ...} with non-empty strings")
            else:
                out.append((key, LocalizedFlag(cost=item.get("cost"), note=item.get("note"))))
        return tuple(sorted(out, key=lambda pair: pair[0]))

    def confidence(self, node: Mapping[str, Any], path: str, kind: Kind) -> float:
        value = node.get("confidence", _DEFAULT_CONFIDENCE[kind])
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            self.problem(self.mark_of(node, "confidence"), f"{path}.confidence", "must be a number in [0, 1]")
            return _DEFAULT_CONFIDENCE[kind]
        return float(value)

    def boolean(self, node: Mapping[str, Any], key: str, path: str) -> bool:
        value = node.get(key, False)
        if not isinstance(value, bool):
            self.problem(self.mark_of(node, key), f"{path}.{key}", "must be true or false")
            return False
        return value

    def compile(self, source: str, ignore_case: bool, mark: Any, path: str, literal: bool = False) -> LazyRegex | None:
        """Check the syntax now (the stdlib parser is quick), compile with `regex` on first use."""
        copies = 0 if literal else expansion(source)
        if copies > MAX_EXPANSION:
            self.problem(
                mark,
                path,
                f"nested counted repeats make {copies:,} copies of one atom (limit {MAX_EXPANSION:,}): "
                "compiling it would take gigabytes",
            )
            return None
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
        found = (self.pattern(item, f"{path}.patterns[{i}]", self.mark_of(items, i)) for i, item in enumerate(items))
        return tuple(p for p in found if p is not None)

    def pattern(self, item: Any, ppath: str, mark: Any) -> Pattern | None:
        if not isinstance(item, dict) or ("text" in item) == ("regex" in item):
            self.problem(mark, ppath, "must have exactly one of `text` or `regex`")
            return None
        unknown = set(item) - {"text", "regex", "anchor", "ignore_case"}
        if unknown:
            self.problem(mark, ppath, f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
        literal = "text" in item
        source = item.get("text") if literal else item.get("regex")
        if not isinstance(source, str) or not source:
            self.problem(mark, ppath, "pattern must be a non-empty string")
            return None
        ignore_case = bool(item.get("ignore_case", False))
        compiled = self.compile(re.escape(source) if literal else source, ignore_case, mark, ppath, literal)
        found = self.anchors(item.get("anchor"), source, literal, ignore_case, mark, ppath)
        if compiled is None or found is None:
            return None
        anchors, caseless = found
        return Pattern(
            source=source,
            literal=literal,
            anchors=tuple(a.lower() for a in anchors) if caseless else anchors,
            ignore_case=caseless,
            compiled=compiled,
            location=location(self.file, mark),
        )

    def anchors(
        self, anchor: Any, source: str, literal: bool, ignore_case: bool, mark: Any, ppath: str
    ) -> tuple[tuple[str, ...], bool] | None:
        """The literals the prefilter looks for: given, the text itself, or derived from the regex."""
        if anchor is not None:
            if isinstance(anchor, str):
                given: tuple[str, ...] = (anchor,)
            elif isinstance(anchor, list) and all(isinstance(a, str) for a in anchor):
                given = tuple(anchor)
            else:
                self.problem(mark, f"{ppath}.anchor", "must be a string or a list of strings")
                return None
            if any(len(a) < MIN_ANCHOR for a in given):
                self.problem(mark, f"{ppath}.anchor", f"needs at least {MIN_ANCHOR} characters")
                return None
            return given, ignore_case
        if literal:
            if len(source) < MIN_ANCHOR:
                self.problem(mark, ppath, f"literal needs at least {MIN_ANCHOR} characters")
                return None
            return (source,), ignore_case
        derived, caseless = derive_anchors(source)
        if not derived:
            self.problem(mark, ppath, f"no literal of {MIN_ANCHOR}+ characters can be derived; add `anchor:`")
            return None
        return derived, caseless or ignore_case

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
        raw_flags = rem.get("flags") or []
        if not isinstance(raw_flags, list):
            self.problem(self.mark_of(rem, "flags"), f"{path}.remediation.flags", "must be a list")
            raw_flags = []
        found = (
            self.flag(item, f"{path}.remediation.flags[{i}]", self.mark_of(raw_flags, i))
            for i, item in enumerate(raw_flags)
        )
        return Remediation(steps=steps, flags=tuple(f for f in found if f is not None))

    def flag(self, item: Any, fpath: str, mark: Any) -> Flag | None:
        if not isinstance(item, dict):
            self.problem(mark, fpath, "must be a mapping")
            return None
        unknown = set(item) - _FLAG_KEYS
        if unknown:
            self.problem(mark, fpath, f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
        forms = [f for f in _FLAG_FORMS if f in item]
        framework, purpose, versions = item.get("framework"), item.get("purpose", "mitigate"), item.get("versions")
        value = item[forms[0]] if len(forms) == 1 else None
        if len(forms) != 1:
            self.problem(mark, fpath, f"needs exactly one of {', '.join(_FLAG_FORMS)}")
        elif framework not in FRAMEWORKS:
            self.problem(mark, f"{fpath}.framework", f"must be one of {', '.join(FRAMEWORKS)}")
        elif purpose not in _PURPOSES:
            self.problem(mark, f"{fpath}.purpose", f"must be one of {', '.join(_PURPOSES)}")
        elif versions is not None and not valid_range(str(versions)):
            self.problem(mark, f"{fpath}.versions", f"not a version range: {versions!r}")
        elif not isinstance(value, (str, int, float, bool)) or str(value).strip() == "":
            self.problem(mark, f"{fpath}.{forms[0]}", "must be a non-empty string")
        else:
            return Flag(
                framework=str(framework),
                form=FlagForm(forms[0]),
                value=str(value).strip(),
                purpose=str(purpose),
                versions=str(versions) if versions is not None else None,
                cost=_opt_str(item.get("cost")),
                note=_opt_str(item.get("note")),
            )
        return None

    def examples(self, node: Mapping[str, Any], path: str) -> Examples:
        ex = node.get("examples")
        if not isinstance(ex, dict):
            self.problem(self.mark_of(node, "examples"), f"{path}.examples", "needs `match:` lines")
            return Examples()
        match = self.str_list(ex, "match", f"{path}.examples")
        if not match:
            self.problem(self.mark_of(node, "examples"), f"{path}.examples.match", "needs at least one line")
        return Examples(match=match, no_match=self.str_list(ex, "no_match", f"{path}.examples"))

    def concepts(self, node: Mapping[str, Any], path: str, exact: float, fallback: bool) -> tuple[Concept, ...]:
        """`concepts:`: the cause's vocabulary, each concept less sure than the exact patterns (`exact`)."""
        items = node.get("concepts")
        if items is None:
            return ()
        if not isinstance(items, list) or not items or fallback:
            why = "the fallback has no concepts" if fallback else "must be a non-empty list of concepts"
            self.problem(self.mark_of(node, "concepts"), f"{path}.concepts", why)
            return ()
        found = [
            self.concept(item, f"{path}.concepts[{i}]", self.mark_of(items, i), exact) for i, item in enumerate(items)
        ]
        names = [c.name for c in found if c is not None]
        for i, concept in enumerate(found):
            if concept is not None and names.count(concept.name) > 1:
                self.problem(self.mark_of(items, i), f"{path}.concepts[{i}].name", f"{concept.name!r} is used twice")
        return tuple(c for c in found if c is not None)

    def concept(self, item: Any, cpath: str, mark: Any, exact: float) -> Concept | None:
        if not isinstance(item, dict):
            self.problem(mark, cpath, "must be a mapping of name, cues, confidence, examples (and none_of)")
            return None
        before = len(self.problems)
        for key in item:
            if key not in _CONCEPT_KEYS:
                self.problem(self.mark_of(item, key), f"{cpath}.{key}", "unknown field")
        name = self.text(item, "name", cpath)
        if "\n" in name:
            self.problem(self.mark_of(item, "name"), f"{cpath}.name", "must be one line")
        cues = self.cues(item, cpath)
        none_of = self.terms(item.get("none_of", []), self.mark_of(item, "none_of"), f"{cpath}.none_of", empty=True)
        confidence = self.concept_confidence(item, cpath, mark, exact)
        examples = self.concept_examples(item, cpath)
        if len(self.problems) > before:
            return None
        return Concept(name, cues, confidence, none_of, examples, location(self.file, mark))

    def concept_confidence(self, item: Mapping[str, Any], cpath: str, mark: Any, exact: float) -> float:
        """A concept is less sure than its signature's exact patterns (`exact`)."""
        value = item.get("confidence")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < exact:
            self.problem(
                self.mark_of(item, "confidence") if "confidence" in item else mark,
                f"{cpath}.confidence",
                f"must be a number above 0 and below the signature's own confidence ({exact:g})",
            )
            return 0.0
        return float(value)

    def cues(self, item: Mapping[str, Any], cpath: str) -> tuple[tuple[str, ...], ...]:
        """`cues:`: a list of term lists; a line must hold a term of every list."""
        raw = item.get("cues")
        mark = self.mark_of(item, "cues") if "cues" in item else getattr(item, "mark", None)
        if not isinstance(raw, list) or not raw:
            self.problem(
                mark, f"{cpath}.cues", "must be a non-empty list of term lists ([[out of memory, OOM], [GPU]])"
            )
            return ()
        return tuple(self.terms(terms, self.mark_of(raw, i), f"{cpath}.cues[{i}]") for i, terms in enumerate(raw))

    def terms(self, raw: Any, mark: Any, tpath: str, empty: bool = False) -> tuple[str, ...]:
        """A list of literal terms, each of `MIN_TERM`+ characters on one line."""
        if not isinstance(raw, list) or (not raw and not empty):
            self.problem(mark, tpath, "must be a non-empty list of literal terms")
            return ()
        for i, term in enumerate(raw):
            if not isinstance(term, str) or len(term.strip()) < MIN_TERM or "\n" in term:
                where = self.mark_of(raw, i)
                self.problem(where, f"{tpath}[{i}]", f"must be a literal of {MIN_TERM}+ characters on one line")
                return ()
        return tuple(t.strip() for t in raw)

    def concept_examples(self, item: Mapping[str, Any], cpath: str) -> Examples:
        """A concept is a rule about words: at least one line it names and one near miss it must not."""
        ex = item.get("examples")
        if not isinstance(ex, dict):
            where = self.mark_of(item, "examples") if "examples" in item else getattr(item, "mark", None)
            self.problem(where, f"{cpath}.examples", "needs `match:` and `no_match:` lines")
            return Examples()
        match = self.str_list(ex, "match", f"{cpath}.examples")
        no_match = self.str_list(ex, "no_match", f"{cpath}.examples")
        for key, lines in (("match", match), ("no_match", no_match)):
            if not lines:
                where = self.mark_of(ex, key) if key in ex else getattr(ex, "mark", None)
                self.problem(where, f"{cpath}.examples.{key}", "needs at least one line")
        return Examples(match=match, no_match=no_match)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def parse_signature_file(text: str, file: str) -> tuple[list[Signature], list[Problem]]:
    """Parse one YAML document of signatures; never raises for content problems."""
    checker = Checker(file)
    loader = MarkingLoader(text)
    try:
        reject_aliases(text)
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        return [], [yaml_problem(exc, file)]
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


def parse_taxonomy(text: str, file: str) -> tuple[list[TaxonomyEntry], list[Problem]]:
    """Parse the taxonomy of ids rlfix promises to name; never raises for content problems."""
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        return [], [yaml_problem(exc, file)]
    items = data.get("ids", []) if isinstance(data, dict) else None
    if not isinstance(items, list):
        where = location(file, getattr(data, "mark", None))
        return [], [Problem(where, "ids", "the file needs a top-level `ids:` list")]
    entries, problems = [], []
    kinds = {k.value for k in Kind}
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or item.get("kind") not in kinds:
            where = location(file, getattr(item, "mark", None))
            problems.append(Problem(where, f"ids[{i}]", f"needs a string `id` and a `kind` of {sorted(kinds)}"))
            continue
        entries.append(TaxonomyEntry(item["id"], Kind(item["kind"]), str(item.get("what", ""))))
    return entries, problems


@dataclass(frozen=True)
class Pin:
    """What one release of a framework asks of the packages it calls (`{"vllm": ">=0.10.0"}`)."""

    framework: str
    version: str
    # The knowledge base is hashed (it keys caches): a mapping takes no part in that.
    requires: Mapping[str, str] = field(hash=False, compare=False)
    source: str = ""


def parse_pins(text: str, file: str) -> tuple[list[Pin], list[Problem]]:
    """Parse knowledge/pins.yaml; never raises for content problems."""
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        return [], [yaml_problem(exc, file)]
    items = data.get("pins") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return [], [
            Problem(location(file, getattr(data, "mark", None)), "pins", "the file needs a top-level `pins:` list")
        ]
    pins, problems = [], []
    for i, item in enumerate(items):
        req = item.get("requires") if isinstance(item, dict) else None
        fields = [item.get(k) for k in ("framework", "version", "source")] if isinstance(item, dict) else [None]
        if not all(isinstance(f, str) and f for f in fields) or not isinstance(req, dict):
            where = location(file, getattr(item, "mark", None))
            problems.append(
                Problem(where, f"pins[{i}]", "needs strings framework, version, source and a `requires` map")
            )
            continue
        if not all(isinstance(v, str) and valid_range(v) for v in req.values()):
            problems.append(
                Problem(location(file, getattr(item, "mark", None)), f"pins[{i}].requires", "not version ranges")
            )
            continue
        pins.append(Pin(item["framework"], item["version"], {str(k): v for k, v in req.items()}, item["source"]))
    return pins, problems
