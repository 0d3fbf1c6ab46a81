"""What every renderer says the same way: places, details, flags, the job and where it failed."""

from __future__ import annotations

from rlfix.model import Evidence
from rlfix.report import Diagnosis, Remedy, Report


def shown(report: Report, top: int | None, show_all: bool) -> list[Diagnosis]:
    diagnoses = list(report.diagnoses)
    return diagnoses if show_all or top is None else diagnoses[:top]


def where(e: Evidence, short: bool = False) -> str:
    """`job.log:67 [rank 3]`; with one input, just `line 67 [rank 3]`."""
    where = f"line {e.line}" if short else f"{e.source}:{e.line}"
    return f"{where} [{e.where}]" if e.where else where


def single_source(report: Report) -> bool:
    return len([s for s in report.sources if not s.skipped]) == 1


def places(d: Diagnosis) -> str:
    parts = []
    if len(d.ranks) > 1:
        shown = ", ".join(str(r) for r in d.ranks[:8]) + (", ..." if len(d.ranks) > 8 else "")
        parts.append(f"seen on {len(d.ranks)} ranks ({shown})")
    if len(d.workers) > 1:
        parts.append(f"{len(d.workers)} workers")
    if len(d.nodes) > 1:
        parts.append(f"{len(d.nodes)} nodes")
    return "; ".join(parts)


def remedies(d: Diagnosis, all_flags: bool) -> list[Remedy]:
    return [r for r in d.remedies if r.applies or all_flags]


def flag_line(r: Remedy) -> str:
    f = r.flag
    scope = f.framework if f.framework != "any" else "any framework"
    if f.versions:
        scope += f" {f.versions}"
    line = f"{f.value}  ({f.form.value}, {scope}; {f.purpose}"
    if f.cost:
        line += f"; cost: {f.cost}"
    line += ")"
    if r.reason:
        line += f"  <- {r.reason}"
    return line


def notes_phrase(report: Report) -> str:
    """ "; 2 things worth knowing below" or "" when the report has no notes."""
    n = len(report.notes)
    return f"; {n} thing{'s' if n > 1 else ''} worth knowing below" if n else ""


def note_line(d: Diagnosis) -> str:
    """One line for a note: the warning, how often, and where it first showed."""
    count = f" ({d.count}x)" if d.count > 1 else ""
    return f"{d.id}{count}: {d.title} — first at {where(d.first)}"


def where_line(report: Report) -> str:
    """Stage, last step and first failing place, in words (empty when the log did not say)."""
    ins = report.insights
    parts = []
    if ins.stage:
        parts.append(f"during {ins.stage}")
    if ins.last_step is not None:
        parts.append(f"after step {ins.last_step}")
    first = ins.first_failure
    if first is not None:
        parts.append(f"first seen on {first.place}" if first.place else f"first at {first.source}:{first.line}")
    if ins.collateral:
        listed = ", ".join(ins.collateral[:6]) + (", ..." if len(ins.collateral) > 6 else "")
        parts.append(f"then collateral on {listed}")
    return "; ".join(parts)


#: Values about the traceback's frames, said by the details lines instead.
FRAME_VALUES = frozenset({"raised_at", "raised_in", "called_from", "calls"})


def shown_values(d: Diagnosis) -> dict[str, str]:
    """Extracted values not already said by the details (nor as quantities in words)."""
    if d.details.quantities:
        return {}
    said = d.details.names() | FRAME_VALUES
    return {k: v for k, v in d.values.items() if k not in said}


def details_lines(d: Diagnosis) -> list[str]:
    """The typed details of a diagnosis as short lines ("exception: KeyError: 'x'", "raised at: ...")."""
    det = d.details
    out: list[str] = list(det.quantities)
    exc = det.exception
    if exc is not None and exc.exception:
        msg = f": {exc.message}" if exc.message else ""
        out.append(f"exception: {exc.exception}{msg}")
    raised = det.raised_at or d.values.get("raised_at")
    if raised:
        out.append(f"raised at: {raised}")
    unknown = det.unrecognized
    if unknown is not None:
        if unknown.exit_code:
            out.append(f"exit code: {unknown.exit_code}")
        out.extend(f"error x{t.count}: {t.template}" for t in unknown.templates)
    if det.hang is not None:
        out.append(f"collective hang: {det.hang.describe()}")
    if det.mismatch is not None:
        out.append(f"version mismatch: {det.mismatch.describe()}")
    if det.similar:
        out.append("similar known failures: " + ", ".join(f"{s.id} ({s.score})" for s in det.similar))
    return out


def context_line(report: Report) -> str:
    ctx = report.context
    parts = []
    for name in ctx.active_frameworks():
        version = ctx.versions.get(name)
        parts.append(f"{name} {version}" if version else name)
    others = [f"{k} {v}" for k, v in sorted(ctx.versions.items()) if k not in ctx.frameworks]
    parts.extend(others)
    for gpu, _count in sorted(ctx.gpus.items()):
        parts.append(gpu)
    return ", ".join(parts) if parts else "(nothing recognised)"
