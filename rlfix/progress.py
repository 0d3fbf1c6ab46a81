"""Where the job was when it failed: its stage (model load, rollout, training, ...) and last step."""

from __future__ import annotations

from collections import deque

import regex

from rlfix.context import _pattern
from rlfix.match import Hit, Probe

STAGE = "@stage"
STEP = "@step"

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
_STEP = r"(?i)\b(?:global_step|step|iteration)(?:\s*[:=]\s*|\s+)(?P<step>\d{1,9})\b"

#: Markers remembered; consecutive repeats of one stage count once.
MAX_MARKERS = 10_000


def progress_probes() -> list[Probe]:
    probes = [
        Probe(f"{STAGE}:{name}", _pattern("(?:" + "|".join(regex.escape(m) for m in markers) + ")", markers))
        for name, markers in STAGES
    ]
    probes.append(Probe(STEP, _pattern(_STEP, ("step", "iteration"))))
    return probes


class ProgressTracker:
    """Stage markers and step numbers in log order, so the state at any moment can be recovered."""

    def __init__(self) -> None:
        self._stages: deque[tuple[int, str]] = deque(maxlen=MAX_MARKERS)
        self._steps: deque[tuple[int, int]] = deque(maxlen=MAX_MARKERS)

    def observe(self, hit: Hit, seq: int) -> None:
        if hit.probe.owner == STEP:
            step = int(hit.match.group("step"))
            if not self._steps or self._steps[-1][1] != step:
                self._steps.append((seq, step))
            return
        stage = hit.probe.owner.split(":", 1)[1]
        if not self._stages or self._stages[-1][1] != stage:
            self._stages.append((seq, stage))

    @staticmethod
    def stage_named_in(texts: list[str]) -> str | None:
        """A stage named by the failing lines themselves (Ray names the task it killed)."""
        for text in texts:
            for stage, markers in STAGES:
                if any(m in text for m in markers):
                    return stage
        return None

    def stage_at(self, seq: int) -> str | None:
        """The last stage marker seen before position `seq`."""
        found = None
        for at, stage in self._stages:
            if at > seq:
                break
            found = stage
        return found

    def step_at(self, seq: int) -> int | None:
        """The largest step number printed before position `seq`."""
        best = None
        for at, step in self._steps:
            if at > seq:
                break
            best = step if best is None else max(best, step)
        return best
