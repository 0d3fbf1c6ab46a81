"""What every renderer says the same way: places, details, flags, the job and where it failed."""

from __future__ import annotations

from rlfix.i18n import join, phrase, said, sentence, word
from rlfix.model import Evidence
from rlfix.report import Diagnosis, Remedy, Report


def shown(report: Report, top: int | None, show_all: bool) -> list[Diagnosis]:
    diagnoses = list(report.diagnoses)
    return diagnoses if show_all or top is None else diagnoses[:top]


def where(e: Evidence, short: bool = False, lang: str = "en") -> str:
    """`job.log:67 [rank 3]`; with one input, just `line 67 [rank 3]`."""
    where = phrase("line {line}", lang, line=e.line) if short else f"{e.source}:{e.line}"
    return f"{where} [{e.where}]" if e.where else where


def single_source(report: Report) -> bool:
    return len([s for s in report.sources if not s.skipped]) == 1


def places(d: Diagnosis, lang: str = "en") -> str:
    parts = []
    if len(d.ranks) > 1:
        shown = ", ".join(str(r) for r in d.ranks[:8]) + (", ..." if len(d.ranks) > 8 else "")
        parts.append(phrase("seen on {n} ranks ({shown})", lang, n=len(d.ranks), shown=shown))
    if len(d.workers) > 1:
        parts.append(phrase("{n} workers", lang, n=len(d.workers)))
    if len(d.nodes) > 1:
        parts.append(phrase("{n} nodes", lang, n=len(d.nodes)))
    return join(parts, lang)


def label(d: Diagnosis, lang: str = "en") -> str:
    """`root, fatal, confidence 0.95`."""
    kind, severity = word(d.kind.value, lang), word(d.severity.value, lang)
    template = "{kind}, {severity}, confidence {confidence:.2f}"
    return phrase(template, lang, kind=kind, severity=severity, confidence=d.confidence)


def action_reason(d: Diagnosis, lang: str = "en") -> str:
    """Why the finding's action fits, in `lang`: the signature's own words, or the conclusions' sentence
    when the finding decided differently (an Xid's bucket, an inferred cause)."""
    zh = d.signature.zh
    if lang == "zh" and d.override is None and zh is not None and zh.reason:
        return zh.reason
    return sentence(d.decision.reason, lang)


def action_line(d: Diagnosis, lang: str = "en") -> str:
    """`cordon-node (owner: hardware): the GPU itself failed ...`."""
    return phrase(
        "{action} (owner: {owner}): {reason}",
        lang,
        action=word(d.action.value, lang),
        owner=word(d.owner.value, lang),
        reason=action_reason(d, lang),
    )


def remedies(d: Diagnosis, all_flags: bool) -> list[Remedy]:
    return [r for r in d.remedies if r.applies or all_flags]


def flag_words(d: Diagnosis, r: Remedy, lang: str = "en") -> tuple[str | None, str | None]:
    """The cost and note of a chosen flag in `lang`."""
    words = d.signature.flag_words(r.flag, lang)
    return words.cost, words.note


def flag_line(r: Remedy, d: Diagnosis | None = None, lang: str = "en") -> str:
    f = r.flag
    scope = f.framework if f.framework != "any" else phrase("any framework", lang)
    if f.versions:
        scope += f" {f.versions}"
    cost = flag_words(d, r, lang)[0] if d is not None else f.cost
    open_, close = ("（", "）") if lang == "zh" else ("(", ")")
    line = f"{f.value}  {open_}{f.form.value}, {scope}; {word(f.purpose, lang)}"
    if cost:
        line += phrase("; cost: {cost}", lang, cost=cost)
    line += close
    if r.reason:
        line += f"  <- {sentence(r.reason, lang)}"
    return line


def notes_phrase(report: Report, lang: str = "en") -> str:
    """ "; 2 things worth knowing below" or "" when the report has no notes."""
    n = len(report.notes)
    return phrase("; {n} thing{s} worth knowing below", lang, n=n, s="s" if n > 1 else "") if n else ""


