"""A job's worker files are read in the order their errors happened, not by their random names.

Four ranks of one job: rank 2 hits a CUDA illegal memory access, ranks 0, 1 and 3 then time out in
NCCL. The CUDA rank's file is named last (`worker-eeee…`), so name order would read the NCCL
timeouts first and rank them above their cause (issue 22 item 4, trial D5).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest

from rlfix.integrations.ray import diagnose_session_jobs
from rlfix.integrations.ray_order import BY_DRIVER_LOG, BY_FILE_TIMES, BY_TIMESTAMPS

CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"
START = datetime(2026, 11, 26, 10, 0, 0).timestamp()
#: Worker ids by rank: the CUDA rank (2) sorts last by name.
WIDS = {0: "0" * 56, 1: "1" * 56, 3: "2" * 56, 2: "e" * 56}


def _nccl(rank: int) -> str:
    # ProcessGroupNCCL.cpp's watchdog line, without the glog prefix (no timestamp).
    return (
        f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1686, OpType=ALLREDUCE, "
        "NumelIn=1543, NumelOut=1543, Timeout(ms)=600000) ran for 600075 milliseconds before timing out."
    )


def _error(rank: int) -> str:
    return CUDA if rank == 2 else _nccl(rank)


def _session(tmp_path: Path, *, driver: list[str] | None, stamps: dict[int, str] | None = None) -> Path:
    """A session of one job with four ranks; `driver` lines after the entrypoint line (None: a hand-started
    driver, no submission); `stamps` prefixes each rank's error line with a timestamp."""
    logs = tmp_path / "logs"
    (logs / "events").mkdir(parents=True)
    (logs / "gcs_server.out").write_text(
        "[2026-11-26 10:00:01,000 I 1 1] (gcs_server) gcs_job_manager.cc:115: Registering job. job_id=0a000000 "
        "driver_pid=500\n"
        "[2026-11-26 10:00:30,000 I 1 1] (gcs_server) gcs_job_manager.cc:156: Marking job as finished. job_id=0a000000\n"
    )
    if driver is not None:
        (logs / "events" / "event_JOBS.log").write_text(
            f'{{"message": "Started a ray job raysubmit_Rk.", "timestamp": "{START:.0f}"}}\n'
            f'{{"message": "Completed a ray job raysubmit_Rk with a status FAILED.", "timestamp": "{START + 30:.0f}"}}\n'
        )
        lines = ["Running entrypoint for job raysubmit_Rk: python train.py", *driver]
        (logs / "job-driver-raysubmit_Rk.log").write_text("".join(line + "\n" for line in lines))
    for rank, wid in WIDS.items():
        path = logs / f"worker-{wid}-0a000000-{700 + rank}.err"
        stamp = (stamps or {}).get(rank, "")
        path.write_text(f":job_id:0a000000\n:actor_name:PolicyRank\nstep 1\n{stamp}{_error(rank)}\n")
        # The CUDA rank's file written last: file times alone would get it wrong, unless a test says otherwise.
        written = START + (20 if rank == 2 else 10)
        os.utime(path, (written, written))
    return logs


def _forwarded(rank: int, text: str) -> str:
    return f"\x1b[36m(PolicyRank pid={700 + rank})\x1b[0m {text}"


def _top(logs: Path) -> tuple[str, str | None, list[str]]:
    section = diagnose_session_jobs(logs).sections[0]
    report = section.report
    assert report.top is not None, section.heading
    return report.top.id, section.info.get("worker_order"), [section.heading]


def test_without_timestamps_the_driver_log_decides(tmp_path: Path) -> None:
    """The driver log received rank 2's CUDA error first; rank 3's timeout came as Ray's deduplicated repeat."""
    driver = [
        *(_forwarded(rank, "step 1") for rank in range(4)),
        _forwarded(2, CUDA),
        _forwarded(0, _nccl(0)),
        _forwarded(1, _nccl(1) + " [repeated 2x across cluster]"),
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
    ]
    top, by, heading = _top(_session(tmp_path, driver=driver))
    assert (top, by) == ("cuda-illegal-memory-access", BY_DRIVER_LOG), heading
    assert "worker files read in driver-log order" in heading[0]


def test_the_driver_log_order_is_followed_either_way(tmp_path: Path) -> None:
    """The same files, the driver log received a timeout first: it is read first (order, not a preference)."""
    driver = [_forwarded(0, _nccl(0)), _forwarded(2, CUDA), _forwarded(1, _nccl(1)), _forwarded(3, _nccl(3))]
    section = diagnose_session_jobs(_session(tmp_path, driver=driver)).sections[0]
    assert section.info["worker_order"] == BY_DRIVER_LOG
    order = [s.name for s in section.report.sources if s.name.startswith("worker-")]
    assert order[0].endswith("-700.err") and order[1].endswith("-702.err"), order


def test_without_a_driver_log_the_file_times_decide(tmp_path: Path) -> None:
    logs = _session(tmp_path, driver=None)
    cuda = next(logs.glob("worker-*-702.err"))
    os.utime(cuda, (START + 5, START + 5))  # the CUDA rank stopped writing first
    top, by, heading = _top(logs)
    assert (top, by) == ("cuda-illegal-memory-access", BY_FILE_TIMES), heading


