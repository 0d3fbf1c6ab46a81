"""Many jobs of one cluster, each with its own full `Report`: the fleet table on top, one section per job.

`rlfix triage` keeps a line per job because a fleet can hold thousands; a Ray cluster's session
holds a handful to a few hundred jobs, and a user wants each one's whole diagnosis. `JobReports`
holds one `Report` per job, in time order, and the findings that belong to no job (the node's own)
as a last section. It renders with the existing renderers: the `Fleet` table of the jobs' causes
(the same `summarize` and `FleetBuilder` as `rlfix triage`), then each section's heading and its
report in the same format. JSON is one document: `{"fleet": ..., "jobs": [{"job": ..., "report":
...}], "node": ...}`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rlfix import safe
from rlfix.conclude.unrecognized import UNRECOGNIZED_ID
from rlfix.details import NodeScan
from rlfix.errors import EXIT_DIAGNOSED, EXIT_OK, EXIT_USAGE, UsageError
from rlfix.fleet.gather import FleetBuilder
from rlfix.fleet.model import Fleet, JobSummary
from rlfix.fleet.scan import summarize
from rlfix.gate import Renderers, masked
from rlfix.i18n import phrase
from rlfix.report import Report
from rlfix.version import __version__

#: Version of the JSON document `JobReports.to_dict()` produces. Bumped only on breaking changes.
SECTIONS_JSON_VERSION = 1
#: The name of the section of findings that belong to no job.
NODE = "node"
_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


@dataclass(frozen=True)
class JobSection:
    """One job's report, with its name, a one-line heading, and what the cluster said of the job."""

    job: str
    heading: str
    report: Report
    #: JSON-ready facts about the job (ids, window, Ray's status); empty for the node section.
    info: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.job, "heading": self.heading, **dict(self.info), "report": self.report.to_dict()}


