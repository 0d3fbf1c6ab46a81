"""A Report is a snapshot: what a Triage sees after `report()` never changes a report already made."""

from __future__ import annotations

from rlfix.core import Triage

OOM = "RuntimeError: CUDA error: an illegal memory access was encountered"


def test_report_does_not_change_when_more_lines_arrive() -> None:
    triage = Triage()
    triage.feed("INFO 03-02 10:00:00 llm_engine.py:234] Initializing an LLM engine (v0.6.3) with config")
    triage.feed("$ python -m openrlhf.cli.train_ppo_ray --zero_stage 2 --micro_rollout_batch_size 8")
    triage.feed(OOM)
    before = triage.report()
    frozen_json = before.to_json()
    frozen_context = before.context.to_dict()
    triage.feed("vllm==0.7.2")
    triage.feed("--micro_rollout_batch_size 16 --actor_num_gpus_per_node 8")
    triage.feed("Traceback (most recent call last):")
    triage.feed("KeyError: 'answer'")
    triage.feed("NVIDIA H100 80GB HBM3")
    after = triage.report()
    assert before.to_json() == frozen_json
    assert before.context.to_dict() == frozen_context
    assert before.context.versions["vllm"] == "0.6.3"
    assert after.context.versions["vllm"] == "0.6.3"  # the first version seen wins
    assert after.to_json() != frozen_json


def test_asking_for_a_report_changes_nothing() -> None:
    triage = Triage()
    triage.feed("$ python -m openrlhf.cli.train_ppo_ray --zero_stage 2")
    triage.feed(OOM)
    first = triage.report().to_json()
    assert triage.report().to_json() == first
    assert triage.report().to_json() == first


def test_report_parts_are_not_the_triage_s_own_objects() -> None:
    triage = Triage()
    triage.feed("--micro_rollout_batch_size 8")
    triage.feed(OOM)
    report = triage.report()
    assert report.context.settings is not triage.context.settings
    assert report.timeline is not triage.observations().timeline or isinstance(report.timeline, tuple)
    assert isinstance(report.diagnoses, tuple) and isinstance(report.top.evidence, tuple)  # type: ignore[union-attr]
