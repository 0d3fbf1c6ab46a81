"""Plain-text descriptions for `rlfix explain`, `rlfix kb show` and `rlfix kb info`."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rlfix.kb.load import KnowledgeBase
from rlfix.model import Signature
from rlfix.version import __version__


def _wrap(text: str, indent: str = "  ") -> str:
    return textwrap.fill(text, width=96, initial_indent=indent, subsequent_indent=indent)


def _flag(f: object) -> str:
    from rlfix.model import Flag

    assert isinstance(f, Flag)
    scope = f.framework + (f" {f.versions}" if f.versions else "")
    extra = f"; cost: {f.cost}" if f.cost else ""
    note = f" ({f.note})" if f.note else ""
    return f"  {f.value}   [{scope}; {f.purpose}{extra}]{note}"


def describe_signature(sig: Signature) -> str:
    """What it means, why it happens, how to fix it: for people."""
    out = [
        f"{sig.id}: {sig.title}",
        f"  {sig.kind.value}, {sig.severity.value}",
        "",
        "What happened",
        _wrap(sig.summary),
    ]
    if sig.remediation.steps:
        out += ["", "How to fix"]
        out += [_wrap(f"{i}. {s}") for i, s in enumerate(sig.remediation.steps, 1)]
    if sig.remediation.flags:
        out += ["", "Flags by framework"]
        out += [_flag(f) for f in sig.remediation.flags]
    if sig.explains:
        out += ["", "Explains: " + ", ".join(sig.explains)]
    if sig.supersedes:
        out += ["Supersedes: " + ", ".join(sig.supersedes)]
    out += ["", "Looks like"]
    out += [f"  {line}" for line in sig.examples.match[:3]]
    if sig.references:
        out += ["", "References"]
        out += [f"  {r}" for r in sig.references]
    return "\n".join(out) + "\n"


def show_signature(sig: Signature) -> str:
    """Everything the engine uses: for signature authors."""
    out = [describe_signature(sig).rstrip("\n"), "", f"Defined at {sig.location}", "Patterns"]
    for p in sig.patterns:
        kind = "text " if p.literal else "regex"
        case = " (ignore case)" if p.ignore_case else ""
        out.append(f"  {kind} {p.source!r}{case}")
        out.append(f"        anchors: {', '.join(repr(a) for a in p.anchors)}")
    if sig.extract:
        out.append("Extract")
        out += [f"  {name}: {pattern.pattern!r}" for name, pattern in sig.extract]
    out.append(f"Confidence: {sig.confidence}" + ("  (fallback)" if sig.fallback else ""))
    if sig.examples.no_match:
        out.append("Must not match")
        out += [f"  {line}" for line in sig.examples.no_match]
    return "\n".join(out) + "\n"


def describe_knowledge(kb: KnowledgeBase, extra: Sequence[str] = ()) -> str:
    """Where the knowledge base comes from, its size, and the matching engine in use (`rlfix kb info`)."""
    from rlfix.core import matcher_for
    from rlfix.kb.load import builtin_dir
    from rlfix.match.engines import available_engines
    from rlfix.match.matcher import line_counting

    matcher = matcher_for(kb, "auto")
    lines = [f"rlfix {__version__}", f"knowledge base: {builtin_dir()} ({len(kb)} signatures, digest {kb.digest})"]
    lines += [f"extra signatures: {d}" for d in extra]
    if kb.overridden:
        lines.append(f"overridden ids: {', '.join(kb.overridden)}")
    lines.append(f"engine: {matcher.engine} (available: {', '.join(available_engines())}; set RLFIX_ENGINE)")
    lines.append(f"line counting: {line_counting()}")
    return "\n".join(lines) + "\n"
