"""Where the job was when it failed: its stage (model load, rollout, training, ...) and last step."""

from __future__ import annotations

import re

# Markers are names that frameworks print or that appear in the frames of a failing traceback.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "start-up",
        ("Started a local Ray instance", "Connecting to existing Ray cluster", "init_process_group"),
    ),
    (
        "model-load",
        ("Loading checkpoint shards", "from_pretrained", "Loading model weights", "load_state_dict"),
    ),
    (
        "rollout",
        (
            "generate_sequences",
            "Processed prompts",
            "SamplingTensors",
            "execute_model",
            "_generate_minibatch",
            "make_experience",
        ),
    ),
    ("weight-sync", ("update_weight", "broadcast_to_vllm", "sync_weight", "_sync_params", "load_weights")),
    (
        "training",
        (
            "update_actor",
            "update_critic",
            "update_policy",
            "ppo_train",
            "training_step",
            "optimizer.step",
            ".backward(",
        ),
    ),
    (
        "checkpoint-save",
        (
            "save_checkpoint",
            "Saving checkpoint",
            "saving checkpoint",
            "Saving model",
            "save_pretrained",
            "save_model",
            "torch.save",
            # Frames of torch.save / safetensors save in a failing traceback.
            ", in save",
            ", in _save",
        ),
    ),
    ("evaluation", ("Running evaluation", "_validate", "evaluation_loop", "run_validation")),
)
_STEP = re.compile(rb"(?i)\b(?:global_step|step|iteration)(?:\s*[:=]\s*|\s+)(\d{1,9})\b")
_MARKERS = tuple((stage, marker.encode()) for stage, markers in STAGES for marker in markers)
#: Tails of the look-back window searched for the last step, smallest first (most logs print
#: a step line every few seconds, so the first tail almost always has one).
_STEP_TAILS = (64 * 1024, 1024 * 1024)
_MARKER_TAIL = 1024 * 1024


def snapshot(window: bytes) -> tuple[str | None, int | None]:
    """The stage and the last step printed in `window`, the text just before a failure.

    Looking back from the failure, once, costs nothing per line of the log: markers and step
    numbers are not tracked while scanning. A step line printed after the last stage marker
    means the job had moved on to training steps.
    """
    stage, at = None, -1
    # Most failures come right after their stage's marker: search a short tail first.
    for base in (max(0, len(window) - _MARKER_TAIL), 0):
        for name, marker in _MARKERS:
            pos = window.rfind(marker, base)
            if pos > at:
                stage, at = name, pos
        if stage is not None or base == 0:
            break
    step, step_at = None, -1
    for size in (*_STEP_TAILS, len(window)):
        base = max(0, len(window) - size)
        found = list(_STEP.finditer(window, base))
        if found:
            step, step_at = int(found[-1].group(1)), found[-1].start()
            break
        if base == 0:
            break
    if step_at > at and stage not in (None, "training"):
        stage = "training"
    return stage, step


def stage_named_in(texts: list[str]) -> str | None:
    """A stage named by the failing lines themselves (Ray names the task it killed)."""
    for text in texts:
        for stage, markers in STAGES:
            if any(m in text for m in markers):
                return stage
    return None
