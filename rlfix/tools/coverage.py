"""Coverage of the mined error wordings: the share of raise sites rlfix diagnoses right.

`fixtures/wordings/<framework>.yaml` lists the error and fatal messages mined from each
framework's source, each with the full log `line` and the id (`expect`) an expert gives it.
Each line is diagnosed twice, as a one-line paste and as the last line of a short traceback;
an entry counts as right when both put `expect` first. For an `expect` whose signature is a
warning, right means the warning was found and no other diagnosis ranks above it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rlfix.api import diagnose
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.model import Severity
from rlfix.report import Report

TRACEBACK_HEAD = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/project/train.py", line 42, in <module>\n'
    "    main()\n"
    '  File "/home/user/project/train.py", line 37, in main\n'
    "    trainer.fit()\n"
)


@dataclass(frozen=True)
class Entry:
    """One mined wording: its framework, full log line and the expected id."""

    framework: str
    line: str
    expect: str
    source: str = ""


@dataclass(frozen=True)
class Result:
    """What rlfix said for one entry, alone and at the end of a traceback."""

    entry: Entry
    alone: str | None
    in_traceback: str | None
    right: bool


@dataclass
class Coverage:
    """Per-entry results with per-framework and overall shares."""

    results: list[Result] = field(default_factory=list)

    @property
    def share(self) -> float:
        """Overall share of entries diagnosed right (1.0 when there are none)."""
        return sum(r.right for r in self.results) / len(self.results) if self.results else 1.0

    def per_framework(self) -> dict[str, tuple[int, int]]:
        """framework -> (entries, right)."""
        table: dict[str, list[int]] = {}
        for r in self.results:
            row = table.setdefault(r.entry.framework, [0, 0])
            row[0] += 1
            row[1] += r.right
        return {k: (v[0], v[1]) for k, v in sorted(table.items())}

    @property
    def misses(self) -> list[Result]:
        """Entries that were not diagnosed right."""
        return [r for r in self.results if not r.right]

    def to_markdown(self) -> str:
        """A table per framework (entries, right, share), the overall share and every miss."""
        lines = ["| framework | entries | right | share |", "|---|---:|---:|---:|"]
        for name, (n, ok) in self.per_framework().items():
            lines.append(f"| {name} | {n} | {ok} | {ok / n:.1%} |")
        total = len(self.results)
        right = sum(r.right for r in self.results)
        lines.append(f"| **all** | **{total}** | **{right}** | **{self.share:.1%}** |")
        if self.misses:
            lines += ["", "Misses (framework: expected, got alone / got in a traceback):", ""]
            for r in self.misses:
                text = r.entry.line.splitlines()[0][:160].replace("|", "\\|")
                lines.append(f"- {r.entry.framework}: `{r.entry.expect}`, got `{r.alone}` / `{r.in_traceback}`: {text}")
        return "\n".join(lines) + "\n"


def load_entries(directory: str | Path) -> list[Entry]:
    """Every entry of every `<framework>.yaml` in `directory`, in file order."""
    entries = []
    for path in sorted(Path(directory).glob("*.yaml")):
        for item in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            entries.append(Entry(path.stem, str(item["line"]), str(item["expect"]), str(item.get("source", ""))))
    return entries


def _verdict(report: Report, expect: str, kb: KnowledgeBase) -> tuple[str | None, bool]:
    """The top id of `report` and whether it counts as `expect`."""
    top = report.top.id if report.top is not None else None
    sig = kb.get(expect)
    if sig is not None and sig.severity is Severity.WARNING:
        # A warning is right as a note worth knowing; after a cut-off traceback the failure is that.
        return top, any(d.id == expect for d in report.notes) and top in (None, "unrecognized-failure")
    return top, top == expect


def check(entry: Entry, kb: KnowledgeBase) -> Result:
    """Diagnose one entry's line alone and after a short traceback."""
    text = entry.line.rstrip("\n") + "\n"
    alone, ok_alone = _verdict(diagnose(text, kb=kb), entry.expect, kb)
    framed, ok_framed = _verdict(diagnose(TRACEBACK_HEAD + text, kb=kb), entry.expect, kb)
    return Result(entry, alone, framed, ok_alone and ok_framed)


def coverage(directory: str | Path, kb: KnowledgeBase | None = None) -> Coverage:
    """Coverage of the mined wordings in `directory` by `kb` (the built-in one by default)."""
    kb = kb if kb is not None else load_knowledge()
    return Coverage([check(entry, kb) for entry in load_entries(directory)])
