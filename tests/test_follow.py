"""`follow()` and `rlfix diagnose --follow`: a real growing file, truncated and rotated under it."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rlfix.core import Triage
from rlfix.integrations.follow import follow
from rlfix.model import Evidence
from rlfix.report import Report

CUDA_LINE = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
OOM_LINE = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
RLFIX = [sys.executable, "-m", "rlfix"]


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


class Follower:
    """Runs follow() in a thread and records alerts."""

    def __init__(self, path: Path, **kwargs: float) -> None:
        self.alerts: list[str] = []
        self.stop = threading.Event()
        self.result: list[Report] = []
        self.thread = threading.Thread(
            target=lambda: self.result.append(
                follow(path, Triage(), on_alert=self.on_alert, poll=0.02, stop=self.stop, **kwargs)
            ),
            daemon=True,
        )
        self.thread.start()

    def on_alert(self, evidence: Evidence, sig_id: str) -> None:
        self.alerts.append(sig_id)

    def finish(self) -> Report:
        self.stop.set()
        self.thread.join(20)
        assert not self.thread.is_alive()
        return self.result[0]


def append(path: Path, text: str) -> None:
    with path.open("a") as fh:
        fh.write(text)


def test_alerts_as_lines_arrive_and_reads_existing_content(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1 loss=0.5\n" + OOM_LINE)
    f = Follower(log)
    wait_for(lambda: f.alerts == ["cuda-oom"])
    append(log, "step 2 loss=0.4\n")
    append(log, CUDA_LINE[:20])  # a line written in two pieces is matched once complete
    time.sleep(0.1)
    assert f.alerts == ["cuda-oom"]
    append(log, CUDA_LINE[20:])
    wait_for(lambda: len(f.alerts) == 2)
    report = f.finish()
    assert set(report.ids) >= {"cuda-illegal-memory-access"}
    assert f.alerts == ["cuda-oom", "cuda-illegal-memory-access"]


def test_survives_truncation(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1\n" * 1000)
    f = Follower(log)
    time.sleep(0.2)
    # copytruncate: the same file, emptied, then written again from offset 0.
    with log.open("r+") as fh:
        fh.truncate(0)
    time.sleep(0.1)
    append(log, CUDA_LINE)
    wait_for(lambda: f.alerts == ["cuda-illegal-memory-access"])
    f.finish()


def test_survives_rotation(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1\n")
    f = Follower(log)
    time.sleep(0.1)
    append(log, OOM_LINE)
    log.rename(tmp_path / "train.log.1")
    time.sleep(0.1)  # the path is missing for a while: keep waiting
    log.write_text("step 2\n" + CUDA_LINE)
    wait_for(lambda: len(f.alerts) == 2)
    report = f.finish()
    assert set(f.alerts) == {"cuda-oom", "cuda-illegal-memory-access"}
    assert report.lines >= 4


def test_idle_exit_after_fatal_root(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1\n")
    f = Follower(log, idle_exit=0.3)
    time.sleep(0.6)
    assert f.thread.is_alive()  # idle but healthy: keep following
    append(log, CUDA_LINE)
    f.thread.join(20)
    assert not f.thread.is_alive()  # a fatal root cause and then silence: the job is dead
    assert f.result[0].top is not None and f.result[0].top.id == "cuda-illegal-memory-access"


def test_cli_follow_alerts_then_reports_when_idle(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1 loss=0.3\n")
    proc = subprocess.Popen(
        [*RLFIX, "diagnose", "--follow", str(log), "--idle-exit", "1", "--no-color"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None and proc.stdout is not None
    try:
        time.sleep(0.5)
        append(log, "(WorkerDict pid=417, ip=10.0.0.2) " + CUDA_LINE)
        alert = proc.stderr.readline()
        assert alert.startswith("rlfix: ALERT cuda-illegal-memory-access at ")
        assert "WorkerDict" in alert
        assert proc.wait(timeout=30) == 1
        out = proc.stdout.read()
        assert "1. cuda-illegal-memory-access" in out
    finally:
        proc.kill()
        proc.wait()


def test_cli_follow_ctrl_c_prints_report(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1\n" + OOM_LINE)
    proc = subprocess.Popen(
        [*RLFIX, "diagnose", "--follow", str(log), "--no-color"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    try:
        assert proc.stderr.readline().startswith("rlfix: ALERT cuda-oom")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 1
        assert "cuda-oom" in out
        assert "Traceback" not in err
    finally:
        proc.kill()
        proc.wait()


def test_cli_follow_errors_are_one_line(tmp_path: Path) -> None:
    missing = subprocess.run(
        [*RLFIX, "diagnose", "--follow", str(tmp_path / "nope.log")], capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 2
    assert len(missing.stderr.splitlines()) == 1
    two = subprocess.run([*RLFIX, "diagnose", "--follow", "a", "b"], capture_output=True, text=True, timeout=60)
    assert two.returncode == 2
    assert two.stderr.strip() == "rlfix: error: --follow needs exactly one FILE"


NCCL_TIMEOUT_LINE = (
    "[rank0]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=20585, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
    "600000 milliseconds before timing out.\n"
)
SPILL_LINE = "(raylet) Spilled 12345 MiB, 321 objects, write throughput 1024 MiB/s. Set RAY_verbose_spill_logs=0 to disable this message.\n"
WARNED_UNSCHEDULABLE = (
    "(autoscaler +12s) Warning: The following resource request cannot be scheduled right now: {'GPU': 1.0}. "
    "This is likely due to all cluster resources being claimed by actors.\n"
)


def test_follow_alerts_once_on_the_root_never_on_its_symptoms_or_warnings(tmp_path: Path) -> None:
    # The same policy as `ray job --follow` (rlfix.integrations.alerting): a warning-severity finding
    # and a root seen only on a warning line are notes; the NCCL timeouts a CUDA error causes are its
    # symptoms, not a second alert.
    log = tmp_path / "train.log"
    steps = "".join(f"step {i} loss=0.4\n" for i in range(2, 7))
    log.write_text("step 1 loss=0.5\n" + SPILL_LINE + WARNED_UNSCHEDULABLE + steps)
    f = Follower(log)
    time.sleep(0.3)
    assert f.alerts == []
    append(log, CUDA_LINE + NCCL_TIMEOUT_LINE + NCCL_TIMEOUT_LINE.replace("rank0", "rank1"))
    wait_for(lambda: f.alerts == ["cuda-illegal-memory-access"])
    time.sleep(0.3)
    report = f.finish()
    assert report.top is not None and report.top.id == "cuda-illegal-memory-access"
    assert f.alerts == ["cuda-illegal-memory-access"]
