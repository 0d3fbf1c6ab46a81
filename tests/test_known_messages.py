"""Known messages (knowledge/messages/): a line a framework's source prints, named by its template.

The files are generated from the mined catalogue by scripts/catalogue/learn.py; these tests hold
the rule (literal parts in order, a template thin in text is refused), the way a finding shows
where the message comes from, that a healthy run's line never makes a failure, that a user's
knowledge-base folder can add messages with problems reported at file:line, and that the bundled
files are what the script makes of the committed catalogue.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlfix.api import diagnose
from rlfix.errors import KnowledgeError
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.kb.messages import learnable, literal_parts, parse_messages, whole_words
from rlfix.match.messages import MessageIndex, holds
from rlfix.model import KNOWN_MESSAGE_CONFIDENCE, KnownMessage
from scripts.catalogue import learn

# PEFT's range check of one option (peft/tuners/unilora/config.py): no exact pattern knows it.
PEFT_LINE = "ValueError: `unilora_dropout` should be between 0.0 and 1.0, got 8."


def _message(template: str, sig_id: str = "config-error", source: str = "x.py:1") -> KnownMessage:
    words = tuple(w.lower() for w in whole_words(template))
    return KnownMessage(sig_id, template, literal_parts(template), words, "proj", "1.0", source)


@pytest.mark.parametrize(
    ("template", "ok"),
    [
        ("Invalid task type: '{}'. Must be one of the following task types: {}.", True),
        ("Unknown kl_estimator: {}", True),  # two words, one of them an option's name
        ("OutOfDisk: System running out of disk.", True),
        ("Invalid value: {}", False),
        ("{} must be {}", False),
        ("{}ForCausalLM is not {}", False),  # a word glued to a value is no word of the template
    ],
)
def test_a_template_is_learnt_only_when_its_text_tells_the_message_apart(template: str, ok: bool) -> None:
    assert learnable(template) is ok


def test_a_line_is_the_message_when_it_holds_the_literal_parts_in_order() -> None:
    m = _message("Requested {} exceeds the limit of {} set by --max-tokens")
    assert holds(m, "ValueError: Requested 9000 exceeds the limit of 8192 set by --max-tokens")
    assert not holds(m, "ValueError: set by --max-tokens: Requested 9000 exceeds the limit of 8192")


def test_the_index_names_the_message_with_the_most_literal_text() -> None:
    short = _message("cannot allocate the KV cache for {} blocks", "vllm-insufficient-kv-cache")
    longer = _message("cannot allocate the KV cache for {} blocks: raise gpu_memory_utilization", "config-error")
    index = MessageIndex([short, longer])
    assert index.name("cannot allocate the KV cache for 12 blocks: raise gpu_memory_utilization") == longer
    assert index.name("cannot allocate the KV cache for 12 blocks") == short
    assert index.name("a healthy line about blocks") is None
    # A megabyte line is read for its start only, where a message's text is.
    assert index.name("cannot allocate the KV cache for 12 blocks " + "x" * 1_000_000) == short
    assert index.name("x" * 1_000_000 + " cannot allocate the KV cache for 12 blocks") is None


def test_a_finding_says_which_message_of_which_framework_it_is() -> None:
    report = diagnose(PEFT_LINE + "\n")
    top = report.top
    assert top is not None and top.id == "config-error"
    assert top.known_message is not None and top.known_message.startswith("peft ")
    assert "peft/tuners/unilora/config.py:" in top.known_message
    assert top.concept is None and top.confidence <= KNOWN_MESSAGE_CONFIDENCE
    assert json.loads(report.to_json())["diagnoses"][0]["known_message"] == top.known_message
    assert "known message: peft " in report.render("text")
    assert "已知消息：peft " in report.render("text", lang="zh")


def test_an_exact_pattern_of_the_line_comes_before_its_known_message() -> None:
    # DeepSpeed's ZeRO-3 check is both an exact pattern of config-error and a catalogue message.
    top = diagnose("AssertionError: zero stage 3 requires an optimizer\n").top
    assert top is not None and top.id == "config-error" and top.known_message is None


def test_a_known_message_in_a_run_that_went_on_makes_no_failure() -> None:
    log = "".join(
        [PEFT_LINE + " (ignored: the sweep's next trial runs)\n"]
        + [f"step {i} | loss {1 / (i + 1):.3f} | lr 1e-5\n" for i in range(1, 40)]
        + ["Training completed. Saving model checkpoint to /home/user/out\n"]
    )
    assert diagnose(log).top is None


def test_a_users_knowledge_base_adds_messages(tmp_path: Path) -> None:
    folder = tmp_path / "kb" / "messages"
    folder.mkdir(parents=True)
    (folder / "ourtrainer.yaml").write_text(
        "project: ourtrainer\nversion: '2.1'\nmessages:\n"
        "  - id: disk-full\n    source: ourtrainer/ckpt.py:88\n"
        "    template: 'checkpoint shard {} could not be flushed to the scratch volume'\n",
        encoding="utf-8",
    )
    top = diagnose(
        "RuntimeError: checkpoint shard 3 could not be flushed to the scratch volume\n", kb_dirs=[tmp_path / "kb"]
    ).top
    assert top is not None and top.id == "disk-full"
    assert top.known_message == "ourtrainer 2.1, ourtrainer/ckpt.py:88"


def test_a_bad_messages_file_names_its_file_line_and_field(tmp_path: Path) -> None:
    text = (
        "project: p\nversion: '1'\nmessages:\n  - id: config-error\n    source: a.py:1\n    template: '{} must be {}'\n"
    )
    found, problems = parse_messages(text, "messages/p.yaml")
    assert not found
    assert [str(p) for p in problems] == [
        "messages/p.yaml:4:5: messages[0].template: too little literal text to tell the message apart"
    ]
    folder = tmp_path / "messages"
    folder.mkdir()
    (folder / "p.yaml").write_text(
        "project: p\nversion: '1'\nmessages:\n  - id: no-such-id\n    source: a.py:1\n"
        "    template: 'the scratch volume refused shard {}'\n",
        encoding="utf-8",
    )
    with pytest.raises(KnowledgeError) as raised:
        load_knowledge([tmp_path])
    assert "p.yaml:4:5: id: no signature has the id 'no-such-id'" in str(raised.value)


def test_the_bundled_messages_are_what_the_catalogue_teaches(builtin_kb: KnowledgeBase) -> None:
    assert learn.main(["--check"]) == 0, "run `python -m scripts.catalogue.learn`"
    assert len(builtin_kb.messages) >= 2000
    assert {m.sig_id for m in builtin_kb.messages} <= {s.id for s in builtin_kb}
