from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from rlfix.api import diagnose
from rlfix.clock import wall
from rlfix.kb.load import KnowledgeBase
from tests.conftest import FIXTURES

ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"
TIMEOUT = "[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE)"
CHILD = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
ASSERT = "RuntimeError: CUDA error: device-side assert triggered"
INDEX = (
    "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [1,0,0], "
    "thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed."
)


def test_root_first_and_symptoms_folded(mini_kb: KnowledgeBase) -> None:
    log = "\n".join([f"[rank3]: {ILLEGAL}", TIMEOUT.format(r=1), TIMEOUT.format(r=2), CHILD]) + "\n"
    report = diagnose(log, kb=mini_kb)
    assert report.ids == ["t-illegal-access"]
    top = report.top
    assert top is not None
    assert [f.id for f in top.folded] == ["t-timeout", "t-child-failed"]
    assert top.first.rank == 3 and top.first.line == 1
    assert any("earliest fatal" in r for r in top.reasons)


def test_an_explained_root_that_came_first_stays_the_cause(mini_kb: KnowledgeBase) -> None:
    # The timeout happened before the illegal access: it is not collateral of it.
    log = "\n".join([TIMEOUT.format(r=1), f"[rank3]: {ILLEGAL}"]) + "\n"
    report = diagnose(log, kb=mini_kb)
    assert report.ids == ["t-timeout", "t-illegal-access"]
    assert report.diagnoses[1].confidence < report.diagnoses[0].confidence


def test_specific_assert_supersedes_generic_even_when_later(mini_kb: KnowledgeBase) -> None:
    report = diagnose(f"{ASSERT}\n{INDEX}\n", kb=mini_kb)
    assert report.ids == ["t-index-assert"]
    assert report.top is not None and report.top.values == {"kernel": "indexSelectLargeIndex"}
    assert [f.id for f in report.top.folded] == ["t-generic-assert"]


TRACEBACK = 'Traceback (most recent call last):\n  File "/app/reward.py", line 12, in score\n    x = d["r"]\n'


def test_fallback_only_without_a_specific_root(mini_kb: KnowledgeBase) -> None:
    report = diagnose(f"{TRACEBACK}ValueError: bad thing\n", kb=mini_kb)
    assert report.ids == ["t-fallback"]
    assert report.top is not None
    assert report.top.details.exception is not None and report.top.details.exception.exception == "ValueError"
    assert report.top.details.raised_at == "/app/reward.py:12 in score"
    report = diagnose(f"{TRACEBACK}ValueError: bad thing\n{ILLEGAL}\n", kb=mini_kb)
    assert report.ids == ["t-illegal-access"]


def test_exception_lines_outside_a_traceback_are_not_failures_when_the_job_goes_on(mini_kb: KnowledgeBase) -> None:
    log = "ValueError: printed by a retry loop, then recovered\nretrying\nstep 12 loss 0.41\n"
    assert diagnose(log, kb=mini_kb).ids == []


def test_a_log_that_ends_with_a_bare_exception_line_is_a_crash(mini_kb: KnowledgeBase) -> None:
    assert diagnose("step 12 loss 0.41\nValueError: bad reward\n", kb=mini_kb).ids == ["t-fallback"]


def test_interleaved_ranks_keep_their_own_tracebacks(mini_kb: KnowledgeBase) -> None:
    log = (
        "[rank0]: Traceback (most recent call last):\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/app/b.py", line 2, in g\n'
        '[rank0]:   File "/app/a.py", line 1, in f\n'
        "[rank1]: KeyError: 'reward'\n"
    )
    top = diagnose(log, kb=mini_kb).top
    assert top is not None and top.details.raised_at == "/app/b.py:2 in g" and top.first.rank == 1


def test_unknown_crash_is_never_nothing_found(mini_kb: KnowledgeBase) -> None:
    log = "step 1\nERROR worker 3: flux capacitor overheated\nERROR worker 4: flux capacitor overheated\nexited with code 3\n"
    report = diagnose(log, kb=mini_kb)
    assert report.ids == ["unrecognized-failure"]
    assert report.top is not None
    unknown = report.top.details.unrecognized
    assert unknown is not None and unknown.exit_code == "3"
    assert unknown.templates[0].to_dict() == {"template": "ERROR worker <N>: flux capacitor overheated", "count": 2}
    assert report.exit_code == 1


def test_stage_and_last_step(mini_kb: KnowledgeBase) -> None:
    log = "step: 41 loss 0.1\nstep: 42 loss 0.1\nSaving checkpoint to /ckpt\n" + f"{ILLEGAL}\n"
    report = diagnose(log, kb=mini_kb)
    assert report.insights.stage == "checkpoint-save"
    assert report.insights.last_step == 42


def test_symptom_alone_is_reported_after_roots_and_as_a_symptom(mini_kb: KnowledgeBase) -> None:
    report = diagnose(f"{CHILD}\n", kb=mini_kb)
    assert report.ids == ["t-child-failed"]
    assert report.top is not None and report.top.kind.value == "symptom"