@pytest.mark.parametrize("cuda_second", [3, 30])
def test_timestamps_decide_before_the_driver_log(tmp_path: Path, cuda_second: int) -> None:
    """Stamped lines (Python logging's, on one clock) are ordered by their stamps, whatever the driver log says."""
    stamps = {rank: f"2026-11-26 10:00:{cuda_second if rank == 2 else 10:02d},000\tERROR " for rank in WIDS}
    driver = [_forwarded(0, _nccl(0)), _forwarded(2, CUDA)]
    section = diagnose_session_jobs(_session(tmp_path, driver=driver, stamps=stamps)).sections[0]
    assert section.info["worker_order"] == BY_TIMESTAMPS
    first = next(s.name for s in section.report.sources if s.name.startswith("worker-"))
    assert first.endswith("-702.err") == (cuda_second < 10), first


def test_one_failing_file_needs_no_order(tmp_path: Path) -> None:
    logs = _session(tmp_path, driver=[_forwarded(2, CUDA)])
    for path in logs.glob("worker-*.err"):
        if not path.name.endswith("-702.err"):
            path.write_text(":job_id:0a000000\nstep 1\n")
    section = diagnose_session_jobs(logs).sections[0]
    assert section.info["worker_order"] is None and "worker files read" not in section.heading


def test_the_cluster_face_keeps_the_order_the_node_read_the_files_in(tmp_path: Path) -> None:
    """A node sends its evidence back in read order, and the driver re-reads it so: not re-sorted by name."""
    from rlfix.core import Triage
    from rlfix.integrations.ray_scan import compact, merge_lines

    node = Triage()
    node.feed(CUDA, "worker-eeee-0a000000-702.err")  # read first: it failed first
    node.feed(_nccl(0), "worker-0000-0a000000-700.err")
    sent = compact(node.report())
    assert [e["source"] for e in sent["lines"]] == ["worker-eeee-0a000000-702.err", "worker-0000-0a000000-700.err"]
    driver = Triage()
    merge_lines(driver, "192.0.2.2", sent)
    report = driver.report()
    assert report.top is not None and report.top.id == "cuda-illegal-memory-access", report.ids


RANKS = Path(__file__).resolve().parent.parent / "fixtures" / "ray-session" / "ranks" / "logs"


def test_a_real_session_of_four_ranks_ranks_the_cuda_error_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray 2.60 for real (fixtures/generate/ray/make_session.py --scenario ranks): the rank that printed
    the CUDA error has the worker file named last, and its NCCL timeouts came 3 s later on the others."""
    from rlfix.integrations import ray_jobs
    from rlfix.integrations.ray_order import WorkerOrder

    section = diagnose_session_jobs(RANKS).sections[0]
    assert section.report.top is not None and section.report.top.id == "cuda-illegal-memory-access", section.report.ids
    assert section.info["worker_order"] == BY_DRIVER_LOG
    # The fixture still shows the fault: read by name, the timeouts would rank first.
    monkeypatch.setattr(ray_jobs, "order_workers", lambda workers, kb, driver=None: WorkerOrder(tuple(workers)))
    by_name = diagnose_session_jobs(RANKS).sections[0].report
    assert by_name.top is not None and by_name.top.id == "nccl-timeout", by_name.ids


def test_a_huge_worker_file_is_searched_at_its_head_and_tail() -> None:
    """As the report reads a file over 256 MiB; the first-error search reads the same parts."""
    import io

    from rlfix.integrations.ray_logs import head_and_tail

    data = b"head line\n" + b"x" * 1000 + b"\nmiddle\n" + b"y" * 1000 + b"\n" + CUDA.encode() + b"\n"
    small = head_and_tail(io.BytesIO(data), len(data), max_bytes=len(data))
    assert small.read() == data  # not over the bound: the file as it is
    part = head_and_tail(io.BytesIO(data), len(data), max_bytes=400)
    read = b"".join(iter(lambda: part.read(64), b""))
    assert read.startswith(b"head line\n") and read.endswith(CUDA.encode() + b"\n") and b"middle" not in read


def test_ray_job_online_reads_the_worker_files_in_the_order_they_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    """`rlfix ray job` reads a job's worker files through the dashboard: by name, the NCCL timeouts of the
    ranks whose files sort first ranked above the CUDA error that caused them (issue 22 item 4, online).
    The same session as above, served as a live cluster's dashboard serves it."""
    import contextlib
    import io

    from rlfix.core import Triage
    from rlfix.integrations import ray_state
    from rlfix.integrations.ray_order import WorkerOrder

    names = sorted(p.name for p in RANKS.iterdir() if p.is_file())

    @contextlib.contextmanager
    def served(_address: str, _node: str, name: str):  # type: ignore[no-untyped-def]
        yield io.BytesIO((RANKS / name).read_bytes())

    monkeypatch.setattr(ray_state, "alive_nodes", lambda _address: [("n1", "10.0.0.1")])
    monkeypatch.setattr(ray_state, "list_node_logs", lambda _address, _node: names)
    monkeypatch.setattr(ray_state, "_node_log", served)
    job = {"job_id": "02000000", "submission_id": "raysubmit_9jdAHNAn5seCEifM"}
    triage = Triage()
    ray_state.feed_cluster_logs(triage, "http://h:8265", **job)
    report = triage.report()
    assert report.top is not None and report.top.id == "cuda-illegal-memory-access", report.ids
    # Each worker file of the job is read once, under its node and name, and no other job's.
    read = [s.name for s in report.sources if "worker-" in s.name]
    assert sorted(read) == sorted(f"10.0.0.1:{n}" for n in names if "-02000000-" in n), read
    # Read by name, as before: the timeouts rank first.
    monkeypatch.setattr(
        ray_state, "order_workers", lambda workers, kb, driver=None, file_times=True: WorkerOrder(tuple(workers))
    )
    by_name = Triage()
    ray_state.feed_cluster_logs(by_name, "http://h:8265", **job)
    assert by_name.report().top is not None and by_name.report().top.id == "nccl-timeout", by_name.report().ids
