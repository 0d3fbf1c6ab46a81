from __future__ import annotations

from pathlib import Path

import pytest

from rlfix.errors import KnowledgeError
from rlfix.kb.anchors import derive_anchors
from rlfix.kb.load import load_knowledge, parse_signature_file
from rlfix.model import FlagForm, Kind

GOOD = """\
signatures:
  - id: my-failure
    title: My failure
    kind: root
    severity: fatal
    summary: Something broke.
    patterns:
      - text: "my special failure"
    remediation:
      steps: [Fix it.]
      flags:
        - {framework: verl, set: actor_rollout_ref.rollout.free_cache_engine=False, purpose: fix}
    references: [https://example.org]
    examples:
      match: ["ERROR: my special failure happened"]
    action: fix-config
    owner: config
    reason: The flag below decides it.
"""


def _problems(text: str) -> list[str]:
    _sigs, problems = parse_signature_file(text, "kb/x.yaml")
    return [str(p) for p in problems]


def test_valid_file_becomes_typed_signatures() -> None:
    sigs, problems = parse_signature_file(GOOD, "kb/x.yaml")
    assert problems == []
    (sig,) = sigs
    assert sig.kind is Kind.ROOT
    assert sig.patterns[0].anchors == ("my special failure",)
    flag = sig.remediation.flags[0]
    assert flag.form is FlagForm.SET
    assert flag.key == "actor_rollout_ref.rollout.free_cache_engine"
    assert flag.suggested == "False"
    assert str(sig.location) == "kb/x.yaml:2:5"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("    title: My failure\n", ""), "kb/x.yaml:2:5: my-failure.title: is required"),
        (("    kind: root\n", "    kind: cause\n"), "kb/x.yaml:4:11: my-failure.kind: must be one of root, symptom"),
        (
            ('      - text: "my special failure"\n', "      - regex: 'a(b'\n"),
            "kb/x.yaml:8:9: my-failure.patterns[0]: invalid regex",
        ),
        (
            ('      - text: "my special failure"\n', "      - regex: '\\d+x'\n"),
            "kb/x.yaml:8:9: my-failure.patterns[0]: no literal",
        ),
        (
            ("    severity: fatal\n", "    severity: fatal\n    colour: red\n"),
            "kb/x.yaml:6:13: my-failure.colour: unknown field",
        ),
        (
            ("    severity: fatal\n", "    severity: fatal\n    severity: error\n"),
            "kb/x.yaml:6:5: duplicate key 'severity'",
        ),
        (("purpose: fix}", "purpose: maybe}"), "my-failure.remediation.flags[0].purpose: must be one of"),
        (("{framework: verl,", "{framework: megatron,"), "my-failure.remediation.flags[0].framework: must be one of"),
        (("    references: [https://example.org]\n", ""), "my-failure.references: needs at least one source"),
        (("signatures:\n", "signatures: [\n"), "kb/x.yaml:2:3: invalid YAML"),
        # No default action or owner: a signature that says neither is refused where it starts.
        (("    action: fix-config\n", ""), "kb/x.yaml:2:5: my-failure.action: is required: one of retry, fix-config"),
        (("    owner: config\n", ""), "kb/x.yaml:2:5: my-failure.owner: is required: one of user-code, config"),
        (("    action: fix-config\n", "    action: reboot\n"), "kb/x.yaml:16:13: my-failure.action: must be one of"),
        (("    owner: config\n", "    owner: nobody\n"), "kb/x.yaml:17:12: my-failure.owner: must be one of"),
        (("    reason: The flag below decides it.\n", ""), "kb/x.yaml:2:5: my-failure.reason: is required"),
    ],
)
def test_every_problem_names_file_line_and_field(edit: tuple[str, str], expected: str) -> None:
    text = GOOD.replace(*edit)
    assert text != GOOD
    problems = _problems(text)
    assert any(p.startswith(expected) or expected in p for p in problems), problems


def test_all_problems_are_collected_not_just_the_first() -> None:
    text = GOOD.replace("    title: My failure\n", "").replace("kind: root", "kind: cause")
    assert len(_problems(text)) == 2


def test_yaml_tags_are_refused_by_the_safe_loader() -> None:
    problems = _problems("signatures: !!python/object/apply:os.system ['true']\n")
    assert problems and "invalid YAML" in problems[0]


def test_user_kb_overrides_same_id_and_adds_new(tmp_path: Path, builtin_kb: object) -> None:
    (tmp_path / "mine.yaml").write_text(GOOD.replace("my-failure", "cuda-oom"))
    (tmp_path / "more.yaml").write_text(GOOD)
    kb = load_knowledge([tmp_path])
    assert kb.get("cuda-oom") is not None and kb.get("cuda-oom").title == "My failure"  # type: ignore[union-attr]
    assert "my-failure" in kb
    assert kb.overridden == ("cuda-oom",)


def test_invalid_user_kb_raises_with_location(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(GOOD.replace("kind: root", "kind: cause"))
    with pytest.raises(KnowledgeError) as err:
        load_knowledge([tmp_path])
    assert "bad.yaml:4:11: my-failure.kind" in str(err.value)


def test_missing_user_kb_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeError, match="no such knowledge-base file"):
        load_knowledge([tmp_path / "nope"])


@pytest.mark.parametrize(
    ("pattern", "anchors"),
    [
        ("an illegal memory access", ("an illegal memory access",)),
        (
            r"\b(?:CUDA_ERROR_ILLEGAL_ADDRESS|cudaErrorIllegalAddress)\b",
            ("CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorIllegalAddress"),
        ),
        (r"Tried to allocate (?P<x>[\d.]+) GiB", ("Tried to allocate ",)),
        (r"(?i)No Space Left", ("no space left",)),
        (r"a+b", ()),
    ],
)
def test_anchor_derivation(pattern: str, anchors: tuple[str, ...]) -> None:
    assert derive_anchors(pattern)[0] == anchors


def test_builtin_knowledge_base_loads(builtin_kb: object) -> None:
    from rlfix.kb.load import KnowledgeBase

    assert isinstance(builtin_kb, KnowledgeBase)
    assert len(builtin_kb) >= 30