def test_identical_errors_on_many_ranks_are_one_sample(mini_kb: KnowledgeBase) -> None:
    log = "".join(f"[rank{r}]: {ILLEGAL}\n" for r in range(8))
    top = diagnose(log, kb=mini_kb).top
    assert top is not None
    assert top.count == 8 and top.ranks == tuple(range(8)) and len(top.evidence) == 1
    assert "seen on 8 ranks" in top.reasons


def test_ray_repeat_suffix_counts(mini_kb: KnowledgeBase) -> None:
    top = diagnose(f"(WorkerDict pid=1, ip=10.0.0.1) {ILLEGAL} [repeated 7x across cluster]\n", kb=mini_kb).top
    assert top is not None and top.count == 7 and top.first.worker == "WorkerDict"


def test_confidence_is_a_probability(mini_kb: KnowledgeBase) -> None:
    report = diagnose(f"{ILLEGAL}\n{CHILD}\n{ASSERT}\n", kb=mini_kb)
    assert all(0.0 <= d.confidence <= 1.0 for d in report.diagnoses)


def test_uncaught_exception_before_a_collateral_timeout_is_the_cause(mini_kb: KnowledgeBase) -> None:
    log = f"[rank2]: {TRACEBACK}[rank2]: KeyError: 42\n{TIMEOUT.format(r=0)}\n"
    log = log.replace("  File", "[rank2]:   File").replace("    x =", "[rank2]:     x =")
    report = diagnose(log, kb=mini_kb)
    assert report.ids == ["t-fallback"]
    assert report.top is not None and [f.id for f in report.top.folded] == ["t-timeout"]
    assert report.insights.first_failure is not None and report.insights.first_failure.rank == 2


# --- time across inputs: real lines of the fixtures, in files listed in either order -------------

RAYLET = FIXTURES / "ray-oom-killer--raylet-out.log"  # memory-monitor kill at 2026-11-22 01:10:26
DEEPSPEED = FIXTURES / "host-oom-sigkill--deepspeed-launcher-cgroup.log"  # SIGKILL at 01:05:33
TORCHRUN = FIXTURES / "host-oom-sigkill--torchrun-cgroup-rank1.log"  # SIGKILL at 1122 01:04:53 (glog, no year)


def _input(tmp_path: Path, name: str, fixture: Path, through: str | None = None) -> str:
    """A copy of a fixture log under another name, cut after the first line containing `through`."""
    lines = fixture.read_text(encoding="utf-8").splitlines(keepends=True)
    if through is not None:
        lines = lines[: next(i for i, line in enumerate(lines) if through in line) + 1]
    path = tmp_path / name
    path.write_text("".join(lines), encoding="utf-8")
    return str(path)


def test_a_root_stamped_after_a_symptom_does_not_explain_it(builtin_kb: KnowledgeBase, tmp_path: Path) -> None:
    # The DeepSpeed launcher kills its workers at 01:05:33 (its log cut there); Ray's memory
    # monitor kills a worker five minutes later. The later kill did not cause the earlier one.
    launcher = _input(tmp_path, "deepspeed.log", DEEPSPEED, through="Killing subprocess 22298")
    raylet = _input(tmp_path, "raylet.out", RAYLET)
    for inputs in ([launcher, raylet], [raylet, launcher]):
        report = diagnose(inputs, kb=builtin_kb)
        assert report.ids == ["ray-oom-killer", "torch-elastic-child-failed"], inputs
        assert report.top is not None and not report.top.folded


def test_a_root_a_fraction_of_a_second_after_still_explains(builtin_kb: KnowledgeBase, tmp_path: Path) -> None:
    # The launcher's "Killing subprocess" (01:05:33,662) comes 0.1 s before its "return code = -9"
    # (01:05:33,766): the same event, within the tolerance for one machine's clocks.
    report = diagnose([_input(tmp_path, "raylet.out", RAYLET), _input(tmp_path, "ds.log", DEEPSPEED)], kb=builtin_kb)
    assert report.ids == ["host-oom-sigkill", "ray-oom-killer"]
    assert report.top is not None and [d.id for d in report.top.folded] == ["torch-elastic-child-failed"]


def test_earliest_fatal_error_is_the_earliest_by_the_clock(builtin_kb: KnowledgeBase, tmp_path: Path) -> None:
    # raylet.out is listed first, but the SIGKILL in the DeepSpeed log came five minutes earlier.
    launcher = _input(tmp_path, "deepspeed.log", DEEPSPEED)
    report = diagnose([_input(tmp_path, "raylet.out", RAYLET), launcher], kb=builtin_kb)
    top, other = report.diagnoses
    assert top.id == "host-oom-sigkill" and (top.first.source, top.first.line) == (launcher, 26)
    assert f"earliest fatal error in the log ({launcher}:26)" in top.reasons
    assert f"another fatal error came first (host-oom-sigkill at {launcher}:26)" in other.reasons
    first = report.insights.first_failure
    assert first is not None and (first.source, first.line) == (launcher, 26)


