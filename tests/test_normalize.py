from __future__ import annotations

import pytest

from rlfix.match.normalize import clean, normalize


@pytest.mark.parametrize(
    ("raw", "message", "fields"),
    [
        (
            "[default0]:[rank12]:[E602 11:29:52.185468213 ProcessGroupNCCL.cpp:632] [Rank 12] Watchdog caught",
            "[Rank 12] Watchdog caught",
            {"rank": 12, "level": "ERROR"},
        ),
        (
            "\x1b[36m(WorkerDict pid=417, ip=10.80.11.200)\x1b[0m RuntimeError: boom [repeated 7x across cluster]",
            "RuntimeError: boom",
            {"worker": "WorkerDict", "pid": 417, "node": "10.80.11.200", "repeat": 7},
        ),
        (
            "(LLMRayActor pid=7) (EngineCore_DP0 pid=9) ERROR 06-20 09:14:48 [core.py:515] EngineCore failed",
            "EngineCore failed",
            {"worker": "LLMRayActor > EngineCore_DP0", "pid": 9, "level": "ERROR"},
        ),
        ("ERROR 02-25 11:11:34 engine.py:139] RuntimeError: x", "RuntimeError: x", {"level": "ERROR"}),
        (
            "(raylet) node_manager.cc:3000: 1 Workers killed",
            "node_manager.cc:3000: 1 Workers killed",
            {"worker": "raylet"},
        ),
        (
            "(autoscaler +1m55s) Error: No available node types",
            "Error: No available node types",
            {"worker": "autoscaler"},
        ),
        ("[rank4]: Traceback (most recent call last):", "Traceback (most recent call last):", {"rank": 4}),
        (
            "[2024-01-01 10:00:00,123] [ERROR] [launch.py:325:sigkill_handler] exits with return code = -9",
            "exits with return code = -9",
            {"level": "ERROR", "timestamp": "2024-01-01 10:00:00,123"},
        ),
        (
            "W0618 10:59:58.412000 2119 torch/distributed/run.py:792] Setting OMP_NUM_THREADS",
            "Setting OMP_NUM_THREADS",
            {"level": "WARNING"},
        ),
        (
            "2024-08-01 10:00:00,123\tINFO worker.py:1781 -- Started a local Ray instance.",
            "Started a local Ray instance.",
            {"level": "INFO"},
        ),
        ("(VllmWorker rank=0 pid=5) INFO 02-25 11:11:34 x.py:1] hi", "hi", {"rank": 0, "worker": "VllmWorker"}),
        (
            "[  446.560738] Memory cgroup out of memory: Killed process 7",
            "Memory cgroup out of memory: Killed process 7",
            {"timestamp": "446.560738"},
        ),
        (
            "[Thu Aug 21 02:20:57 2025] NVRM: Xid (PCI:0000:9d:00): 79",
            "NVRM: Xid (PCI:0000:9d:00): 79",
            {"timestamp": "Thu Aug 21 02:20:57 2025"},
        ),
    ],
)
def test_prefixes_are_parsed_and_recorded(raw: str, message: str, fields: dict[str, object]) -> None:
    line = normalize(raw, "job.log", 3)
    assert line.message == message
    for key, value in fields.items():
        assert getattr(line, key) == value, key
    assert line.source == "job.log" and line.number == 3


@pytest.mark.parametrize(
    "prose",
    [
        "(1) The process is killed by SIGKILL by OOM killer due to high memory usage.",
        "(note) this is not a prefix",
    ],
)
def test_parenthesised_prose_is_not_a_ray_prefix(prose: str) -> None:
    assert normalize(prose).message == prose
    assert normalize(prose).worker is None


def test_clean_strips_ansi_and_controls_but_keeps_text() -> None:
    assert clean("\x1b[1m\x1b[31mERROR\x1b[0m: x\x00y\x07 ") == "ERROR: xy"


def test_rays_core_log_prefix_gives_the_level() -> None:
    # src/ray/util/logging.cc: `[time level pid tid] (process) file:line: message`.
    line = normalize("[2026-11-26 14:10:50,123 F 12345 12400] (raylet) bundle_spec.cc:216: Check failed: x")
    assert line.level == "FATAL" and line.worker == "raylet"
    assert line.message.startswith("bundle_spec.cc:216: Check failed")
    assert normalize("[2026-11-26 14:10:50,123 I 12345 12400] main.cc:1: Starting raylet").level == "INFO"
