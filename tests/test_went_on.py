"""Rules by the shape of a log, added after blind wave 3's first pass (issue 25): what a run went
past, what a stop's teardown prints, and errors that end an input without their last line."""

from __future__ import annotations

from rlfix.api import diagnose

CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"
STEPS = "".join(f"step:{i} - actor/loss:0.{i} - rollout/aborted:0\n" for i in range(1, 4))


def _ids(text: str) -> list[str]:
    return diagnose(text.encode()).ids


def test_a_launchers_stop_then_killed_is_teardown_not_an_oom_kill() -> None:
    stop = "20251126-16:08:50.180 Local Scheduler INFO: Stopping local process with signal SIGTERM, pid: [801]\n"
    assert _ids(f"{STEPS}All tests completed successfully!\n{stop}Killed\n") == []
    # Without the stop, a bare Killed is the OOM killer's, as before.
    assert _ids(f"{STEPS}Killed\n") == ["host-oom-sigkill"]
    # A root before the stop is still the cause.
    assert _ids(f"{STEPS}[rank0]: {CUDA}\n{stop}Killed\n")[0] == "cuda-illegal-memory-access"


def test_a_run_that_says_it_ended_well_did_not_end_in_the_error_before() -> None:
    retries = (
        "WARNING:urllib3.connectionpool:Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) "
        "after connection broken by 'NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f49>: "
        "Failed to establish a new connection: [Errno 101] Network is unreachable')': /api/runs\n"
    )
    ended = "[2023-10-19 23:15:07,620] [INFO] [launch.py:346:main] Process 115970 exits successfully.\n"
    assert not diagnose(f"{STEPS}{retries}{ended}".encode()).failed
    assert diagnose(f"{STEPS}{retries}".encode()).failed


def test_progress_that_names_teardown_words_is_still_progress() -> None:
    debug = "Training Progress:   4%|4         | 44/1093 [11:33<5:13:07, 17.91s/it][CRITICAL] batch keys: ['x']\n"
    assert not diagnose(f"{debug}step:44 - actor/pg_loss:0.1 - rollout/aborted:0 - timing/gen:1.2\n".encode()).failed


def test_a_warning_the_run_went_far_past_is_a_note() -> None:
    warn = (
        "node-7:2104863:2105766 [0] ras/client_support.cc:160 NCCL WARN Call to bind failed: Address already in use\n"
    )
    went_on = "".join(f"step:{i} - actor/loss:0.1\n" for i in range(300))
    report = diagnose(f"{warn}{went_on}".encode())
    assert not report.failed and "dist-port-in-use" in [n.id for n in report.notes]
    # The same line at the end of the run is still its cause.
    assert diagnose(f"{STEPS}{warn}".encode()).ids == ["dist-port-in-use"]


def test_a_traceback_cut_before_its_last_line_is_never_silent() -> None:
    frames = (
        '[rank7]:   File "/home/user/swift/trainers/grpo_trainer.py", line 364, in _prefetch\n'
        "[rank7]:     if self.infer_rank >= 0:\n"
        '[rank7]:   File "/home/user/swift/trainers/grpo_trainer.py", line 253, in infer_rank\n'
        "[rank7]:     assert local_world_size + self.args.num_infer_workers == get_device_count()\n"
    )
    assert diagnose(frames.encode()).failed
    # The same frames with the run going on after them (Ray prints a retried exception's frames).
    assert not diagnose((frames + "".join(f"step {i} ok\n" for i in range(20))).encode()).failed


def test_a_compile_error_is_an_uncaught_exception() -> None:
    syntax = (
        '  File "/workspace/AReaL/examples/test_model.py", line 161\n'
        "    messages = [\n"
        "    ^^^^^^^^\n"
        "IndentationError: expected an indented block after 'else' statement on line 159\n"
    )
    more = "".join(f"INFO: rollout {i} ok\n" for i in range(200))
    assert _ids(f"{syntax}{more}") == ["python-exception"]