def test_a_stamp_without_a_year_takes_one_from_another_input(builtin_kb: KnowledgeBase, tmp_path: Path) -> None:
    # torchrun's glog stamps have no year; raylet.out's give it 2026, which puts the SIGKILL first.
    torchrun = _input(tmp_path, "torchrun.log", TORCHRUN)
    report = diagnose([_input(tmp_path, "raylet.out", RAYLET), torchrun], kb=builtin_kb)
    assert report.ids == ["host-oom-sigkill", "ray-oom-killer"]
    top = report.diagnoses[0]
    assert (top.first.source, top.first.line) == (torchrun, 21)
    assert top.first.time is not None and wall(top.first.time) == datetime(2026, 11, 22, 1, 4, 53, 15000)
    assert top.first.timestamp == "1122 01:04:53.015000"  # the string stays as the log wrote it


def test_a_findings_earliest_line_leads_its_evidence(builtin_kb: KnowledgeBase, tmp_path: Path) -> None:
    # The same SIGKILL finding in two inputs: the later-listed one happened 40 s earlier.
    launcher = _input(tmp_path, "deepspeed.log", DEEPSPEED)
    torchrun = _input(tmp_path, "torchrun.log", TORCHRUN)
    report = diagnose([launcher, torchrun], kb=builtin_kb)
    assert report.top is not None and report.top.id == "host-oom-sigkill"
    assert [(e.source, e.line) for e in report.top.evidence][:2] == [(torchrun, 21), (launcher, 26)]


AUTOSCALER = (
    "(autoscaler +{s}s) Warning: The following resource request cannot be scheduled right now: "
    "{{'CPU': 1.0, 'GPU': 1.0}}. This is likely due to all cluster resources being claimed by actors."
)
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.64 GiB. GPU 3 has a total capacity of 79.14 GiB"
GET_TIMEOUT = "ray.exceptions.GetTimeoutError: Get timed out: some object(s) not ready."


def _job(steps: int, end: list[str]) -> str:
    """A job that printed Ray's autoscaler warning at start-up, then `steps` steps, then `end`."""
    lines = [AUTOSCALER.format(s=19), AUTOSCALER.format(s=49)]
    for step in range(steps):
        lines.append(f"(TaskRunner pid=2210) step:{step} - actor/pg_loss:0.01 - timing_s/step:{60 + step}")
        lines.append(AUTOSCALER.format(s=79 + 30 * step))
    return "\n".join([*lines, "Traceback (most recent call last):", '  File "/app/main_ppo.py", line 64', *end]) + "\n"


def test_a_root_the_job_went_on_after_is_not_what_stopped_it() -> None:
    for text in (_job(40, [OOM]), _job(3, [OOM])):
        report = diagnose(text)
        assert report.ids[:2] == ["cuda-oom", "ray-unschedulable"], report.ids
        top, second = report.diagnoses[:2]
        assert any(r.startswith("earliest fatal error the job did not go on after") for r in top.reasons)
        assert "the job went on after it (from before the first step to step" in " ".join(second.reasons)
        assert second.confidence < top.confidence
        assert not any("another fatal error came first" in r for r in second.reasons)
    # Lines fed one by one are judged the same way.
    assert diagnose(_job(40, [OOM]).splitlines()).ids[:2] == ["cuda-oom", "ray-unschedulable"]


def test_a_job_that_only_reached_its_first_step_did_not_go_on() -> None:
    # The other ranks print the step the job was in when it failed: that is not going on.
    report = diagnose(_job(2, [OOM]))
    assert report.ids[:2] == ["ray-unschedulable", "cuda-oom"]
    assert not any("went on" in r for d in report.diagnoses for r in d.reasons)


def test_steps_going_on_alone_do_not_clear_the_only_root() -> None:
    # Rollout workers step on while the reward actor waits for a GPU forever; then a get times out.
    report = diagnose(_job(40, [GET_TIMEOUT]))
    assert report.ids[0] == "ray-unschedulable"
    assert report.top is not None and report.top.confidence >= 0.9
    assert not any("went on" in r for r in report.top.reasons)


def test_step_numbers_in_no_order_say_nothing() -> None:
    # Two counters mixed (or lines in no order): no steady count, so no root is taken as outlived.
    text = _job(40, [OOM])
    scrambled = re.sub(r"step:(\d+) ", lambda m: f"step:{int(m.group(1)) * 17 % 40} ", text)
    assert scrambled != text
    report = diagnose(scrambled)
    assert report.ids[:2] == ["ray-unschedulable", "cuda-oom"]
    assert not any("went on" in r for d in report.diagnoses for r in d.reasons)


def test_a_live_report_drops_a_last_step_that_no_longer_holds() -> None:
    from rlfix.core import Triage

    triage = Triage()
    triage.feed_lines(_job(40, [OOM]).splitlines())
    assert triage.report().ids[:2] == ["cuda-oom", "ray-unschedulable"]
    # Then another counter's numbers: the steps no longer read as one loop, so no verdict stands.
    triage.feed_lines([f"iteration {n} of the reward loop" for n in (900, 3, 700, 5, 2)])
    assert triage.report().ids[:2] == ["ray-unschedulable", "cuda-oom"]