@dataclass(frozen=True)
class JobReports:
    """One section per job (time order) and the node's own findings; renders like a `Report`."""

    sections: tuple[JobSection, ...]
    #: Findings in the shared logs outside every job's window and in files no job owns (None: not read).
    node: JobSection | None = None
    title: str = "rlfix"
    errors: tuple[str, ...] = ()
    #: What each node's scan read and found (`rlfix ray cluster`); None where no node was scanned.
    ray_nodes: tuple[NodeScan, ...] | None = None

    @property
    def fleet(self) -> Fleet:
        """The jobs' causes as the fleet table (`rlfix triage`) counts them."""
        builder = FleetBuilder()
        for s in self.sections:
            builder.add(_summary(s))
        return builder.fleet()

    @property
    def failed(self) -> bool:
        """Whether any job (or the node) failed."""
        return any(s.report.failed for s in self._all())

    @property
    def exit_code(self) -> int:
        """As `Report.exit_code`: 2 when an input could not be read, 1 when any section failed, else 0."""
        if self.errors or any(s.report.errors for s in self._all()):
            return EXIT_USAGE
        return EXIT_DIAGNOSED if self.failed else EXIT_OK

    def get(self, job: str) -> Report | None:
        """The report of a job, by submission id, job id or section name (`node` for the node's)."""
        for s in self._all():
            if job == s.job or job in (s.info.get("submission_id"), s.info.get("job_id")):
                return s.report
        return None

    def _all(self) -> tuple[JobSection, ...]:
        return (*self.sections, self.node) if self.node is not None else self.sections

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: the fleet table, each job's report, the node's report; through the
        output gate (Ray's job messages and exit details are in `info`)."""
        if (gated := masked(self)) is not self:
            return gated.to_dict()  # the masked copy masks to itself: one level deep
        return {
            "version": SECTIONS_JSON_VERSION,
            "tool": {"name": "rlfix", "version": __version__},
            "title": self.title,
            "failed": self.failed,
            "fleet": self.fleet.to_dict(),
            "jobs": [s.to_dict() for s in self.sections],
            "node": self.node.to_dict() if self.node is not None else None,
            "errors": list(self.errors),
            **({"ray_nodes": [n.to_dict() for n in self.ray_nodes]} if self.ray_nodes is not None else {}),
        }

    def render(self, fmt: str = "text", **options: Any) -> str:
        """Render as `text`, `json`, `markdown` (`md`) or `html`; options as `Report.render` takes them."""
        renderer = JOB_RENDERERS.get(fmt)
        if renderer is None:
            raise UsageError(f"unknown format {fmt!r}; choose from html, json, markdown, text")
        return renderer(self, **options)

    def _render_json(self, options: dict[str, Any]) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def _headline(self, lang: str) -> str:
        failed = sum(1 for s in self.sections if s.report.failed)
        jobs = len(self.sections)
        return phrase(
            "{title}: {jobs} job{s}, {failed} failed",
            lang,
            title=self.title,
            jobs=jobs,
            s="" if jobs == 1 else "s",
            failed=failed,
        )

    def _render_text(self, options: dict[str, Any]) -> str:
        lang = options.get("lang", "en")
        out = [safe.one_line(self._headline(lang)), ""]
        if self.sections:
            out.append(self.fleet.render("text", lang=lang).split("\n", 2)[-1].rstrip("\n"))
        for s in self._all():
            out += ["", f"=== {safe.one_line(s.heading)} ===", s.report.render("text", **options).rstrip("\n")]
        return "\n".join(out) + "\n"

    def _render_markdown(self, options: dict[str, Any]) -> str:
        lang = options.get("lang", "en")
        out = [f"## {safe.md_text(self._headline(lang))}", ""]
        if self.sections:
            out.append(self.fleet.render("markdown", lang=lang).split("\n", 2)[-1].rstrip("\n"))
        for s in self._all():
            out += ["", f"## {safe.md_text(s.heading)}", "", s.report.render("markdown", **options).rstrip("\n")]
        return "\n".join(out) + "\n"

    def _render_html(self, options: dict[str, Any]) -> str:
        lang = options.get("lang", "en")
        compact = bool(options.get("compact"))
        inner = {**options, "compact": True}
        parts = [f"<h1>{safe.xml_text(self._headline(lang))}</h1>"]
        if self.sections:
            parts.append(self.fleet.render("html", compact=True, lang=lang))
        for s in self._all():
            parts.append(f'<section class="rlfix-job" data-job="{safe.xml_text(s.job)}">')
            parts.append(f"<h2>{safe.xml_text(s.heading)}</h2>{s.report.render('html', **inner)}</section>")
        body = "".join(parts)
        if compact:
            return body
        # Each fragment brings its own script; the page allows exactly those, by hash, as a report's page does.
        hashes = sorted({_sha(js) for js in _SCRIPT.findall(body)})
        csp = "default-src 'none'; style-src 'unsafe-inline'; script-src " + " ".join(hashes) + "; img-src data:"
        return (
            f'<!doctype html>\n<html lang="{"zh-CN" if lang == "zh" else "en"}"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{safe.xml_text(csp)}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{safe.xml_text(self._headline(lang))}</title></head>"
            f'<body style="margin:0;padding:16px 20px;background:#fff">{body}</body></html>\n'
        )

    def __str__(self) -> str:
        return self.render("text")

    def __repr__(self) -> str:
        jobs = ", ".join(f"{s.job}={s.report.top.id if s.report.top else 'healthy'}" for s in self.sections[:4])
        more = ", …" if len(self.sections) > 4 else ""
        return f"<JobReports {len(self.sections)} jobs: {jobs}{more}>"

    def _repr_html_(self) -> str:
        return self.render("html", compact=True)


def _summary(section: JobSection) -> JobSummary:
    """A section's line of the table. A job that failed with nothing recognised and no error line to
    quote (Ray said FAILED; its driver printed no error) is an unrecognised failure, never healthy."""
    summary = summarize(section.job, section.report, None)
    ended = section.report.insights.exit
    if summary.failed or not section.report.failed or ended is None:
        return summary
    how = ended.describe()
    return replace(
        summary, cause=UNRECOGNIZED_ID, key=f"{UNRECOGNIZED_ID}: {how}", title=f"failed ({how}); no error line"
    )


def _sha(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii") + "'"


#: The formats of `JobReports`; each sees only the masked view of the reports (`rlfix.gate`).
JOB_RENDERERS: Renderers[Callable[..., str]] = Renderers(
    {
        "json": lambda r, **o: r._render_json(o),
        "markdown": lambda r, **o: r._render_markdown(o),
        "md": lambda r, **o: r._render_markdown(o),
        "html": lambda r, **o: r._render_html(o),
        "text": lambda r, **o: r._render_text(o),
    }
)
