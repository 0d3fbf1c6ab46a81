"""`rlfix kb lint`: the shipped knowledge base is clean, and each check catches what it is for."""

from __future__ import annotations

from pathlib import Path

from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.tools.lint import lint
from tests.conftest import RunCli


def test_shipped_knowledge_base_has_no_lint_errors(builtin_kb: KnowledgeBase) -> None:
    errors = [str(i) for i in lint(builtin_kb) if i.severity == "error"]
    assert errors == []


SIG = """\
  - id: {id}
    title: T
    kind: root
    severity: fatal
    action: investigate
    owner: unknown
    reason: A test signature.
    summary: S.
    patterns:
      - regex: '{pattern}'
    explains: [{explains}]
    remediation: {{steps: [Fix.]}}
    references: [https://example.org]
    examples:
      match: ["{match}"]
      no_match: ["{no_match}"]
"""


def _kb(tmp_path: Path, *sigs: dict[str, str]) -> KnowledgeBase:
    defaults = {"explains": "", "no_match": "fine"}
    text = "signatures:\n" + "".join(SIG.format(**{**defaults, **s}) for s in sigs)
    (tmp_path / "k.yaml").write_text(text)
    return load_knowledge([tmp_path], builtin=False)


def _checks(kb: KnowledgeBase) -> set[str]:
    return {i.check for i in lint(kb) if i.severity == "error"}


def test_catastrophic_backtracking_is_rejected(tmp_path: Path) -> None:
    kb = _kb(tmp_path, {"id": "slow", "pattern": "boom (\\w+\\s?)*$", "match": "boom aaa"})
    assert "backtracking" in _checks(kb)


def test_failing_example_and_no_match(tmp_path: Path) -> None:
    kb = _kb(tmp_path, {"id": "x", "pattern": "flux capacitor", "match": "warp core", "no_match": "flux capacitor"})
    assert "examples" in _checks(kb)


def test_unknown_explains_target(tmp_path: Path) -> None:
    kb = _kb(tmp_path, {"id": "x", "pattern": "flux capacitor", "match": "flux capacitor", "explains": "nope"})
    assert "relations" in _checks(kb)


def test_unrelated_roots_claiming_one_example(tmp_path: Path) -> None:
    kb = _kb(
        tmp_path,
        {"id": "a", "pattern": "flux capacitor", "match": "flux capacitor overheated"},
        {"id": "b", "pattern": "capacitor overheated", "match": "capacitor overheated"},
    )
    assert "claims" in _checks(kb)


def test_lint_cli_exit_status(run_cli: RunCli, tmp_path: Path) -> None:
    _kb(tmp_path, {"id": "slow", "pattern": "boom (\\w+\\s?)*$", "match": "boom aaa"})
    proc = run_cli(["kb", "lint", "--kb", str(tmp_path)])
    assert proc.returncode == 1
    assert "backtracks catastrophically" in proc.stderr


def test_ids_named_in_code_must_exist() -> None:
    from rlfix.kb.load import load_knowledge, with_signatures
    from rlfix.tools.lint import code_references, lint

    kb = load_knowledge()
    assert "cuda-oom" in code_references()
    assert not [i for i in lint(kb, ["code"])]
    without = with_signatures(kb, [s for s in kb if s.id != "cuda-oom"])
    issues = lint(without, ["code"])
    assert any("cuda-oom" in i.message for i in issues) and all(i.severity == "error" for i in issues)
