"""A crash is read from the end of the log (issue 10, item 2): short pastes, tails, healthy endings."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlfix
from rlfix.observe.tail import went_on


@pytest.mark.parametrize(
    ("paste", "expected", "exception"),
    [
        ("ZeroDivisionError: division by zero", "python-exception", "ZeroDivisionError"),
        (
            '  File "/app/reward.py", line 3, in score\n    return a / b\nZeroDivisionError: division by zero',
            "python-exception",
            "ZeroDivisionError",
        ),
        ("[rank3]: KeyError: 'answer'", "python-exception", "KeyError"),
        (
            "2025-01-02 10:00:01,123 ERROR worker.py:12 -- RuntimeError: reward server returned 500",
            "python-exception",
            "RuntimeError",
        ),
        ("(TaskRunner pid=12) ValueError: bad config value", "python-exception", "ValueError"),
    ],
)
def test_a_bare_last_exception_is_diagnosed(paste: str, expected: str, exception: str) -> None:
    for text in (paste, paste + "\n"):  # with and without a final newline
        report = rlfix.diagnose(text)
        assert report.ids[:1] == [expected], report.render("text")
        assert report.top is not None and report.top.details.exception is not None
        assert report.top.details.exception.exception == exception


@pytest.mark.parametrize(
    "log",
    [
        "KeyError: 'x'\nretrying the batch\nstep 5 loss 0.3\n",
        "RuntimeError: transient read error, will be retried\nflaky task: ok\ntraining finished\n",
        "ValueError: skipped a bad sample\n" + "".join(f"{{'loss': 0.{i}, 'epoch': 1}}\n" for i in range(5)),
    ],
)
def test_an_exception_the_job_went_on_after_is_not_a_crash(log: str) -> None:
    assert rlfix.diagnose(log).ids == []


def test_an_error_line_at_the_end_is_an_unrecognised_failure() -> None:
    report = rlfix.diagnose("step 1 loss 0.3\nERROR: reward service unreachable, giving up\n")
    assert report.ids == ["unrecognized-failure"]
    assert "giving up" in report.top.evidence[0].text  # type: ignore[union-attr]


def test_the_word_error_in_progress_output_is_not_a_failure() -> None:
    assert rlfix.diagnose("step 1 loss 0.3 error_rate 0.01\neval: 0 errors\nstep 2 loss 0.2\n").ids == []


def test_teardown_after_the_error_still_counts_as_the_end() -> None:
    log = (
        "ValueError: reward must be finite\n"
        "wandb: Waiting for W&B process to finish... (failed 1).\n"
        "wandb: 🚀 View run at https://wandb.ai/x\n"
        "[2025-01-01 10:00:00,000] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 12 closing signal SIGTERM\n"
    )
    assert rlfix.diagnose(log).ids[:1] == ["python-exception"]


@pytest.mark.parametrize(
    ("after", "on"),
    [
        (b"", False),
        (b'  File "x.py", line 1, in f\n    raise E\n', False),
        (b"wandb: Run summary:\nwandb:   loss 0.3\n", False),
        (b"step 5 loss 0.3\n", True),
        (b"training finished\n", True),
        (b"some quiet line\n" * 70, True),
    ],
)
def test_went_on(after: bytes, on: bool) -> None:
    assert went_on(after) is on


def test_lines_fed_one_by_one_follow_the_same_rule() -> None:
    t = rlfix.Triage()
    t.feed("KeyError: 'x'")
    assert t.report().ids == ["python-exception"]
    t.feed("step 5 loss 0.3")
    assert t.report().ids == []


@pytest.mark.parametrize(
    ("paste", "expected"),
    [
        ("ZeroDivisionError: division by zero", "python-exception"),
        ("RuntimeError: CUDA capability sm_90 is not compatible with this build", "cuda-driver-or-arch-mismatch"),
        ("[1] 18472 segmentation fault (core dumped)  python train.py", "native-crash"),
        ("ImportError: libcudart.so.11.0: cannot open shared object file", "cuda-runtime-library-missing"),
        ("step 3 | loss = nan\nNaN detected in loss, aborting.", "nan-or-inf-loss"),
        ("Killed", "host-oom-sigkill"),
    ],
)
def test_the_short_pastes_users_send(paste: str, expected: str) -> None:
    """Issue 10's list of short pastes: each gets the right diagnosis, through the installed CLI too."""
    assert rlfix.diagnose(paste + "\n").ids[:1] == [expected]


def test_a_healthy_log_with_warnings_exits_0_and_says_so_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    log = tmp_path / "train.log"
    log.write_text(
        "Token indices sequence length is longer than the specified maximum sequence length for this model "
        "(564 > 512). Running this sequence through the model will result in indexing errors\n"
        "step 1 loss 0.5\nstep 2 loss 0.4\ntraining finished\n"
    )
    proc = subprocess.run([sys.executable, "-m", "rlfix", "diagnose", str(log)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.startswith("rlfix: no failure recognised") and "worth knowing" in proc.stdout.splitlines()[0]
