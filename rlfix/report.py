"""The result of a triage: ranked diagnoses with evidence, context and remedies."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from rlfix.details import Details, Insights, Window
from rlfix.errors import EXIT_DIAGNOSED, EXIT_OK, EXIT_USAGE, UsageError
from rlfix.gate import Renderers, masked
from rlfix.job import JobContext
from rlfix.model import Action, Decision, Evidence, Flag, Kind, Owner, Severity, Signature
from rlfix.version import __version__


class Renderer(Protocol):
    """Turns a report into text in one format."""

    def __call__(self, report: Report, **options: Any) -> str: ...


#: Renderers by format name. `rlfix.render` fills it when imported (importing `rlfix` does), so
#: this data layer never imports the presentation layer above it. Every renderer registered here
#: sees only the masked view of a report (`rlfix.gate`).
RENDERERS: Renderers[Renderer] = Renderers()

#: Version of the JSON document `Report.to_dict()` produces. Bumped only on breaking changes.
JSON_VERSION = 1


@dataclass(frozen=True)
class Remedy:
    """A flag chosen for this job, with what the log says it is set to now."""

    flag: Flag
    applies: bool
    current: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = self.flag.to_dict()
        out.update(applies=self.applies, current=self.current, reason=self.reason)
        return out


@dataclass(frozen=True)
class Diagnosis:
    """One failure found in the log: the signature, its evidence and why it ranks where it does."""

    signature: Signature
    evidence: tuple[Evidence, ...]
    count: int
    ranks: tuple[int, ...] = ()
    workers: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    values: Mapping[str, str] = field(default_factory=dict)
    confidence: float = 0.0
    reasons: tuple[str, ...] = ()
    folded: tuple[Diagnosis, ...] = ()
    remedies: tuple[Remedy, ...] = ()
    details: Details = field(default_factory=Details)
    #: What to do with the job, when this finding decides it differently from its signature
    #: (an Xid's own bucket, a cause only inferred); None: the signature's decision.
    override: Decision | None = None
    #: The concept that named this finding (`out-of-memory + GPU allocator`), when no exact pattern
    #: matched its lines; None for a finding of the signature's own patterns.
    concept: str | None = None
    #: The framework message this finding's line is (`peft 0.21.2, peft/config.py:98 [...]`), when
    #: no exact pattern matched it but a known message did (knowledge/messages/).
    known_message: str | None = None

    @property
    def id(self) -> str:
        return self.signature.id

    @property
    def decision(self) -> Decision:
        """What to do with a job that failed this way, who owns it, and why."""
        return self.override or self.signature.decision

    @property
    def action(self) -> Action:
        """`retry`, `fix-config`, `fix-code`, `fix-environment`, `cordon-node`, `report-upstream` or `investigate`."""
        return self.decision.action

    @property
    def owner(self) -> Owner:
        """Who acts: `user-code`, `config`, `framework`, `environment`, `platform`, `hardware` or `unknown`."""
        return self.decision.owner

    @property
    def kind(self) -> Kind:
        return self.signature.kind

    @property
    def severity(self) -> Severity:
        return self.signature.severity

    @property
    def title(self) -> str:
        return self.signature.title

    @property
    def first(self) -> Evidence:
        """The earliest line that matched."""
        return self.evidence[0]

    def to_dict(self) -> dict[str, Any]:
        sig = self.signature
        return {
            "id": sig.id,
            "kind": sig.kind.value,
            "severity": sig.severity.value,
            "title": sig.title,
            "summary": sig.summary,
            "confidence": round(self.confidence, 3),
            # Only for a finding a concept named (no exact pattern matched its lines).
            **({"concept": self.concept} if self.concept is not None else {}),
            # Only for a finding a known message named: the framework, version and raise site.
            **({"known_message": self.known_message} if self.known_message is not None else {}),
            "action": self.action.value,
            "owner": self.owner.value,
            "action_reason": self.decision.reason,
            "reasons": list(self.reasons),
            "count": self.count,
            "ranks": list(self.ranks),
            "workers": list(self.workers),
            "nodes": list(self.nodes),
            "values": dict(self.values),
            "details": self.details.to_dict(),
            "evidence": [e.to_dict() for e in self.evidence],
            "explains": [
                {"id": f.id, "kind": f.kind.value, "title": f.title, "count": f.count, "first": f.first.to_dict()}
                for f in self.folded
            ],
            "remediation": {
                "steps": list(sig.remediation.steps),
                "flags": [r.to_dict() for r in self.remedies],
            },
            "references": list(sig.references),
        }


@dataclass(frozen=True)
class SourceStats:
    """One input: its name, how much was read, and whether it was skipped."""

    name: str
    lines: int
    bytes: int
    skipped: str | None = None


@dataclass(frozen=True)
class Report:
    """Everything rlfix concluded about a log or a set of logs.

    `diagnoses` is ordered best first; symptoms explained by a root are folded into that
    root's `folded`. Renders as text (`str(report)`), JSON (`to_json()`), Markdown and HTML,
    and shows itself in a notebook cell.
    """

    diagnoses: tuple[Diagnosis, ...]
    #: Findings worth knowing that are not failures (warning-severity signatures nothing explains).
    notes: tuple[Diagnosis, ...] = ()
    context: JobContext = field(default_factory=JobContext)
    sources: tuple[SourceStats, ...] = ()
    errors: tuple[str, ...] = ()
    engine: str = ""
    #: Lines the literal scan let through to the patterns (`rlfix diagnose --stats`; not in JSON,
    #: which stays the same whatever engine or number of processes read the log).
    candidates: int = 0
    insights: Insights = field(default_factory=Insights)
    #: (signature id, evidence) for every matched line in log order, bounded; for timelines.
    timeline: tuple[tuple[str, Evidence], ...] = ()
    #: Whether what leaves rlfix is masked (False only for `--no-redact` / `redact=False`).
    redacted: bool = True
    #: Lines around the roots' evidence, read again from their files (`rlfix.excerpt`); empty otherwise.
    windows: tuple[Window, ...] = ()

    @property
    def top(self) -> Diagnosis | None:
        """The most likely root cause, or None when nothing was recognised."""
        return self.diagnoses[0] if self.diagnoses else None

    @property
    def failed(self) -> bool:
        """Whether any failure was diagnosed, or the command is known to have failed (its exit status)."""
        ended = self.insights.exit
        return bool(self.diagnoses) or (ended is not None and ended.failed)

    def get(self, sig_id: str) -> Diagnosis | None:
        """The diagnosis (top-level or folded) for a signature id."""
        for diag in (*self.diagnoses, *self.notes):
            if diag.id == sig_id:
                return diag
            for sub in diag.folded:
                if sub.id == sig_id:
                    return sub
        return None

    @property
    def ids(self) -> list[str]:
        """Top-level diagnosis ids, best first."""
        return [d.id for d in self.diagnoses]

    @property
    def lines(self) -> int:
        return sum(s.lines for s in self.sources)

    @property
    def exit_code(self) -> int:
        """0 nothing recognised, 1 a failure diagnosed, 2 an input could not be read."""
        if self.errors:
            return EXIT_USAGE
        return EXIT_DIAGNOSED if self.failed else EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        """The versioned JSON contract (see docs/json.md), through the output gate (`rlfix.gate`)."""
        if self.redacted and (gated := masked(self)) is not self:
            return gated.to_dict()  # the masked copy masks to itself: one level deep
        return {
            "version": JSON_VERSION,
            "tool": {"name": "rlfix", "version": __version__, "engine": self.engine},
            "failed": self.failed,
            "top": self.top.id if self.top else None,
            "context": self.context.to_dict(),
            "diagnoses": [d.to_dict() for d in self.diagnoses],
            "notes": [d.to_dict() for d in self.notes],
            "insights": self.insights.to_dict(),
            "inputs": [
                {"source": s.name, "lines": s.lines, "bytes": s.bytes, "skipped": s.skipped} for s in self.sources
            ],
            "errors": list(self.errors),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, sort_keys=False)

    def render(self, fmt: str = "text", **options: Any) -> str:
        """Render as `text`, `json`, `markdown` or `html` (options: see `rlfix.render.RenderOptions`)."""
        renderer = RENDERERS.get(fmt)
        if renderer is None:
            raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(sorted(RENDERERS))}")
        return renderer(self, **options)

    def __str__(self) -> str:
        return self.render("text", color=False)

    def __repr__(self) -> str:
        """Short: a head line, then one line per diagnosis (`str()` and `_repr_html_` are the full report)."""
        n = len(self.diagnoses)
        head = f"<rlfix.Report failed={self.failed} {n} finding{'' if n == 1 else 's'}, {self.lines} lines"
        head += f" from {len(self.sources)} input{'' if len(self.sources) == 1 else 's'}"
        if self.insights.exit is not None:
            head += f", {self.insights.exit.describe()}"
        if self.errors:
            head += f", {len(self.errors)} error{'' if len(self.errors) == 1 else 's'}"
        rows = [
            f"  {i}. {d.id} ({d.kind.value}, {d.severity.value}, confidence {d.confidence:.2f}) "
            f"at {d.first.source}:{d.first.line}" + (f", explains {len(d.folded)}" if d.folded else "")
            for i, d in enumerate(self.diagnoses, 1)
        ]
        return "\n".join([head + (":" if rows else ">"), *rows]) + (">" if rows else "")

    def _repr_markdown_(self) -> str:
        return self.render("markdown")

    def _repr_html_(self) -> str:
        return self.render("html", compact=True)
