from __future__ import annotations

from rlfix.api import diagnose
from rlfix.kb.load import KnowledgeBase

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
