"""Generated docs stay current: the failure catalogue and the accuracy table."""

from __future__ import annotations

from pathlib import Path

from rlfix.kb.load import KnowledgeBase
from rlfix.tools.catalogue import render_catalogue

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_signature_catalogue_is_current(builtin_kb: KnowledgeBase) -> None:
    expected = render_catalogue(builtin_kb)
    assert (DOCS / "signatures.md").read_text(encoding="utf-8") == expected, (
        "docs/signatures.md is stale: run `rlfix kb catalogue > docs/signatures.md`"
    )


def test_chinese_catalogue_is_current(builtin_kb: KnowledgeBase) -> None:
    expected = render_catalogue(builtin_kb, "zh")
    assert (DOCS / "zh" / "signatures.md").read_text(encoding="utf-8") == expected, (
        "docs/zh/signatures.md is stale: run `rlfix kb catalogue --lang zh > docs/zh/signatures.md`"
    )


def test_catalogue_covers_every_signature(builtin_kb: KnowledgeBase) -> None:
    text = render_catalogue(builtin_kb)
    assert all(f"\n## {sig.id}\n" in text for sig in builtin_kb)


def test_accuracy_doc_is_current(builtin_kb: KnowledgeBase) -> None:
    from rlfix.tools.accuracy import accuracy_markdown

    expected = accuracy_markdown(DOCS.parent, builtin_kb)
    assert (DOCS / "accuracy.md").read_text(encoding="utf-8") == expected, (
        "docs/accuracy.md is stale: run `python scripts/update_accuracy.py`"
    )
