"""Accuracy of the knowledge base on labelled logs: top-1, top-3, false alarms, per id."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlfix.api import diagnose
from rlfix.errors import InputError
from rlfix.kb import KnowledgeBase

LABELS = "labels.yaml"


@dataclass(frozen=True)
class Case:
    """One labelled log: the id that must rank first (None for a healthy log)."""

    file: str
    expect: str | None
    also: tuple[str, ...] = ()
    origin: str = ""
    source: str = ""


@dataclass(frozen=True)
class Outcome:
    case: Case
    got: tuple[str, ...]

    @property
    def top1(self) -> bool:
        if self.case.expect is None:
            return not self.got
        return bool(self.got) and self.got[0] in (self.case.expect, *self.case.also)

    @property
    def top3(self) -> bool:
        if self.case.expect is None:
            return not self.got
        return any(g in (self.case.expect, *self.case.also) for g in self.got[:3])


@dataclass
class Evaluation:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.case.expect is not None]

    @property
    def healthy(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.case.expect is None]

    @property
    def top1(self) -> float:
        f = self.failures
        return sum(o.top1 for o in f) / len(f) if f else 1.0

    @property
    def top3(self) -> float:
        f = self.failures
        return sum(o.top3 for o in f) / len(f) if f else 1.0

    @property
    def false_alarms(self) -> list[Outcome]:
        return [o for o in self.healthy if o.got]

    def per_id(self) -> dict[str, tuple[int, int, int]]:
        """id -> (cases, top-1 hits, top-3 hits)."""
        table: dict[str, list[int]] = {}
        for o in self.failures:
            row = table.setdefault(str(o.case.expect), [0, 0, 0])
            row[0] += 1
            row[1] += o.top1
            row[2] += o.top3
        return {k: (v[0], v[1], v[2]) for k, v in sorted(table.items())}

    def to_markdown(self) -> str:
        lines = [
            f"- logs of failures: {len(self.failures)}; top-1 accuracy **{self.top1:.1%}**, "
            f"top-3 accuracy **{self.top3:.1%}**",
            f"- logs of healthy runs: {len(self.healthy)}; false alarms **{len(self.false_alarms)}**",
            "",
            "| id | logs | top-1 | top-3 |",
            "|---|---:|---:|---:|",
        ]
        for sig_id, (n, t1, t3) in self.per_id().items():
            lines.append(f"| `{sig_id}` | {n} | {t1}/{n} | {t3}/{n} |")
        misses = [o for o in self.outcomes if not o.top1]
        if misses:
            lines += ["", "Misses:", ""]
            for o in misses:
                lines.append(f"- `{o.case.file}`: expected `{o.case.expect}`, got {list(o.got[:3])}")
        return "\n".join(lines) + "\n"


def load_cases(directory: Path) -> list[Case]:
    """Read `labels.yaml` in `directory`."""
    path = directory / LABELS
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: invalid YAML: {exc}") from None
    cases = []
    for item in (data or {}).get("cases", []):
        cases.append(
            Case(
                file=str(item["file"]),
                expect=item.get("expect"),
                also=tuple(item.get("also") or ()),
                origin=str(item.get("origin", "")),
                source=str(item.get("source", "")),
            )
        )
    return cases


def evaluate(directory: str | Path, kb: KnowledgeBase | None = None, only: Sequence[str] = ()) -> Evaluation:
    """Diagnose every labelled log in `directory` and compare with its label."""
    root = Path(directory)
    result = Evaluation()
    for case in load_cases(root):
        if only and case.file not in only:
            continue
        report = diagnose(root / case.file, kb=kb)
        result.outcomes.append(Outcome(case, tuple(report.ids)))
    return result
