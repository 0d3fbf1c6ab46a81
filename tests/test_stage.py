"""observe/progress.py: stage and last step read by looking back from a failure (table of cases)."""

from __future__ import annotations

import pytest

from rlfix.observe.progress import snapshot, stage_named_in


@pytest.mark.parametrize(
    ("window", "stage", "step"),
    [
        (b"Loading checkpoint shards: 100%\n", "model-load", None),
        (b"step 41 loss 0.3\nstep 42 loss 0.2\nsave_checkpoint to /ckpt\n", "checkpoint-save", 42),
        (b"generate_sequences start\nglobal_step: 7\n", "training", 7),
        (b"Processed prompts: 50%\n", "rollout", None),
        (b"iteration 1200 | lr 1e-5\n", None, 1200),
        (b"nothing to see\n", None, None),
        (b"", None, None),
    ],
)
def test_snapshot(window: bytes, stage: str | None, step: int | None) -> None:
    assert snapshot(window) == (stage, step)


@pytest.mark.parametrize(
    ("texts", "stage"),
    [
        (["Task failed: WorkerDict.actor_rollout_generate_sequences"], "rollout"),
        (['File "/app/trainer.py", line 3, in save_checkpoint'], "checkpoint-save"),
        (["RuntimeError: boom"], None),
    ],
)
def test_stage_named_in_failing_lines(texts: list[str], stage: str | None) -> None:
    assert stage_named_in(texts) == stage
