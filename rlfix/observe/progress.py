"""Where the job was when it failed: its stage (model load, rollout, training, ...) and last step."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping

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
# Not a metric's path ending in /step or /iteration: verl's `timing_s/step:41.2` is a duration.
_STEP = re.compile(rb"(?i)\b(?:global_step|(?<!/)step|(?<!/)iteration)(?:\s*[:=]\s*|\s+)(\d{1,9})\b")
#: `_STEP` for lower-cased text, but for what precedes the word (`_step_starts`): a pattern that
#: begins with its words is searched several times faster.
_STEP_WORDS = re.compile(rb"(?:step|iteration)(?:\s*[:=]\s*|\s+)(\d{1,9})\b")
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


#: How far back from an input's end its last steps are looked for: a job that died can go on
#: printing (vLLM metrics, NCCL watchdog waits) for megabytes after its last step line.
LAST_STEP_REACH = 32 * 1024 * 1024
#: Step lines read to tell a training loop's counter: they must not go down.
STEADY_STEPS = 5
_CHUNK = 1024 * 1024


def recent_steps(
    read: Callable[[int, int], bytes], size: int, reach: int = LAST_STEP_REACH, count: int = STEADY_STEPS
) -> list[int]:
    """The last `count` step numbers (or fewer) printed within the final `reach` bytes of an input
    of `size` bytes, oldest first, read backwards a mebibyte at a time via `read(position, count)`."""
    steps: list[int] = []
    end = size
    while end > 0 and size - end < reach and len(steps) < count:
        start = max(0, end - _CHUNK)
        # The step lines that begin in this chunk, whole (read a little past its end for that).
        # Lower-cased, most chunks (vLLM metrics, NCCL waits) are ruled out by two fast searches.
        text = read(start, min(size, end + 256) - start).lower()
        found = []
        if b"step" in text or b"iteration" in text:
            found = [
                int(m.group(1))
                for m in _STEP_WORDS.finditer(text)
                if m.start() < end - start and _step_starts(text, m.start())
            ]
        steps[:0] = found[-(count - len(steps)) :]
        end = start
    return steps


def _step_starts(text: bytes, at: int) -> bool:
    """Whether the step word at `at` of lower-cased `text` starts a step as `_STEP` reads it: a
    word of its own (`global_step` one too), and `step`/`iteration` not after a `/`."""
    before = text[at - 1 : at]
    if before == b"_" and text[max(0, at - 7) : at] == b"global_" and text.startswith(b"step", at):
        before = text[at - 8 : at - 7] if at >= 8 else b""
        return not (before.isalnum() or before == b"_")
    return not (before.isalnum() or before in (b"_", b"/"))


def steady(steps: list[int]) -> bool:
    """Whether step numbers read like one training loop's counter: some, and never going down.
    (Two counters mixed, or a log of lines in no order, say nothing about how far a job got.)"""
    return bool(steps) and all(a <= b for a, b in itertools.pairwise(steps))


#: Steps past the last one printed before a root cause (or past step 0, when none was) that
#: show the job went on after it.
STEPS_BEYOND = 2


class StepWatch:
    """Whether a job went on after a root cause: the steps printed last before the root's first
    line, against those printed last near the end of the same input."""

    def __init__(self) -> None:
        # Per root: its input and the step before it (None: none yet; -1: no steady counter).
        self._before: dict[str, tuple[str, int | None]] = {}
        self._last: dict[str, int] = {}

    def root(self, owner: str, source: str, window: bytes) -> None:
        """A root cause first showed in `source`, `window` being what was printed before it."""
        steps = recent_steps(lambda at, n: window[at : at + n], len(window))
        self._before[owner] = (source, None if not steps else steps[-1] if steady(steps) else -1)

    def wants(self, source: str) -> bool:
        """Whether a root cause first showed in this input (only then do its last steps matter)."""
        return any(at == source for at, _ in self._before.values())

    def ended(self, source: str, read: Callable[[int, int], bytes], size: int) -> None:
        """The input ended after `size` bytes, readable through `read(position, count)`."""
        if self.wants(source):
            steps = recent_steps(read, size)
            # Lines fed one by one are judged at each report: a later verdict replaces an earlier one.
            if steady(steps):
                self._last[source] = steps[-1]
            else:
                self._last.pop(source, None)

    def went_on(self, first_sources: Mapping[str, str]) -> dict[str, tuple[int | None, int]]:
        """Per root (whose first line is in `first_sources[owner]`) the job went on after: the step
        before it (None: none yet) and the last step."""
        out = {}
        for owner, (source, before) in self._before.items():
            last = self._last.get(source)
            if first_sources.get(owner) != source or last is None or before == -1:
                continue
            # The other ranks may still print the step the failing one died in, and the next if
            # that one had not printed its own yet: going on means a whole step beyond both.
            if last >= (before if before is not None else 0) + STEPS_BEYOND:
                out[owner] = (before, last)
        return out
