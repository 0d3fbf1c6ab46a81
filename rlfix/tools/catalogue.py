"""docs/signatures.md: the catalogue of failures, generated from the knowledge base."""

from __future__ import annotations

import re
from collections import defaultdict

from rlfix.kb.load import KnowledgeBase
from rlfix.model import Flag

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

HEADER = (
    "# Failure catalogue\n\n"
    "Generated from `knowledge/` by `rlfix kb catalogue > docs/signatures.md`; a test fails when it is stale.\n"
)


def _flag(f: Flag) -> str:
    scope = f" ({f.versions})" if f.versions else ""
    cost = f"; cost: {f.cost}" if f.cost else ""
    note = f"; {f.note}" if f.note else ""
    value = f.value.replace("|", "\\|")
    return f"`{value}`{scope}: {f.purpose}{cost}{note}".replace("\n", " ")


def render_catalogue(kb: KnowledgeBase) -> str:
    """Markdown: what each failure means, why it happens, how to fix it, flags by framework, sources."""
    sigs = sorted(kb, key=lambda s: (s.kind.value, s.id))
    out = [HEADER, "| id | kind | severity | title |", "|---|---|---|---|"]
    out += [f"| [`{s.id}`](#{s.id}) | {s.kind.value} | {s.severity.value} | {s.title} |" for s in sigs]
    for sig in sigs:
        out += ["", f"## {sig.id}", "", f"**{sig.title}** ({sig.kind.value}, {sig.severity.value})", "", sig.summary]
        if sig.explains:
            out += ["", "Explains: " + ", ".join(f"[`{e}`](#{e})" for e in sig.explains)]
        if sig.supersedes:
            out += ["", "Supersedes: " + ", ".join(f"[`{e}`](#{e})" for e in sig.supersedes)]
        if sig.remediation.steps:
            out += ["", "**How to fix**", ""]
            out += [f"{i}. {step}" for i, step in enumerate(sig.remediation.steps, 1)]
        by_framework: dict[str, list[Flag]] = defaultdict(list)
        for flag in sig.remediation.flags:
            by_framework[flag.framework].append(flag)
        if by_framework:
            out += ["", "**Flags by framework**", ""]
            for framework, flags in by_framework.items():
                out.append(f"- {framework}: " + "; ".join(_flag(f) for f in flags))
        out += ["", "**Looks like**", "", "```text"]
        # Escape codes (Ray's colours) are shown, not interpreted, so the page reads the same anywhere.
        out += [_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", line) for line in sig.examples.match[:3]]
        out += ["```"]
        if sig.references:
            out += ["", "**References:** " + ", ".join(f"<{r}>" for r in sig.references)]
    return "\n".join(out) + "\n"
