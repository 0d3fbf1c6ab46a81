"""Plain-text descriptions for `rlfix explain`, `rlfix kb show` and `rlfix kb info`."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rlfix import safe
from rlfix.i18n import phrase, word
from rlfix.kb.load import KnowledgeBase
from rlfix.model import Signature
from rlfix.version import __version__


def _wrap(text: str, indent: str = "  ") -> str:
    return textwrap.fill(text, width=96, initial_indent=indent, subsequent_indent=indent)


def _flag(sig: Signature, index: int, lang: str = "en") -> str:
    f = sig.remediation.flags[index]
    words = sig.flag_words(f, lang)
    scope = f.framework + (f" {f.versions}" if f.versions else "")
    extra = phrase("; cost: {cost}", lang, cost=words.cost) if words.cost else ""
    note = f" ({words.note})" if words.note else ""
    return f"  {f.value}   [{scope}; {word(f.purpose, lang)}{extra}]{note}"


def describe_signature(sig: Signature, lang: str = "en") -> str:
    """What it means, why it happens, how to fix it: for people."""
    words = sig.localized(lang)
    colon = "：" if lang == "zh" else ": "
    out = [
        f"{sig.id}{colon}{words.title}",
        f"  {word(sig.kind.value, lang)}, {word(sig.severity.value, lang)}",
        "",
        phrase("What happened", lang),
        _wrap(words.summary),
        "",
        phrase("What to do", lang),
        _wrap(
            phrase(
                "{action} (owner: {owner}): {reason}",
                lang,
                action=word(sig.decision.action.value, lang),
                owner=word(sig.decision.owner.value, lang),
                reason=words.reason or sig.decision.reason,
            )
        ),
    ]
    if words.steps:
        out += ["", phrase("How to fix", lang)]
        out += [_wrap(f"{i}. {s}") for i, s in enumerate(words.steps, 1)]
    if sig.remediation.flags:
        out += ["", phrase("Flags by framework", lang)]
        out += [_flag(sig, i, lang) for i in range(len(sig.remediation.flags))]
    if sig.explains:
        out += ["", phrase("Explains: ", lang) + ", ".join(sig.explains)]
    if sig.supersedes:
        out += [phrase("Supersedes: ", lang) + ", ".join(sig.supersedes)]
    out += ["", phrase("Looks like", lang)]
    out += [f"  {line}" for line in sig.examples.match[:3]]
    if sig.references:
        out += ["", phrase("References", lang)]
        out += [f"  {r}" for r in sig.references]
    return "\n".join(out) + "\n"


def show_signature(sig: Signature, lang: str = "en") -> str:
    """Everything the engine uses: for signature authors."""
    out = [describe_signature(sig, lang).rstrip("\n"), "", f"Defined at {sig.location}", "Patterns"]
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
    out += _concept_lines(sig)
    return "\n".join(out) + "\n"


def _concept_lines(sig: Signature) -> list[str]:
    """The concepts (docs/writing-signatures.md#concepts): a term of each cue line, none of none_of."""
    out = ["Concepts (for error lines no pattern matched: a term of each cue line)"] if sig.concepts else []
    for c in sig.concepts:
        out.append(f"  {c.name}  (confidence {c.confidence}, {c.location})")
        out += ["    cue: " + " | ".join(cue) for cue in c.cues]
        if c.none_of:
            out.append("    none of: " + " | ".join(c.none_of))
    return out


def describe_knowledge(kb: KnowledgeBase, extra: Sequence[str] = ()) -> str:
    """Where the knowledge base comes from, its size, and the matching engine in use (`rlfix kb info`)."""
    from rlfix.core import matcher_for
    from rlfix.kb import cache
    from rlfix.kb.load import builtin_dir
    from rlfix.match.engines import available_engines
    from rlfix.match.lines import line_counting

    matcher = matcher_for(kb, "auto")
    held = f"{len(kb)} signatures, {len(kb.messages)} known messages, digest {kb.digest}"
    lines = [f"rlfix {__version__}", f"knowledge base: {builtin_dir()} ({held})"]
    lines += [f"extra signatures: {d}" for d in extra]
    if kb.overridden:
        lines.append(f"overridden ids: {', '.join(kb.overridden)}")
    lines.append(f"engine: {matcher.engine} (available: {', '.join(available_engines())}; set RLFIX_ENGINE)")
    lines.append(f"line counting: {line_counting()}")
    where = cache.cache_dir()
    lines.append(f"parsed-file cache: {where if where is not None else 'off'} (set RLFIX_CACHE_DIR; off to disable)")
    if cache.last_note:
        # A path the user's environment names: shown inert, as every other line rlfix prints.
        lines.append(safe.one_line(f"parsed-file cache note: {cache.last_note}"))
    return "\n".join(lines) + "\n"
