"""The job, as the log describes it: framework, versions, settings, and remedies that quote them."""

from __future__ import annotations

import pytest

import rlfix
from rlfix.report import Report
from tests.conftest import FIXTURES


def _report(name: str) -> Report:
    return rlfix.diagnose(FIXTURES / name)


def _remedy(report: Report, value: str) -> rlfix.Remedy:
    assert report.top is not None
    return next(r for r in report.top.remedies if r.flag.value == value)


def test_openrlhf_old_flags_date_the_job_and_quote_current_values() -> None:
    report = _report("host-oom-sigkill--openrlhf-save.log")
    assert report.context.framework == "openrlhf"
    assert report.context.versions["deepspeed"] == "0.13.5"
    micro = _remedy(report, "--micro_train_batch_size 1")
    assert micro.applies and micro.current == "8" and micro.reason == "--micro_train_batch_size: 8 -> 1"
    # `--zero_stage` in the command line means OpenRLHF < 0.10.2: the new spelling does not apply.
    assert not _remedy(report, "--ds.grad_accum_dtype bf16").applies
    assert _remedy(report, "--grad_accum_dtype bf16").applies
    assert report.insights.stage == "checkpoint-save"


def test_simplerl_verl_overrides_and_config_dump() -> None:
    report = _report("ray-oom-killer--simplerl-verl.log")
    assert report.context.framework == "simplerl"
    assert "verl" in report.context.active_frameworks()
    free = _remedy(report, "actor_rollout_ref.rollout.free_cache_engine=False")
    assert free.current == "True" and free.reason == "actor_rollout_ref.rollout.free_cache_engine: True -> False"
    assert report.context.dumped["free_cache_engine"] == "True"
    assert report.insights.stage == "rollout"


def test_trl_plain_python_launch_is_named() -> None:
    report = _report("sampling-invalid-probabilities--trl-grpo-python.log")
    assert report.context.framework == "trl"
    launch = next(r for r in report.top.remedies if r.flag.form.value == "command")  # type: ignore[union-attr]
    assert launch.flag.value.startswith("accelerate launch")
    assert launch.reason == "this job was started with `python grpo_example.py`"


def test_vllm_version_banner_and_raising_frame() -> None:
    report = _report("cuda-illegal-memory-access--openrlhf-vllm072-buried.log")
    assert report.context.versions["vllm"] == "0.7.2"
    assert report.top is not None and report.top.values["raised_at"].endswith("sampling_metadata.py:531 in from_lists")
    assert report.insights.stage == "rollout"


def test_plain_pytorch_nccl_timeout_in_words() -> None:
    report = _report("nccl-timeout--allreduce-torchrun.log")
    assert report.context.framework == "pytorch"
    assert report.top is not None
    assert report.top.details.quantities == ("ALLREDUCE #20585 ran 600 s against a 600 s timeout",)
    assert report.insights.first_failure is not None and report.insights.first_failure.rank == 0


def test_multi_rank_log_names_the_first_failing_rank_not_torchruns_table() -> None:
    report = _report("cuda-illegal-memory-access--nccl-cascade.log")
    assert report.top is not None and report.top.id == "cuda-illegal-memory-access"
    assert report.insights.first_failure is not None and report.insights.first_failure.rank == 2
    assert "rank 0" in report.insights.collateral


def test_checkpoint_save_after_step() -> None:
    report = _report("disk-full--torchrun-save-buried.log")
    assert report.top is not None and report.top.id == "disk-full"
    assert report.insights.stage == "checkpoint-save"
    assert report.insights.last_step == 2
    assert "during checkpoint-save; after step 2; first seen on rank 0" in report.render("text")


def test_cuda_oom_quantities_are_said_in_words() -> None:
    report = _report("cuda-oom--verl-fsdp-update.log")
    assert report.top is not None
    (said,) = report.top.details.quantities
    assert said.startswith("tried to allocate ") and "in total" in said


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("ray-oom-killer--simplerl-verl.log", "node memory 958.24 GB of 1007.70 GB"),
        ("ray-oom-killer--task.log", "node memory 8.27 GB of 23.58 GB (35%)"),
        ("host-oom-sigkill--cgroup-bash-dmesg.log", "the kernel killed python (pid 21528) using 1.0 GiB"),
        ("nccl-timeout--allreduce-torchrun.log", "ALLREDUCE #20585 ran 600 s against a 600 s timeout"),
    ],
)
def test_memory_and_timeout_quantities(name: str, said: str) -> None:
    report = _report(name)
    assert report.top is not None
    assert any(s.startswith(said) for s in report.top.details.quantities), report.top.details