def note_line(d: Diagnosis, lang: str = "en") -> str:
    """One line for a note: the warning, how often, and where it first showed."""
    count = f" ({d.count}x)" if d.count > 1 else ""
    title = d.signature.localized(lang).title
    return phrase(
        "{id}{count}: {title} — first at {where}", lang, id=d.id, count=count, title=title, where=where(d.first)
    )


def where_line(report: Report, lang: str = "en") -> str:
    """Stage, last step and first failing place, in words (empty when the log did not say)."""
    ins = report.insights
    parts = []
    if ins.stage:
        parts.append(phrase("during {stage}", lang, stage=word(ins.stage, lang)))
    if ins.last_step is not None:
        parts.append(phrase("after step {step}", lang, step=ins.last_step))
    first = ins.first_failure
    if first is not None:
        at = f"{first.source}:{first.line}"
        parts.append(
            phrase("first seen on {place}", lang, place=first.place)
            if first.place
            else phrase("first at {where}", lang, where=at)
        )
    if ins.collateral:
        listed = ", ".join(ins.collateral[:6]) + (", ..." if len(ins.collateral) > 6 else "")
        parts.append(phrase("then collateral on {listed}", lang, listed=listed))
    return join(parts, lang)


#: Dead workers whose last words a diagnosis shows.
MAX_DEAD_SHOWN = 3
#: Values about the traceback's frames, said by the details lines instead.
FRAME_VALUES = frozenset({"raised_at", "raised_in", "called_from", "calls"})


def shown_values(d: Diagnosis) -> dict[str, str]:
    """Extracted values not already said by the details (nor as quantities in words)."""
    if d.details.quantities:
        return {}
    said = d.details.names() | FRAME_VALUES
    return {k: v for k, v in d.values.items() if k not in said}


def details_lines(d: Diagnosis, lang: str = "en") -> list[str]:
    """The typed details of a diagnosis as short lines ("exception: KeyError: 'x'", "raised at: ...")."""
    det = d.details
    out: list[str] = []
    if d.concept is not None:
        out.append(phrase("named by concept: {name}", lang, name=d.concept))
    if d.known_message is not None:
        out.append(phrase("known message: {source}", lang, source=d.known_message))
    out += [said(q, lang) for q in det.quantities]
    exc = det.exception
    if exc is not None and exc.exception:
        msg = f": {exc.message}" if exc.message else ""
        out.append(phrase("exception: {text}", lang, text=f"{exc.exception}{msg}"))
    raised = det.raised_at or d.values.get("raised_at")
    if raised:
        out.append(phrase("raised at: {text}", lang, text=raised))
    unknown = det.unrecognized
    if unknown is not None:
        if unknown.exit_code:
            out.append(phrase("exit code: {code}", lang, code=unknown.exit_code))
        out.extend(phrase("error x{n}: {template}", lang, n=t.count, template=t.template) for t in unknown.templates)
    if det.hang is not None:
        out.append(phrase("collective hang: {text}", lang, text=det.hang.describe(lang)))
    if det.mismatch is not None:
        out.append(phrase("version mismatch: {text}", lang, text=det.mismatch.describe(lang)))
    for dead in det.dead[:MAX_DEAD_SHOWN]:
        out.append(phrase("dead worker: {text}", lang, text=dead.describe()))
        if dead.kernel_oom:
            out.append(phrase("kernel OOM: {text}", lang, text=dead.kernel_oom))
        out.extend(
            phrase("last words ({place}): {text}", lang, place=f"{src}:{n}", text=t) for src, n, t in dead.last_lines
        )
    if det.similar:
        similar = ", ".join(f"{s.id} ({s.score})" for s in det.similar)
        out.append(phrase("similar known failures: {text}", lang, text=similar))
    return out


def context_line(report: Report, lang: str = "en") -> str:
    ctx = report.context
    parts = []
    for name in ctx.active_frameworks():
        version = ctx.versions.get(name)
        parts.append(f"{name} {version}" if version else name)
    others = [f"{k} {v}" for k, v in sorted(ctx.versions.items()) if k not in ctx.frameworks]
    parts.extend(others)
    for gpu, _count in sorted(ctx.gpus.items()):
        parts.append(gpu)
    return ", ".join(parts) if parts else phrase("(nothing recognised)", lang)
