"""docs/signatures.md: the catalogue of failures, generated from the knowledge base."""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from pathlib import Path

from rlfix import safe
from rlfix.i18n import phrase, word
from rlfix.kb.load import KnowledgeBase, builtin_dir
from rlfix.model import Flag, Signature

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

HEADER = (
    "# Failure catalogue\n\n"
    "Generated from `knowledge/` by `rlfix kb catalogue > docs/signatures.md`; a test fails when it is stale.\n"
)
HEADER_ZH = (
    "# 故障目录\n\n"
    "由 `rlfix kb catalogue --lang zh > docs/zh/signatures.md` 从 `knowledge/` 生成；内容过期时会有测试失败。"
    "English: [../signatures.md](../signatures.md)。\n"
)


def _flag(sig: Signature, f: Flag, lang: str = "en") -> str:
    words = sig.flag_words(f, lang)
    scope = f" ({f.versions})" if f.versions else ""
    cost = phrase("; cost: {cost}", lang, cost=words.cost) if words.cost else ""
    note = f"; {words.note}" if words.note else ""
    value = f.value.replace("|", "\\|")
    return f"`{value}`{scope}: {word(f.purpose, lang)}{cost}{note}".replace("\n", " ")


def render_catalogue(kb: KnowledgeBase, lang: str = "en") -> str:
    """Markdown: what each failure means, why it happens, how to fix it, flags by framework, sources."""
    sigs = sorted(kb, key=lambda s: (s.kind.value, s.id))
    heads = (
        "| id | 类型 | 严重程度 | 处理 | 负责方 | 标题 |"
        if lang == "zh"
        else "| id | kind | severity | action | owner | title |"
    )
    out = [HEADER_ZH if lang == "zh" else HEADER, heads, "|---|---|---|---|---|---|"]
    for s in sigs:
        kind, severity = word(s.kind.value, lang), word(s.severity.value, lang)
        title = s.localized(lang).title if _bundled(s) else safe.md_text(s.localized(lang).title)
        action, owner = f"`{s.decision.action.value}`", word(s.decision.owner.value, lang)
        out.append(f"| [`{s.id}`](#{s.id}) | {kind} | {severity} | {action} | {owner} | {title} |")
    for sig in sigs:
        out += _entry(sig, lang) if _bundled(sig) else _entry(_inert(sig), lang)
    return "\n".join(out) + "\n"


def _bundled(sig: Signature) -> bool:
    """The project's own signatures are trusted Markdown; those of `--kb` folders are not."""
    try:
        return Path(sig.location.file).resolve().is_relative_to(builtin_dir().resolve())
    except (OSError, ValueError):
        return False


def _inert(sig: Signature) -> Signature:
    """A `--kb` signature with its prose escaped: no markup, link or raw HTML of its text survives."""
    text = safe.md_text
    flags = tuple(
        dataclasses.replace(f, purpose=text(f.purpose), cost=f.cost and text(f.cost), note=f.note and text(f.note))
        for f in sig.remediation.flags
    )
    zh = sig.zh and dataclasses.replace(
        sig.zh,
        title=text(sig.zh.title),
        summary=text(sig.zh.summary),
        steps=tuple(map(text, sig.zh.steps)),
        reason=sig.zh.reason and text(sig.zh.reason),
    )
    return dataclasses.replace(
        sig,
        title=text(sig.title),
        decision=dataclasses.replace(sig.decision, reason=text(sig.decision.reason)),
        summary=text(sig.summary),
        remediation=dataclasses.replace(sig.remediation, steps=tuple(map(text, sig.remediation.steps)), flags=flags),
        zh=zh,
        references=tuple(r for r in sig.references if safe.md_link(r).startswith("<")),
    )


def _entry(sig: Signature, lang: str) -> list[str]:
    """One signature's section."""
    words = sig.localized(lang)
    kind, severity = word(sig.kind.value, lang), word(sig.severity.value, lang)
    sep = "，" if lang == "zh" else ", "
    out = ["", f"## {sig.id}", "", f"**{words.title}** ({kind}{sep}{severity})", "", words.summary]
    action = word(sig.decision.action.value, lang)
    owner = word(sig.decision.owner.value, lang)
    out += [
        "",
        phrase("**Action:** ", lang)
        + phrase(
            "{action} (owner: {owner}): {reason}",
            lang,
            action=action,
            owner=owner,
            reason=words.reason or sig.decision.reason,
        ),
    ]
    if sig.explains:
        out += ["", phrase("Explains: ", lang) + ", ".join(f"[`{e}`](#{e})" for e in sig.explains)]
    if sig.supersedes:
        out += ["", phrase("Supersedes: ", lang) + ", ".join(f"[`{e}`](#{e})" for e in sig.supersedes)]
    if words.steps:
        out += ["", phrase("**How to fix**", lang), ""]
        out += [f"{i}. {step}" for i, step in enumerate(words.steps, 1)]
    by_framework: dict[str, list[Flag]] = defaultdict(list)
    for flag in sig.remediation.flags:
        by_framework[flag.framework].append(flag)
    if by_framework:
        out += ["", phrase("**Flags by framework**", lang), ""]
        for framework, flags in by_framework.items():
            out.append(f"- {framework}: " + "; ".join(_flag(sig, f, lang) for f in flags))
    # Escape codes (Ray's colours) are shown, not interpreted, so the page reads the same anywhere.
    shown = [_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", line) for line in sig.examples.match[:3]]
    # A fence longer than any run of backticks in the examples: none of them can close it.
    fence = "`" * max([3, *(len(run) + 1 for line in shown for run in re.findall("`+", line))])
    out += ["", phrase("**Looks like**", lang), "", f"{fence}text", *shown, fence]
    if sig.references:
        out += ["", phrase("**References:** ", lang) + ", ".join(safe.md_link(r) for r in sig.references)]
    return out
