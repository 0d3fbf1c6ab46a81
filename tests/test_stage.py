"""observe/progress.py: stage and last step read by looking back from a failure (table of cases)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rlfix.observe.progress import _STEP, STEADY_STEPS, recent_steps, snapshot, stage_named_in, steady


@pytest.mark.parametrize(
    ("window", "stage", "step"),
    [
        (b"Loading checkpoint shards: 100%\n", "model-load", None),
        (b"step 41 loss 0.3\nstep 42 loss 0.2\nsave_checkpoint to /ckpt\n", "checkpoint-save", 42),
        (b"generate_sequences start\nglobal_step: 7\n", "training", 7),
        (b"Processed prompts: 50%\n", "rollout", None),
        (b"iteration 1200 | lr 1e-5\n", None, 1200),
        # verl's step line ends with how long the step took: `timing_s/step` is seconds, not a step.
        (b"step:12 - actor/pg_loss:0.1 - timing_s/step:774\n", None, 12),
        (b"train/global_step: 30 - loss 0.2\n", None, 30),
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


def test_last_steps_are_found_megabytes_before_the_end() -> None:
    # After a crash, vLLM's metrics can go on for megabytes with no step line.
    metrics = b"INFO 03-25 12:47:45 metrics.py:351] Avg prompt throughput: 7482.6 tokens/s\n" * 60_000
    steps = b"".join(b"step:%d - loss 0.3 - timing_s/step:99\n" % n for n in range(38, 43))
    text = steps + metrics
    assert len(metrics) > 4 * 1024 * 1024

    def read(at: int, n: int) -> bytes:
        return text[at : at + n]

    assert recent_steps(read, len(text)) == [38, 39, 40, 41, 42]
    assert recent_steps(read, len(text), count=2) == [41, 42]
    assert recent_steps(read, len(text), reach=1024 * 1024) == []
    assert recent_steps(read, 0) == []


def test_step_lines_cut_by_a_chunk_boundary_are_read_once() -> None:
    # The last mebibyte starts 3 bytes into `step:7`: the earlier chunk reads it whole.
    text = b"step:7\n" + b"y" * (1024 * 1024 - 12) + b"\n" + b"step:8\n"
    assert len(text) - 1024 * 1024 == 3
    assert recent_steps(lambda at, n: text[at : at + n], len(text)) == [7, 8]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [([1, 2, 2, 5], True), ([7], True), ([], False), ([3, 9, 4], False), ([120, 3], False)],
)
def test_a_steady_counter_never_goes_down(steps: list[int], expected: bool) -> None:
    assert steady(steps) is expected


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(["step", "Step", "global_", "iteration", "/", "_", "x", " ", ":", "=", "7", "42", "\n"]))
)
@example(["global_", "iteration", " ", "7"])
def test_recent_steps_read_steps_as_the_snapshot_does(parts: list[str]) -> None:
    text = "".join(parts).encode()
    expected = [int(m.group(1)) for m in _STEP.finditer(text)][-STEADY_STEPS:]
    assert recent_steps(lambda at, n: text[at : at + n], len(text)) == expected
