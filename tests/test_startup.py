"""What healthy runs print while they start and stop is never a failure (issue 25, item 5).

fixtures/startup/ holds real start-up and teardown output of each framework (vLLM, SGLang, verl,
DeepSpeed, Megatron, NeMo-RL, TRL, Ray), each with its source. Optional imports that fail and are
handled, deprecation warnings, NCCL's hang warnings, an operator's SIGTERM and the teardown after
it all appear there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rlfix.api import diagnose
from rlfix.conclude.handled import handled_probe
from rlfix.model import Evidence

STARTUP = Path(__file__).resolve().parent.parent / "fixtures" / "startup"
LOGS = sorted(STARTUP.glob("*.log"))
CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"


def test_the_corpus_covers_the_stacks() -> None:
    frameworks = {p.name.split("-")[0] for p in LOGS}
    assert {"vllm", "sglang", "verl", "deepspeed", "megatron", "nemo", "trl", "ray"} <= frameworks
    for log in LOGS:
        assert log.with_suffix(".sources.md").is_file(), f"{log.name} has no .sources.md"


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_a_healthy_start_or_stop_is_not_a_failure(log: Path) -> None:
    report = diagnose(log)
    assert not report.failed, [(d.id, d.evidence[0].line, d.evidence[0].text[:120]) for d in report.diagnoses]
    assert report.exit_code == 0


def _line(text: str, message: str) -> Evidence:
    return Evidence("x.log", 1, text, message)


@pytest.mark.parametrize(
    ("text", "message", "probe"),
    [
        (
            "(EngineCore pid=1) WARNING 06-25 16:32:09 [import_utils.py:408] ImportError: libnvrtc.so.13: "
            "cannot open shared object file: No such file or directory",
            "ImportError: libnvrtc.so.13: cannot open shared object file: No such file or directory",
            True,
        ),
        (
            "[2026-02-09 13:22:57] Ignore import error when loading sglang.srt.models.glmasr: cannot import name "
            "'GlmAsrConfig' from 'transformers'",
            "Ignore import error when loading sglang.srt.models.glmasr: cannot import name 'GlmAsrConfig' from "
            "'transformers'",
            True,
        ),
        (
            "W1122 00:56:32.007000 6302 x.py:10] No module named 'apex', falling back to torch",
            "No module named 'apex', falling back to torch",
            True,
        ),
        # Raised for real: a traceback's last line, an ERROR-level line.
        (
            "ImportError: cannot import name 'GlmAsrConfig' from 'transformers'",
            "ImportError: cannot import name 'GlmAsrConfig' from 'transformers'",
            False,
        ),
        (
            "ERROR 06-25 16:32:09 [core.py:12] ModuleNotFoundError: No module named 'vllm._C'",
            "ModuleNotFoundError: No module named 'vllm._C'",
            False,
        ),
        ("WARNING 06-25 16:32:09 [x.py:1] CUDA out of memory", "CUDA out of memory", False),
    ],
)
def test_handled_import_probes(text: str, message: str, probe: bool) -> None:
    assert handled_probe(_line(text, message)) is probe


def test_an_import_error_raised_after_the_probe_is_still_the_cause() -> None:
    log = (
        "WARNING 06-25 16:32:09 [import_utils.py:408] ImportError: libnvrtc.so.13: cannot open shared object file\n"
        "INFO loading model\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "ImportError: libnvrtc.so.13: cannot open shared object file: No such file or directory\n"
    )
    report = diagnose(log.encode())
    assert report.failed and report.top is not None
    assert report.top.id == "cuda-runtime-library-missing"


def test_errors_after_an_operators_stop_are_teardown() -> None:
    teardown = (
        "[00:17:43] SIGTERM received. signum=None frame=None. Draining requests and shutting down...\n"
        "[00:17:43] Subprocess detokenizer (pid=31379) crashed with exit code -15. Triggering SIGQUIT for cleanup...\n"
        "[00:17:43] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n"
    )
    assert not diagnose(("step 1\n" + teardown).encode()).failed
    # Without the stop, the same lines are an unrecognised failure; a known root stays whatever follows.
    assert diagnose(("step 1\n" + teardown.split("\n", 1)[1]).encode()).failed
    assert diagnose(f"step 1\n{CUDA}\n{teardown}".encode()).ids[0] == "cuda-illegal-memory-access"


def test_a_raised_import_error_naming_what_is_missing_is_no_probe() -> None:
    message = (
        "ImportError: vLLM is not available and `use_vllm` is set to True. Please install vLLM with "
        "`pip install trl[vllm]` to use it."
    )
    assert not handled_probe(_line(message, message))
    ignored = "ImportError: flash_attn could not be imported (ignored)"
    assert not handled_probe(_line(ignored, ignored))  # raised: the words after it do not make it handled
