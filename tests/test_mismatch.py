"""conclude/mismatch.py: exceptions between two packages read as a version mismatch naming both."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlfix
from rlfix.kb.load import load_knowledge

TRL_VLLM = (
    "trl==0.19.0\nvllm==0.7.2\nTraceback (most recent call last):\n"
    '  File "/usr/lib/python3/dist-packages/trl/scripts/vllm_serve.py", line 238, in main\n    llm = LLM(\n'
    '  File "/usr/lib/python3/dist-packages/vllm/entrypoints/llm.py", line 212, in __init__\n'
    "    engine_args = EngineArgs(\n"
    "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_extension_cls'\n"
)


def test_both_packages_their_versions_and_the_pin_are_named() -> None:
    report = rlfix.diagnose(TRL_VLLM)
    assert report.ids == ["package-version-mismatch"]
    mismatch = report.top.details.mismatch  # type: ignore[union-attr]
    assert mismatch is not None
    assert (mismatch.caller, mismatch.caller_version, mismatch.callee, mismatch.callee_version) == (
        "trl",
        "0.19.0",
        "vllm",
        "0.7.2",
    )
    assert mismatch.wanted == ">=0.8.3" and "trl setup.cfg @ v0.19.0" in (mismatch.wanted_source or "")
    assert "trl 0.19.0 calls vllm 0.7.2" in report.render("text")
    assert report.to_dict()["diagnoses"][0]["details"]["mismatch"]["callee"] == "vllm"


@pytest.mark.parametrize(
    ("frames", "line"),
    [
        (
            ("/x/site-packages/verl/workers/rollout.py", "/x/site-packages/vllm/worker/worker.py"),
            "AttributeError: module 'vllm.worker' has no attribute 'Worker'",
        ),
        (
            ("/x/site-packages/openrlhf/trainer/ppo.py",),
            "ImportError: cannot import name 'get_scheduler' from 'deepspeed'",
        ),
        (
            ("/repo/verl/verl/trainer/main.py",),
            "ModuleNotFoundError: No module named 'vllm.model_executor.models.qwen2'",
        ),
    ],
)
def test_other_shapes_of_a_mismatch(frames: tuple[str, ...], line: str) -> None:
    log = "Traceback (most recent call last):\n"
    log += "".join(f'  File "{f}", line 1, in f\n    x()\n' for f in frames) + line + "\n"
    assert rlfix.diagnose(log).ids == ["package-version-mismatch"], rlfix.diagnose(log).render("text")


@pytest.mark.parametrize(
    "line",
    [
        "TypeError: unsupported operand type(s) for +: 'int' and 'str'",  # a bug, not an API mismatch
        "AttributeError: 'NoneType' object has no attribute 'shape'",
        "KeyError: 'answer'",
    ],
)
def test_ordinary_bugs_stay_python_exceptions(line: str) -> None:
    log = (
        'Traceback (most recent call last):\n  File "/app/train.py", line 3, in <module>\n'
        '  File "/x/site-packages/trl/trainer/grpo_trainer.py", line 9, in step\n    f()\n' + line + "\n"
    )
    assert rlfix.diagnose(log).ids == ["python-exception"]


def test_user_code_calling_a_library_is_not_a_mismatch_without_a_named_package() -> None:
    log = (
        'Traceback (most recent call last):\n  File "/app/train.py", line 3, in <module>\n    f(x=1)\n'
        "TypeError: f() got an unexpected keyword argument 'x'\n"
    )
    assert rlfix.diagnose(log).ids == ["python-exception"]


def test_pins_are_loaded_and_well_formed() -> None:
    kb = load_knowledge()
    assert {"trl", "verl", "openrlhf", "nemo-rl"} <= {p.framework for p in kb.pins}
    assert all(p.source and p.requires for p in kb.pins)


def test_a_malformed_pins_file_is_one_located_error(tmp_path: Path) -> None:
    from rlfix.errors import KnowledgeError

    (tmp_path / "pins.yaml").write_text(
        "pins:\n  - {framework: trl, version: '1.0', requires: {vllm: latest}, source: x}\n"
    )
    with pytest.raises(KnowledgeError, match=r"pins.yaml:2:\d+: pins\[0\].requires"):
        load_knowledge([tmp_path])
