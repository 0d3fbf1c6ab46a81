"""Named checks over a loaded knowledge base; each returns typed issues with a location."""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from rlfix.errors import Location
from rlfix.kb.load import KnowledgeBase
from rlfix.match.concepts import concept_index, holds
from rlfix.match.matcher import Matcher
from rlfix.match.normalize import normalize
from rlfix.model import Concept, Kind, LazyRegex, Signature
from rlfix.observe.shapes import error_shape

#: Seconds a pattern may spend on one adversarial string before it counts as backtracking.
BACKTRACK_BUDGET = 0.25
#: Length of the adversarial strings.
ADVERSARIAL_LENGTH = 20_000


@dataclass(frozen=True)
class LintIssue:
    """One finding: which check, how bad, where, what."""

    check: str
    severity: str  # "error" | "warning"
    location: Location
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.severity}: [{self.check}] {self.message}"


Check = Callable[[KnowledgeBase, Matcher], Iterable[LintIssue]]


def check_taxonomy(kb: KnowledgeBase, _m: Matcher) -> Iterable[LintIssue]:
    """Every taxonomy id has a signature of the same kind."""
    for entry in kb.taxonomy:
        sig = kb.get(entry.id)
        if sig is None:
            yield LintIssue("taxonomy", "error", Location("knowledge/taxonomy.yaml"), f"no signature for {entry.id}")
        elif sig.kind is not entry.kind:
            yield LintIssue(
                "taxonomy",
                "error",
                sig.location,
                f"{sig.id} is a {sig.kind.value}; the taxonomy says {entry.kind.value}",
            )


def check_relations(kb: KnowledgeBase, _m: Matcher) -> Iterable[LintIssue]:
    """`explains` and `supersedes` name existing signatures; only roots explain; one fallback."""
    fallbacks = [s for s in kb if s.fallback]
    if len(fallbacks) > 1:
        yield LintIssue("relations", "error", fallbacks[1].location, "only one signature may be the fallback")
    for sig in kb:
        for target in sig.explains:
            other = kb.get(target)
            if other is None:
                yield LintIssue("relations", "error", sig.location, f"{sig.id} explains unknown id {target}")
            elif target == sig.id:
                yield LintIssue("relations", "error", sig.location, f"{sig.id} explains itself")
        if sig.explains and sig.kind is not Kind.ROOT:
            yield LintIssue("relations", "error", sig.location, f"{sig.id} is a symptom; only roots explain")
        for target in sig.supersedes:
            other = kb.get(target)
            if other is None:
                yield LintIssue("relations", "error", sig.location, f"{sig.id} supersedes unknown id {target}")
            elif other.kind is not Kind.ROOT or sig.kind is not Kind.ROOT:
                yield LintIssue(
                    "relations", "error", sig.location, f"supersedes is between roots ({sig.id} -> {target})"
                )
            elif sig.id in other.supersedes:
                yield LintIssue("relations", "error", sig.location, f"{sig.id} and {target} supersede each other")


def check_examples(kb: KnowledgeBase, matcher: Matcher) -> Iterable[LintIssue]:
    """Each `match` example matches its signature and each `no_match` example does not."""
    for sig in kb:
        for line in sig.examples.match:
            if sig.id not in matcher.owners_matching(line):
                yield LintIssue("examples", "error", sig.location, f"{sig.id} does not match its example: {line!r}")
        for line in sig.examples.no_match:
            if sig.id in matcher.owners_matching(line):
                yield LintIssue("examples", "error", sig.location, f"{sig.id} matches its no_match example: {line!r}")


def _concept_problems(kb: KnowledgeBase, sig: Signature, concept: Concept) -> Iterator[tuple[str, str]]:
    """(field, what is wrong) for one concept's examples, each line read as the matcher reads it."""
    index = concept_index(kb)
    for i, raw in enumerate(concept.examples.match):
        line = normalize(raw, "<example>", 1)
        field = f"examples.match[{i}]"
        if error_shape(line.message, line.level) is None:
            yield field, f"is not an error-shaped line, so the concept tier never reads it: {raw!r}"
        elif not holds(concept, line.message):
            yield field, f"does not hold the concept (a term of every cue set, no none_of term): {raw!r}"
        else:
            named = index.name(line.message)
            if named is not None and named.concept != concept:
                yield field, f"is named first by {named.sig_id}'s concept {named.concept.name!r}: {raw!r}"
    for i, raw in enumerate(concept.examples.no_match):
        if holds(concept, normalize(raw, "<example>", 1).message):
            yield f"examples.no_match[{i}]", f"holds the concept: {raw!r}"


