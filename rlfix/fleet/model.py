"""What a fleet triage keeps: one small summary per job, the groups of jobs by cause, and the `Fleet`.

A fleet can hold thousands of jobs, so a job is kept as a `JobSummary` (a few short strings),
never as its `Report`: memory grows with the number of jobs times a small constant.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlfix.conclude.nodes import UNKNOWN_NODE
from rlfix.errors import EXIT_DIAGNOSED, EXIT_OK, EXIT_USAGE, UsageError
from rlfix.gate import Renderers, masked
from rlfix.model import Action
from rlfix.version import __version__

#: The cause of a job in which nothing failed.
HEALTHY = "healthy"
#: The action whose jobs name machines to take out of service.
CORDON_NODE = Action.CORDON_NODE.value
#: Version of the JSON document `Fleet.to_dict()` produces. Bumped only on breaking changes.
FLEET_JSON_VERSION = 1
#: Renderers by format name; `rlfix.fleet.render` fills it when imported (importing `rlfix.fleet` does),
#: so the data here never imports its presentation.
FLEET_RENDERERS: Renderers[Callable[..., str]] = Renderers()


@dataclass(frozen=True)
class JobSummary:
    """One job as the fleet table needs it: its cause, when, which frameworks, one evidence line."""

    job: str
    #: The top diagnosis id, `unrecognized-failure`, or `healthy`.
    cause: str
    #: What jobs are grouped by: the cause, or for an unrecognised failure the cause and its error template.
    key: str
    title: str = ""
    #: The error template of an unrecognised failure (None for every other cause).
    template: str | None = None
    #: What to do with the job and who owns it (the top diagnosis's; "" for a healthy job).
    action: str = ""
    owner: str = ""
    #: The machines the top diagnosis's evidence names (host, IP or GPU PCI bus id); may be empty.
    nodes: tuple[str, ...] = ()
    #: Every top-level diagnosis id, best first.
    ids: tuple[str, ...] = ()
    frameworks: tuple[str, ...] = ()
    #: Where and what the top diagnosis first matched ("" for a healthy job).
    evidence: str = ""
    evidence_source: str = ""
    evidence_line: int = 0
    #: ISO 8601 time (UTC) of the failure from the log's timestamps, else of the job's newest file.
    seen: str | None = None
    #: "log" or "mtime": where `seen` came from.
    seen_from: str = "mtime"
    files: int = 0
    lines: int = 0
    bytes: int = 0
    errors: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """Whether a failure was diagnosed in this job."""
        return self.cause != HEALTHY

    def to_dict(self) -> dict[str, Any]:
        """The per-job object of the fleet JSON (see docs/cli.md, `rlfix triage`)."""
        return {
            "job": self.job,
            "failed": self.failed,
            "cause": self.cause,
            "group": self.key,
            "title": self.title,
            "template": self.template,
            "action": self.action or None,
            "owner": self.owner or None,
            "nodes": list(self.nodes),
            "ids": list(self.ids),
            "frameworks": list(self.frameworks),
            "evidence": {"source": self.evidence_source, "line": self.evidence_line, "text": self.evidence},
            "seen": self.seen,
            "seen_from": self.seen_from,
            "inputs": {"files": self.files, "lines": self.lines, "bytes": self.bytes},
            "errors": list(self.errors),
        }


@dataclass(frozen=True)
class Group:
    """Jobs with the same cause (and, for unrecognised failures, the same error template)."""

    key: str
    cause: str
    title: str
    template: str | None
    count: int
    first_seen: str | None
    last_seen: str | None
    frameworks: tuple[str, ...]
    #: The first job of the group in input order, and its evidence line.
    example: str
    evidence: str
    #: The actions and owners of the group's jobs, each once (one cause may call for several:
    #: `gpu-hardware-fault` acts by its Xid).
    actions: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.cause != HEALTHY

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.key,
            "cause": self.cause,
            "title": self.title,
            "template": self.template,
            "count": self.count,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "frameworks": list(self.frameworks),
            "actions": list(self.actions),
            "owners": list(self.owners),
            "example": {"job": self.example, "evidence": self.evidence},
        }


@dataclass(frozen=True)
class Fleet:
    """Many jobs triaged at once: one summary per job (input order) and the groups, most jobs first.

    Renders as `text`, `json`, `markdown` or `html` (`render()`), and as an HTML table in a notebook.
    """

    jobs: tuple[JobSummary, ...]
    groups: tuple[Group, ...]
    #: Inputs that could not be used at all (one line each).
    errors: tuple[str, ...] = ()
    #: Jobs left out by `since` (counted, not kept).
    filtered: int = 0
    since: str | None = None
    #: Whether what leaves rlfix is masked (False only for `--no-redact` / `redact=False`).
    redacted: bool = True
    #: Folder entries not read, with why (links out of the folder, FIFOs): warnings, not errors.
    skipped: tuple[str, ...] = ()
    #: The actions asked for (`--action`): only jobs whose top cause calls for one of them are kept.
    only_actions: tuple[str, ...] = ()
    #: Jobs left out by `only_actions` (counted, not kept).
    other_actions: int = 0

    @property
    def failed(self) -> int:
        """How many jobs failed."""
        return sum(1 for j in self.jobs if j.failed)

    def action_counts(self) -> dict[str, int]:
        """Failed jobs per action, most first (ties by name)."""
        counts: dict[str, int] = {}
        for j in self.jobs:
            if j.failed:
                counts[j.action] = counts.get(j.action, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def nodes_to_cordon(self) -> list[tuple[str, int]]:
        """The machines whose jobs' top cause is `cordon-node`, with how many jobs named each, most
        first; `node unknown` counts the jobs whose evidence names no machine."""
        counts: dict[str, int] = {}
        for j in self.jobs:
            if j.action == CORDON_NODE:
                for node in j.nodes or (UNKNOWN_NODE,):
                    counts[node] = counts.get(node, 0) + 1
        return sorted(counts.items(), key=lambda kv: (kv[0] == UNKNOWN_NODE, -kv[1], kv[0]))

    @property
    def cordon_only(self) -> bool:
        """Whether the fleet was asked for the nodes to cordon and nothing else (`--action cordon-node`)."""
        return self.only_actions == (CORDON_NODE,)

    @property
    def exit_code(self) -> int:
        """2 when some job could not be read at all (as `rlfix diagnose` exits for an unreadable
        input, whatever else it found); else 1 when some job failed; else 0. Usage errors raise
        before a Fleet exists."""
        if self.errors:
            return EXIT_USAGE
        return EXIT_DIAGNOSED if self.failed else EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        """The fleet JSON: the groups, then one object per job; through the output gate."""
        if self.redacted and (gated := masked(self)) is not self:
            return gated.to_dict()  # the masked copy masks to itself: one level deep
        return {
            "version": FLEET_JSON_VERSION,
            "tool": {"name": "rlfix", "version": __version__},
            "jobs_total": len(self.jobs),
            "jobs_failed": self.failed,
            "since": self.since,
            "filtered_out": self.filtered,
            "only_actions": list(self.only_actions),
            "other_actions_left_out": self.other_actions,
            "actions": self.action_counts(),
            "nodes_to_cordon": [{"node": n, "jobs": c} for n, c in self.nodes_to_cordon()],
            "groups": [g.to_dict() for g in self.groups],
            "jobs": [j.to_dict() for j in self.jobs],
            "errors": list(self.errors),
            "skipped": list(self.skipped),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def render(self, fmt: str = "text", **options: Any) -> str:
        """Render as `text`, `json`, `markdown` or `html` (options: `color`, `compact` for html)."""
        renderer = FLEET_RENDERERS.get(fmt)
        if renderer is None:
            raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(sorted(FLEET_RENDERERS))}")
        return renderer(self, **options)

    def __str__(self) -> str:
        return self.render("text")

    def __repr__(self) -> str:
        top = ", ".join(f"{g.key}={g.count}" for g in self.groups[:3])
        more = ", …" if len(self.groups) > 3 else ""
        return f"<Fleet {len(self.jobs)} jobs, {self.failed} failed: {top}{more}>"

    def _repr_html_(self) -> str:
        return self.render("html", compact=True)
