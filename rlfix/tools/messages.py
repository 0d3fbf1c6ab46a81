"""The error-message catalogue (fixtures/messages): how much of the stack's vocabulary rlfix names.

Each `<project>.yaml` lists messages mined from one project's source by scripts/catalogue, with
the id an expert set from the message and its source (`expect`). Each is scored as the coverage
tool scores the mined wordings: given alone and at the end of a short traceback, it is right when
both put `expect` first. Only entries with a specific id count toward coverage; entries labelled
`python-exception` or `unrecognized-failure` name no cause, so they are reported apart (as how
often rlfix agrees that nothing specific is named).

The first pass of each project is recorded once, before any pattern is written for its messages
(`scripts/record_catalogue_first_pass.py` writes `first_pass.yaml`), so every project is scored
leave-one-project-out: with what the knowledge base had learnt from the other projects only.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.tools.coverage import Entry, check

#: Labels that name no cause: reported apart from coverage.
GENERIC_IDS = frozenset({"python-exception", "unrecognized-failure"})
FIRST_PASS = "first_pass.yaml"


@dataclass(frozen=True)
class Message:
    """One catalogue entry: a project's message as a log line, where it was read, and its label."""

    project: str
    version: str
    source: str
    line: str
    expect: str

    @property
    def key(self) -> str:
        """A stable name for the entry in the first-pass record (its source and a digest of its line)."""
        digest = hashlib.sha1(self.line.encode("utf-8")).hexdigest()[:10]
        return f"{self.source}#{digest}"

    @property
    def specific(self) -> bool:
        """Whether the label names a cause (only these count toward coverage)."""
        return self.expect not in GENERIC_IDS


@dataclass(frozen=True)
class Scored:
    """What rlfix put first for a message, alone and in a traceback, and whether both were right."""

    message: Message
    alone: str | None
    in_traceback: str | None
    right: bool


def load_messages(directory: str | Path) -> list[Message]:
    """Every entry of every `<project>.yaml` in `directory` (first_pass.yaml is not a project)."""
    messages = []
    for path in sorted(Path(directory).glob("*.yaml")):
        if path.name == FIRST_PASS:
            continue
        for row in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            messages.append(
                Message(
                    str(row["project"]), str(row["version"]), str(row["source"]), str(row["line"]), str(row["expect"])
                )
            )
    return messages


def score(messages: list[Message], kb: KnowledgeBase | None = None) -> list[Scored]:
    """Diagnose every message twice (alone, after a traceback) in this process."""
    kb = kb if kb is not None else load_knowledge()
    scored = []
    for m in messages:
        result = check(Entry(m.project, m.line, m.expect, m.source), kb)
        scored.append(Scored(m, result.alone, result.in_traceback, result.right))
    return scored


@dataclass
class ProjectScore:
    """One project's counts: specific entries and right ones; generic entries and agreeing ones."""

    specific: int = 0
    specific_right: int = 0
    generic: int = 0
    generic_agree: int = 0

    def add(self, scored: Scored) -> None:
        """Count one scored message."""
        if scored.message.specific:
            self.specific += 1
            self.specific_right += scored.right
        else:
            self.generic += 1
            self.generic_agree += scored.right


@dataclass
class CatalogueScore:
    """Scores per project, overall coverage of the specific entries, and the misses."""

    results: list[Scored] = field(default_factory=list)

    def per_project(self) -> dict[str, ProjectScore]:
        """project -> its counts, sorted by project."""
        table: dict[str, ProjectScore] = {}
        for r in self.results:
            table.setdefault(r.message.project, ProjectScore()).add(r)
        return dict(sorted(table.items()))

    @property
    def coverage(self) -> float:
        """Share of the specific entries diagnosed right (1.0 when there are none)."""
        specific = [r for r in self.results if r.message.specific]
        return sum(r.right for r in specific) / len(specific) if specific else 1.0

    @property
    def misses(self) -> list[Scored]:
        """Specific entries not diagnosed right."""
        return [r for r in self.results if r.message.specific and not r.right]


def score_catalogue(directory: str | Path, kb: KnowledgeBase | None = None) -> CatalogueScore:
    """Score every message of the catalogue in `directory`."""
    return CatalogueScore(score(load_messages(directory), kb))


def first_pass_record(directory: str | Path) -> dict[str, Any]:
    """project -> its recorded first pass (commit, date, counts, the misses then); {} when none."""
    path = Path(directory) / FIRST_PASS
    if not path.exists():
        return {}
    record: Any = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return dict(record.get("projects", {}))


def _pct(right: int, n: int) -> str:
    return f"{right}/{n} ({right / n:.1%})" if n else "-"


def to_markdown(final: CatalogueScore, first: dict[str, Any], rules: CatalogueScore) -> str:
    """Per project: specific entries with the first pass, the rules alone (the knowledge base without
    its known messages) and the final coverage; generic entries apart."""
    alone = rules.per_project()
    lines = [
        "| project | specific entries | first pass (leave-one-project-out) | rules alone | final "
        "| generic entries | agree, final |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    totals = [0, 0, 0, 0, 0, 0]
    for project, now in final.per_project().items():
        before = first.get(project, {})
        b_n, b_right = int(before.get("specific", 0)), int(before.get("specific_right", 0))
        first_cell = _pct(b_right, b_n) if before else "not recorded"
        by_rules = alone.get(project, ProjectScore())
        lines.append(
            f"| {project} | {now.specific} | {first_cell} | {_pct(by_rules.specific_right, by_rules.specific)} "
            f"| {_pct(now.specific_right, now.specific)} | {now.generic} | {_pct(now.generic_agree, now.generic)} |"
        )
        values = (now.specific, b_right, by_rules.specific_right, now.specific_right, now.generic, now.generic_agree)
        for i, value in enumerate(values):
            totals[i] += value
    n, b_right, rules_right, right, g, agree = totals
    first_n = sum(int(v.get("specific", 0)) for v in first.values())
    lines.append(
        f"| **all** | **{n}** | **{_pct(b_right, first_n)}** | **{_pct(rules_right, n)}** | **{_pct(right, n)}** "
        f"| **{g}** | **{_pct(agree, g)}** |"
    )
    return "\n".join(lines) + "\n"