def check_concepts(kb: KnowledgeBase, _m: Matcher) -> Iterable[LintIssue]:
    """Each concept names its `match` examples (error-shaped lines) and none of its `no_match` ones."""
    for sig in kb:
        for n, concept in enumerate(sig.concepts):
            for field, message in _concept_problems(kb, sig, concept):
                where = f"{sig.id}.concepts[{n}].{field}"
                yield LintIssue("concepts", "error", concept.location, f"{where}: {message}")


def _related(a: Signature, b: Signature) -> bool:
    return b.id in a.explains + a.supersedes or a.id in b.explains + b.supersedes


def check_claims(kb: KnowledgeBase, matcher: Matcher) -> Iterable[LintIssue]:
    """No root's example is also matched by an unrelated root (the two would compete)."""
    for sig in kb:
        if sig.kind is not Kind.ROOT or sig.fallback:
            continue
        for line in sig.examples.match:
            for owner in dict.fromkeys(matcher.owners_matching(line)):
                other = kb.get(owner)
                if other is None or other.id == sig.id or other.kind is not Kind.ROOT or other.fallback:
                    continue
                if not _related(sig, other):
                    yield LintIssue(
                        "claims",
                        "error",
                        sig.location,
                        f"example of {sig.id} is also matched by unrelated root {other.id}: {line!r}",
                    )


def _adversarial(pattern: str, anchors: Sequence[str]) -> list[str]:
    """Strings that make a backtracking pattern explode: long runs of what it accepts, then a misfit."""
    alphabet = "".join(sorted({c for c in pattern if c in string.printable and c not in "\\()[]{}?*+|^$."}))
    n = ADVERSARIAL_LENGTH
    runs = ["a" * n, " " * n, "0" * n, "a " * (n // 2), ("a" * 30 + " ") * (n // 31)]
    if alphabet:
        runs.append((alphabet * (n // len(alphabet) + 1))[:n])
    heads = ["", *anchors[:2]]
    return [head + run + end for head in heads for run in runs for end in ("", "!")]


def _regexes(sig: Signature) -> Iterator[tuple[str, LazyRegex, tuple[str, ...], Location]]:
    """Every regex of a signature run on log lines: its patterns and its `extract:` regexes."""
    for p in sig.patterns:
        if not p.literal:
            yield f"pattern {p.source!r}", p.compiled, p.anchors, p.location
    # Extractors run on lines the patterns matched: those lines start with the patterns' anchors.
    anchors = tuple(a for p in sig.patterns for a in p.anchors)
    for name, regex in sig.extract:
        yield f"extractor {name} {regex.pattern!r}", regex, anchors, sig.location


def check_backtracking(kb: KnowledgeBase, _m: Matcher) -> Iterable[LintIssue]:
    """No regex takes more than the budget on adversarial input (catastrophic backtracking)."""
    for sig in kb:
        for what, compiled, anchors, location in _regexes(sig):
            for text in _adversarial(compiled.pattern, anchors):
                try:
                    compiled.search(text, timeout=BACKTRACK_BUDGET)
                except TimeoutError:
                    yield LintIssue(
                        "backtracking",
                        "error",
                        location,
                        f"{sig.id}: {what} backtracks catastrophically (over {BACKTRACK_BUDGET}s "
                        f"on a {len(text)}-character line); make it linear",
                    )
                    break


def check_anchors(kb: KnowledgeBase, _m: Matcher) -> Iterable[LintIssue]:
    """Warn about anchors so common that they make most lines candidates."""
    common = {"error", "rror", "info", "warn", "the", "and", "line", "file"}
    for sig in kb:
        for p in sig.patterns:
            weak = [a for a in p.anchors if a.lower() in common or len(a.strip()) < 4]
            if weak and not sig.fallback:
                yield LintIssue(
                    "anchors", "warning", p.location, f"{sig.id}: weak anchor(s) {weak} slow the prefilter down"
                )


def check_regex_compiles_in_context(kb: KnowledgeBase, _m: Matcher) -> Iterable[LintIssue]:
    """Extractors name a group they define."""
    for sig in kb:
        for name, pattern in sig.extract:
            if name not in pattern.groupindex and pattern.groups != 1:
                yield LintIssue(
                    "extract", "error", sig.location, f"{sig.id}: extractor {name} needs a group named {name}"
                )


def code_references() -> dict[str, str]:
    """Signature ids the Python code gives behaviour to, and where: renaming one in YAML alone
    would silently drop that behaviour."""
    from rlfix.conclude.exceptions import exception_ids
    from rlfix.conclude.mismatch import MISMATCH_ID
    from rlfix.conclude.quantities import QUANTITY_RULES
    from rlfix.conclude.remedies import LOWER_MEMORY_IDS
    from rlfix.conclude.tail import LAUNCHER_IDS, SILENT_DEATH

    refs = {sig_id: "rlfix/conclude/quantities.py QUANTITY_RULES" for sig_id in QUANTITY_RULES}
    refs.update({sig_id: "rlfix/conclude/remedies.py LOWER_MEMORY_IDS" for sig_id in LOWER_MEMORY_IDS})
    refs.update({sig_id: "rlfix/conclude/tail.py" for sig_id in (*LAUNCHER_IDS, SILENT_DEATH)})
    refs.update({sig_id: "rlfix/conclude/exceptions.py" for sig_id in exception_ids()})
    refs[MISMATCH_ID] = "rlfix/conclude/mismatch.py"
    return refs


def check_code_references(kb: KnowledgeBase, _m: Matcher) -> Iterable[LintIssue]:
    """Ids named in rlfix's own code exist in the knowledge base."""
    for sig_id, where in sorted(code_references().items()):
        if sig_id not in kb:
            yield LintIssue("code", "error", Location(where), f"{sig_id}: named in code but no signature has this id")


def _language_problems(sig: Signature) -> Iterator[str]:
    """What the Chinese of one signature lacks against its English."""
    zh = sig.zh
    if zh is None:
        yield "has no `zh:` (Simplified Chinese title, summary, steps, flag words)"
        return
    if not zh.reason:
        yield "zh has no `reason:` (why the action fits, in Chinese)"
    steps = sig.remediation.steps
    if len(zh.steps) != len(steps):
        yield f"zh has {len(zh.steps)} step(s), the English {len(steps)}"
    flags = sig.remediation.flags
    for index, _words in zh.flags:
        if index >= len(flags):
            yield f"zh.flags.{index} names no flag (the signature has {len(flags)})"
    for index, flag in enumerate(flags):
        words = zh.flag(index)
        for name, english, chinese in (("cost", flag.cost, words.cost), ("note", flag.note, words.note)):
            if bool(english) != bool(chinese):
                missing = "zh" if english else "the English"
                yield f"flags[{index}].{name} is missing in {missing}"


def check_languages(kb: KnowledgeBase, _m: Matcher) -> Iterable[LintIssue]:
    """Every signature speaks both languages, with the same steps and flag words."""
    for sig in kb:
        for message in _language_problems(sig):
            yield LintIssue("languages", "error", sig.location, f"{sig.id}: {message}")


CHECKS: dict[str, Check] = {
    "taxonomy": check_taxonomy,
    "relations": check_relations,
    "examples": check_examples,
    "concepts": check_concepts,
    "claims": check_claims,
    "backtracking": check_backtracking,
    "anchors": check_anchors,
    "extract": check_regex_compiles_in_context,
    "code": check_code_references,
    "languages": check_languages,
}


def lint(kb: KnowledgeBase, checks: Sequence[str] | None = None, engine: str = "auto") -> list[LintIssue]:
    """Run the named checks (all by default) and return every issue, errors first."""
    matcher = Matcher.for_knowledge(kb, engine=engine)
    issues: list[LintIssue] = []
    for name in checks or list(CHECKS):
        issues.extend(CHECKS[name](kb, matcher))
    return sorted(issues, key=lambda i: (i.severity != "error", str(i.location)))


__all__ = ["CHECKS", "LintIssue", "lint"]
