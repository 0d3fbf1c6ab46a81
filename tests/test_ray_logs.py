"""Session-log rules without a cluster: which files are read, per-job filtering, bounded reading."""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from rlfix.core import Triage
from rlfix.details import ExitStatus
from rlfix.errors import InputError
from rlfix.integrations.ray_jobs import utc_text
from rlfix.integrations.ray_logs import (
    Since,
    belongs_to_job,
    classify,
    feed_session_logs,
    resolve_logs_dir,
    session_log_files,
)
from tests.conftest import FIXTURES, RunCli

OOM = (
    "[2026-11-22 01:10:16,361 I 24810 24833] (raylet) node_manager.cc:3199: Killing 1 worker(s), kill details: "
    "Task was killed due to the node running low on memory.\n"
)


def _session(tmp_path: Path) -> Path:
    logs = tmp_path / "session_2026-11-22_01-06-40_1" / "logs"
    (logs / "old").mkdir(parents=True)
    (logs / "events").mkdir()
    (logs / "raylet.out").write_text("[2026-11-22 01:00:00,000 I 1 1] (raylet) main.cc:1: started\n" + OOM)
    (logs / "dashboard.log").write_text(OOM)  # healthy chatter is never read, whatever it holds
    (logs / "events" / "event_RAYLET.log").write_text(OOM)
    (logs / "old" / "worker-aa11-02000000-77.err").write_text("ValueError: mine\n")
    (logs / "worker-bb22-03000000-78.err").write_text("ValueError: other job\n")
    (logs / "job-driver-raysubmit_A.log").write_text("driver A\n")
    (logs / "python-core-worker-aa11_77.log").write_text("core\n")
    (tmp_path / "session_latest").symlink_to(logs.parent)
    return logs


def test_rules_know_the_signal_files() -> None:
    assert classify("raylet.out").kind == "raylet"
    assert classify("gcs_server.out").kind == "gcs"
    assert classify("worker-ab-01000000-12.err").kind == "worker"
    assert classify("job-driver-raysubmit_x.log").kind == "driver"
    assert not classify("dashboard_agent.log").scan
    assert classify("something_new.log").kind == "other"


def test_job_filter() -> None:
    assert belongs_to_job("worker-ab-02000000-1.err", "02000000")
    assert not belongs_to_job("worker-ab-03000000-1.err", "02000000")
    assert belongs_to_job("job-driver-raysubmit_A.log", "02000000", "raysubmit_A")
    assert not belongs_to_job("job-driver-raysubmit_B.log", "02000000", "raysubmit_A")
    assert not belongs_to_job("job-driver-raysubmit_B.log", "02000000")  # a hand-started driver has none
    assert not belongs_to_job("python-core-worker-aa_1.log", "02000000")
    assert belongs_to_job("raylet.out", "02000000")
    assert belongs_to_job("anything.log")


def test_files_in_reading_order_with_old_and_without_events(tmp_path: Path) -> None:
    logs = _session(tmp_path)
    names = [str(f.path.relative_to(logs)) for f in session_log_files(logs, job_id="02000000")]
    assert names[0] == "raylet.out"
    assert "old/worker-aa11-02000000-77.err" in names
    assert "worker-bb22-03000000-78.err" not in names
    assert not any(n.startswith("events") for n in names)


def test_feed_reads_signal_files_only(tmp_path: Path) -> None:
    logs = _session(tmp_path)
    triage = Triage()
    feed_session_logs(triage, logs)
    report = triage.report()
    sources = {s.name for s in report.sources}
    assert "raylet.out" in sources and "dashboard.log" not in sources
    assert report.top is not None and report.top.id == "ray-oom-killer"
    assert report.top.first.source == "raylet.out" and report.top.first.line == 2


def test_since_drops_older_cluster_wide_lines(tmp_path: Path) -> None:
    logs = _session(tmp_path)
    triage = Triage()
    feed_session_logs(triage, logs, since="2026-11-22 01:20:00")
    assert triage.report().get("ray-oom-killer") is None
    kept = Since(
        io.BytesIO(b"[2026-11-22 01:00:00,1 I] a\ncontinued\n[2026-11-22 02:00:00,1 I] b\ntail"), "2026-11-22 01:30:00"
    )
    # Dropped lines stay as empty lines: what is kept keeps its line number.
    assert kept.read() + kept.read() + kept.read() == b"\n\n[2026-11-22 02:00:00,1 I] b\ntail"


def _stamped(minute: int, text: str) -> str:
    return f"[2026-11-22 01:{minute:02d}:00,000 I 1 1] {text}\n"


@pytest.mark.parametrize("name", ["raylet.out", "gcs_server.out", "monitor.log"])
def test_numbers_from_a_time_window_are_the_files_own(tmp_path: Path, name: str) -> None:
    """A window that drops 200 earlier lines (and the later ones) still quotes line 214 as 214."""
    logs = tmp_path / "logs"
    logs.mkdir()
    before = "".join(_stamped(1, f"(raylet) main.cc:1: chatter {i}") for i in range(200))
    inside = "".join(_stamped(30, f"(raylet) main.cc:1: healthy {i}") for i in range(13))
    after = _stamped(59, "(raylet) main.cc:1: later") + OOM.replace("01:10:16", "01:59:00")
    (logs / name).write_text(before + inside + OOM.replace("01:10:16", "01:31:00") + after)
    triage = Triage()
    feed_session_logs(triage, logs, since="2026-11-22 01:20:00")
    diag = triage.report().get("ray-oom-killer")
    assert diag is not None and (diag.first.source, diag.first.line) == (name, 214)
    windowed = Triage()
    stream = Since(io.BytesIO((logs / name).read_bytes()), "2026-11-22 01:20:00", "2026-11-22 01:40:00")
    windowed.feed_stream(stream, name)  # type: ignore[arg-type]
    inside_only = windowed.report().get("ray-oom-killer")
    assert inside_only is not None and [e.line for e in inside_only.evidence] == [214]


def test_huge_file_is_read_at_head_and_tail(tmp_path: Path) -> None:
    logs = _session(tmp_path)
    filler = b"x" * 99 + b"\n"
    with (logs / "raylet.out").open("wb") as fh:
        fh.write(filler * 20_000)  # ~2 MB of noise, then the kill at the very end
        fh.write(OOM.encode())
    triage = Triage()
    feed_session_logs(triage, logs, max_bytes=400_000)
    report = triage.report()
    assert report.top is not None and report.top.id == "ray-oom-killer"
    raylet = next(s for s in report.sources if s.name.startswith("raylet.out"))
    assert "first" in raylet.name and raylet.bytes < 500_000


def test_resolve_accepts_temp_root_session_and_logs(tmp_path: Path) -> None:
    logs = _session(tmp_path)
    for given in (tmp_path, logs.parent, logs):
        assert resolve_logs_dir(given).resolve() == logs.resolve()
    with pytest.raises(InputError, match="no such directory"):
        resolve_logs_dir(tmp_path / "nope")


# --- jobs of a session: one section each ---------------------------------------------------
# Lines as Ray 2.60 wrote them on a local head (gcs_job_manager.cc, gcs_worker_manager.cc,
# node_manager.cc, job_supervisor.py, the JOBS events of the dashboard's job manager).

GCS = """\
[2026-11-23 18:41:44,941 I 29493 29493] (gcs_server) gcs_job_manager.cc:115: Registering job. job_id=01000000 driver_pid=29865
[2026-11-23 18:43:07,902 I 29493 29493] (gcs_server) gcs_job_manager.cc:115: Registering job. job_id=02000000 driver_pid=31053
[2026-11-23 18:43:23,679 I 29493 29493] (gcs_server) gcs_job_manager.cc:156: Marking job as finished. job_id=02000000
[2026-11-23 18:43:42,514 I 29493 29493] (gcs_server) gcs_job_manager.cc:115: Registering job. job_id=04000000 driver_pid=31455
[2026-11-23 18:43:48,768 W 29493 29493] (gcs_server) gcs_worker_manager.cc:70: Reporting worker exit, worker id = 7933049bcf58bc556e912f2df74d4a5ea56f64c1d304ab0f73ae7a2c, node id = 8b7c6e87578b0c8b18722f7e8fe1d8942828a9173f8cd77a1b216951, address = 192.0.2.2, exit_type = SYSTEM_ERROR, exit_detail = Worker unexpectedly exits with a connection error code 2. End of file.
[2026-11-23 18:43:49,417 I 29493 29493] (gcs_server) gcs_job_manager.cc:156: Marking job as finished. job_id=04000000
"""
RAYLET = """\
[2026-11-23 18:41:23,127 I 29805 29805] (raylet) store_runner.cc:50: Allowing the Plasma store to use up to 7.42324GB of memory.
[2026-11-23 18:43:08,104 W 29805 29805] (raylet) main.cc:985: The lease with ID 0000000002000000ffffffffffffffffffffffffffffffffffffffffffffffff cannot be scheduled right now. It requires {CPU: 1, GPU: 1} for placement, however the cluster currently cannot provide the requested resources. The required resources may be added as autoscaling takes place or placement groups are scheduled. Otherwise, consider reducing the resource requirements of the lease.
[2026-11-23 18:44:25,981 E 29805 29805] (raylet) node_manager.cc:3517: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 8b7c6e87578b0c8b18722f7e8fe1d8942828a9173f8cd77a1b216951, IP: 192.0.2.2) over the last time period.
"""
EVENTS = (
    '{"source_type": "JOBS", "message": "Started a ray job raysubmit_aEkz.", "timestamp": "%d"}\n'
    '{"source_type": "JOBS", "message": "Completed a ray job raysubmit_aEkz with a status FAILED. '
    'Job entrypoint command failed with exit code 1", "timestamp": "%d"}\n'
)
SUPERVISOR = (
    "2026-11-23 18:43:07,006\tINFO job_supervisor.py:375 -- Submitting job with RAY_ADDRESS = 192.0.2.2:41093 "
    "job_id=01000000 worker_id=cde809e435575ee665aec4c6a741d53fb18f9c3fc154e98acd455246\n"
)
WID = "7933049bcf58bc556e912f2df74d4a5ea56f64c1d304ab0f73ae7a2c"
WID_PREP = "5d0c3e1f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f"


def _jobs_session(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    (logs / "events").mkdir(parents=True)
    (logs / "jobs").mkdir()
    (logs / "gcs_server.out").write_text(GCS)
    (logs / "raylet.out").write_text(RAYLET)
    start = datetime(2026, 11, 23, 18, 43, 5).timestamp()
    (logs / "events" / "event_JOBS.log").write_text(EVENTS % (start, start + 19))
    (logs / "jobs" / "supervisor-raysubmit_aEkz.log").write_text(SUPERVISOR)
    # The driver log names its job by what Ray forwarded to it: its task's `(prepare_batch pid=31060)`
    # line, and that pid's worker file is job 02000000's (ray_links).
    (logs / "job-driver-raysubmit_aEkz.log").write_text(
        "\x1b[36m(prepare_batch pid=31060)\x1b[0m prepared 8 prompts\nwaiting for a GPU task on a CPU-only cluster\n"
    )
    (logs / f"worker-{WID_PREP}-02000000-31060.out").write_text(
        ":job_id:02000000\n:task_name:prepare_batch\nprepared 8 prompts\n"
    )
    (logs / f"worker-{WID}-04000000-31513.out").write_text(
        ":job_id:04000000\n:actor_name:Learner\ntrain step 4 loss=0.4000\ntrain step 5 loss=0.3333\n"
    )
    (logs / f"worker-{WID}-04000000-31513.err").write_text(":job_id:04000000\n:actor_name:Learner\n")
    return logs


def _local(hour: int, minute: int, second: int, millis: int = 0) -> float:
    """A wall time of the fixture's day as this machine's zone reads it (Ray writes local times)."""
    return datetime(2026, 11, 23, hour, minute, second, millis * 1000).timestamp()


def test_jobs_and_windows_come_from_rays_own_files(tmp_path: Path) -> None:
    from rlfix.integrations.ray_jobs import session_jobs

    spans = {s.key: s for s in session_jobs(_jobs_session(tmp_path))}
    # 01000000 is the dashboard's own job (its actors supervise submissions): no section of its own.
    assert set(spans) == {"raysubmit_aEkz", "04000000"}
    sub = spans["raysubmit_aEkz"]
    assert sub.job_id == "02000000" and sub.status == "FAILED"  # the pid its driver log forwarded
    assert sub.job_id_from == "driver-log worker output"
    # From the start's second to the end + 1 s (events give seconds) + 10 s after + 1 s of slack.
    assert sub.window() == (_local(18, 43, 5), _local(18, 43, 36))
    # Shown as rlfix shows every time of a fleet or a cluster: UTC.
    assert sub.to_dict()["start"] == utc_text(_local(18, 43, 5))
    assert spans["04000000"].submission_id is None


def test_each_job_reads_its_window_of_the_shared_logs_and_the_node_the_rest(tmp_path: Path) -> None:
    from rlfix.integrations.ray import diagnose_session_jobs

    reports = diagnose_session_jobs(_jobs_session(tmp_path))
    gpu = reports.get("raysubmit_aEkz")
    assert gpu is not None and gpu.top is not None and gpu.top.id == "ray-unschedulable"
    assert (gpu.top.first.source, gpu.top.first.line) == ("raylet.out", 2)  # the file's own line number
    actor = reports.get("04000000")
    assert actor is not None and actor.top is not None and actor.top.id == "ray-actor-died"
    assert "ray-unschedulable" not in actor.ids and "ray-oom-killer" not in actor.ids
    # Its last words: Ray's exit type, the actor class from Ray's marker, its own last lines.
    dead = actor.top.details.dead
    assert len(dead) == 1 and dead[0].actor == "Learner" and dead[0].pid == 31513
    assert dead[0].exit_type == "SYSTEM_ERROR"
    assert dead[0].last_lines[-1] == (f"worker-{WID}-04000000-31513.out", 4, "train step 5 loss=0.3333")
    # The OOM summary came after every job ended: the node's, not a job's.
    assert reports.node is not None and reports.node.report.top is not None
    assert reports.node.report.top.id == "ray-oom-killer"
    assert reports.exit_code == 1


def test_job_reports_render_in_every_format(tmp_path: Path) -> None:
    import json

    from rlfix.integrations.ray import diagnose_session_jobs

    reports = diagnose_session_jobs(_jobs_session(tmp_path), job="02000000")
    assert [s.job for s in reports.sections] == ["raysubmit_aEkz"] and reports.node is None
    text = reports.render("text")
    assert text.startswith("rlfix: Ray session: 1 job, 1 failed")
    assert reports.render("text", lang="zh").startswith("rlfix: Ray session：1 个任务，1 个失败")
    start, until = utc_text(_local(18, 43, 5)), utc_text(_local(18, 43, 36))
    assert start is not None and until is not None
    assert f"=== job raysubmit_aEkz (job 02000000): FAILED, {start} to {until[11:]} ===" in text
    assert "## job raysubmit" in reports.render("markdown")
    doc = json.loads(reports.render("json"))
    assert doc["jobs"][0]["report"]["diagnoses"][0]["id"] == "ray-unschedulable"
    assert doc["fleet"]["groups"][0]["cause"] == "ray-unschedulable"
    page = reports.render("html")
    assert page.count("<script>") >= 2 and "script-src " in page and page.count("sha256-") >= 2
    assert "ray-unschedulable" in repr(reports)
    with pytest.raises(Exception, match="no job 'nope'"):
        diagnose_session_jobs(_jobs_session(tmp_path / "again"), job="nope")


def test_window_filter_keeps_line_numbers_and_its_complement() -> None:
    raw = RAYLET.encode()
    window = ((_local(18, 43, 5), _local(18, 43, 30)),)
    inside = Since(io.BytesIO(raw), windows=window).read()
    outside = Since(io.BytesIO(raw), windows=window, outside=True).read()
    assert inside.split(b"\n")[1].startswith(b"[2026-11-23 18:43:08") and not inside.split(b"\n")[0]
    assert not outside.split(b"\n")[1] and outside.split(b"\n")[2].startswith(b"[2026-11-23 18:44:25")


def test_window_filter_reads_times_on_one_clock_to_the_millisecond() -> None:
    """Stamps are read by rlfix.clock: fractions count, and a stamp with a zone is put on UTC."""
    lines = [
        b"[2026-11-23 18:43:08,104 W 1 1] (raylet) inside by 104 ms\n",
        b"[2026-11-23 18:43:08,900 W 1 1] (raylet) after the window's end\n",
        b"2026-11-23 18:43:07,006\tINFO job_supervisor.py:375 -- python logging, inside\n",
        b"2026-11-23T18:43:08.050Z utc, inside only if this machine's zone is UTC\n",
    ]
    kept = Since(io.BytesIO(b"".join(lines)), _local(18, 43, 7), _local(18, 43, 8, 500)).read().split(b"\n")
    assert kept[0] == lines[0].rstrip() and kept[1] == b"" and kept[2] == lines[2].rstrip()
    utc = datetime(2026, 11, 23, 18, 43, 8, 50000, tzinfo=timezone.utc).timestamp()
    assert (kept[3] != b"") == (_local(18, 43, 7) <= utc <= _local(18, 43, 8, 500))
    # A stamp given as text is read by the same rules (no zone: this machine's local time).
    assert Since(io.BytesIO(lines[0]), "2026-11-23 18:43:08,200").read() == b"\n"
    with pytest.raises(InputError, match="not a date and time"):
        Since(io.BytesIO(b""), "yesterday")


def test_windows_hold_in_any_zone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files' local stamps and the job events' epoch seconds meet on one clock in any zone."""
    import time

    from rlfix.integrations.ray import diagnose_session_jobs

    for zone in ("Asia/Shanghai", "America/Los_Angeles"):
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        try:
            reports = diagnose_session_jobs(_jobs_session(tmp_path / zone.replace("/", "-")))
        finally:
            monkeypatch.undo()
            time.tzset()
        gpu = reports.get("raysubmit_aEkz")
        assert gpu is not None and gpu.top is not None and gpu.top.id == "ray-unschedulable", zone
        assert reports.node is not None and reports.node.report.top is not None
        assert reports.node.report.top.id == "ray-oom-killer", zone


def test_alert_on_rays_wrapper_line_waits_for_the_real_line() -> None:
    from rlfix.integrations.alerting import Alerter

    now = [0.0]
    alerts: list[tuple[str, str]] = []
    triage: Triage
    alerter = Alerter(Triage().kb, lambda ev, sig: alerts.append((sig, ev.text)), clock=lambda: now[0])
    triage = Triage(alerter.kb, on_new=alerter.callback(lambda: triage))
    for line in (
        "Traceback (most recent call last):",
        '  File "/home/user/exception.py", line 31, in <module>',
        "    ray.get(RewardWorker.remote().score.remote([0.0] * 7))",
        "ray.exceptions.RayTaskError(ValueError): ray::RewardWorker.score() (pid=31375, ip=192.0.2.2)",
        '  File "/home/user/exception.py", line 27, in score',
    ):
        triage.feed(line, "driver")
    alerter.tick()
    assert alerts == []  # within the grace period
    triage.feed("ValueError: reward shape mismatch: got 7 scores for 8 prompts", "driver")
    now[0] = 5.0
    alerter.tick()
    assert alerts == [("python-exception", "ValueError: reward shape mismatch: got 7 scores for 8 prompts")]
    triage.feed("ValueError: reward shape mismatch again", "driver")
    alerter.tick(force=True)
    assert len(alerts) == 1  # once per root cause


def test_last_words_from_the_parts_nodes_send_are_those_of_one_folder(tmp_path: Path) -> None:
    """The GCS log is on the head, a worker's files on its node: each sends its part, the driver joins them."""
    import shutil

    from rlfix.integrations.ray_dead import dead_in_folder, folder_parts, from_parts

    logs = _jobs_session(tmp_path)
    head, worker = tmp_path / "head", tmp_path / "worker"
    head.mkdir()
    worker.mkdir()
    shutil.copy(logs / "gcs_server.out", head / "gcs_server.out")
    for path in logs.glob("worker-*"):
        shutil.copy(path, worker / path.name)
    whole = dead_in_folder(logs, "04000000")
    window = (_local(18, 43, 38), _local(18, 43, 55))
    joined = from_parts(
        [("192.0.2.1", folder_parts(head, "04000000", window)), ("192.0.2.2", folder_parts(worker, "04000000"))]
    )
    assert len(whole) == len(joined) == 1
    assert joined[0].actor == whole[0].actor == "Learner" and joined[0].exit_type == "SYSTEM_ERROR"
    # The worker's own files are named by the node that holds them, as every cluster evidence line is.
    assert joined[0].last_lines[-1] == (f"192.0.2.2:worker-{WID}-04000000-31513.out", 4, "train step 5 loss=0.3333")
    # Outside the job's window, the head sends no exit: the worker's files alone say nothing of a death.
    early = (_local(18, 40, 0), _local(18, 41, 0))
    assert (
        from_parts(
            [("192.0.2.1", folder_parts(head, "04000000", early)), ("192.0.2.2", folder_parts(worker, "04000000"))]
        )
        == []
    )


def test_a_dead_node_is_each_job_s_that_ran_on_it_then() -> None:
    """A node's death goes to the jobs whose actors or tasks ran on it, inside their windows."""
    from rlfix.integrations.ray_state import DeadNode, deaths_in_job

    # The reason as Ray's GCS words it (gcs_node_manager.cc: "Node is dead because the health check failed.").
    died = DeadNode("8b7c6e87", "192.0.2.3", "Node is dead because the health check failed.", 1_795_459_420_000)
    unknown = DeadNode("aa01", "192.0.2.4", "no reason recorded")
    during, before = (1_795_459_400.0, 1_795_459_430.0), (1_795_459_000.0, 1_795_459_100.0)
    assert deaths_in_job([died, unknown], {"8b7c6e87"}, during) == [died]
    assert deaths_in_job([died], {"8b7c6e87"}, before) == []  # it was alive while that job ran
    assert deaths_in_job([died], {"ffff"}, during) == []  # the job never ran there
    assert deaths_in_job([unknown], {"aa01"}, before) == [unknown]  # no time of death: the job's node
    source, line = died.line()
    assert source == "ray-state:node 8b7c6e87" and "is dead: Node is dead because the health check failed." in line


# --- job identity before time: two jobs at once, one OOM kill --------------------------------
# The raylet's kill record as Ray 2.60 writes it (node_manager.cc, worker_killing_policy*.cc;
# fixtures/logs/ray-oom-killer--raylet-out.log): the stamped line names no job, the record's
# "Selected to kill" line, 30 lines below, names the job, the pid and the worker.
WID_B = "cf3f6fc03a160996f6f5d5b9ee29390889fa0e7d042bb549263d27e8"
OVERLAP_GCS = """\
[2026-11-23 18:43:05,100 I 29493 29493] (gcs_server) gcs_job_manager.cc:115: Registering job. job_id=02000000 driver_pid=31053
[2026-11-23 18:43:10,200 I 29493 29493] (gcs_server) gcs_job_manager.cc:115: Registering job. job_id=03000000 driver_pid=31099
[2026-11-23 18:43:30,300 I 29493 29493] (gcs_server) gcs_job_manager.cc:156: Marking job as finished. job_id=03000000
[2026-11-23 18:43:40,400 I 29493 29493] (gcs_server) gcs_job_manager.cc:156: Marking job as finished. job_id=02000000
"""


def _overlap_session(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "gcs_server.out").write_text(OVERLAP_GCS)
    record = (FIXTURES / "ray-oom-killer--raylet-out.log").read_text().splitlines()
    start = next(i for i, line in enumerate(record) if "node_manager.cc:3199" in line)
    end = next(i for i, line in enumerate(record) if line.startswith("Selected to kill")) + 2
    kill = "\n".join(record[start:end]).replace("2026-11-22 01:10:26,546", "2026-11-23 18:43:20,000")
    kill = kill.replace("job ID=01000000", "job ID=03000000").replace("pid=30141", "pid=40001")
    (logs / "raylet.out").write_text(
        "[2026-11-23 18:43:06,000 I 29805 29805] (raylet) worker_pool.cc:500: Started worker process with pid 40000\n"
        + kill
        + "\n"
    )
    (logs / f"worker-{WID_B}-03000000-40001.out").write_text(":job_id:03000000\n:task_name:generate_sequences\n")
    (logs / "worker-0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5-02000000-40000.out").write_text(
        ":job_id:02000000\n:actor_name:Learner\ntrain step 1 loss=0.5\n"
    )
    return logs


def test_a_kill_record_naming_a_job_is_that_jobs_only(tmp_path: Path) -> None:
    """Both jobs ran when the raylet killed job 03000000's worker: only 03000000 is blamed for it."""
    from rlfix.integrations.ray import diagnose_session_jobs

    reports = diagnose_session_jobs(_overlap_session(tmp_path))
    killed, neighbour = reports.get("03000000"), reports.get("02000000")
    assert killed is not None and neighbour is not None
    assert killed.top is not None and killed.top.id == "ray-oom-killer", killed.ids
    assert "ray-oom-killer" not in neighbour.ids, neighbour.render("text")
    # The node's own section does not hold it either: it is a job's.
    assert reports.node is None or "ray-oom-killer" not in reports.node.report.ids


def test_identity_names_jobs_by_id_worker_and_pid() -> None:
    from rlfix.integrations.ray_jobs import Ownership

    owners = Ownership({WID_B: "03000000"}, {"40001": "03000000"})
    assert (
        owners.named_job(b"Disconnecting worker, graceful=false worker_id=" + WID_B.encode() + b" job_id=03000000")
        == "03000000"
    )
    assert owners.named_job(b"Reporting worker exit, worker id = " + WID_B.encode() + b", node id = 8b7c") == "03000000"
    assert owners.named_job(b"Alive workers: [(Worker's Lease ID: 00, Worker PID: 40001)]") == "03000000"
    assert owners.named_job(b"Driver (pid=29892) is disconnected. worker_id=01000000" + b"f" * 48) == "01000000"
    assert owners.named_job(b"Killing 1 worker(s), kill details: Memory on the node was 8.27GB used") is None
    assert owners.named_job(b"Worker PID: 99999 unknown") is None


def test_the_raylets_infeasible_lease_warning_names_the_job_that_asked() -> None:
    """A lease id is a 4-byte counter and the requesting worker's id (Ray's `LeaseID::FromWorker`): the
    raylet's "cannot be scheduled right now" warning names no job id, but its lease names the driver or
    worker that asked. Seen in the trial (tests/test_ray_trial.py): read by time, a GPU task's warning
    made an overlapping job's actor exception read as ray-unschedulable."""
    from rlfix.integrations.ray_jobs import Ownership

    owners = Ownership({WID_B: "03000000"}, {})
    line = (
        b"[2026-11-26 12:00:41,624 W 6734 6734] (raylet) main.cc:985: The lease with ID "
        b"0000000004000000ffffffffffffffffffffffffffffffffffffffffffffffff cannot be scheduled right now. "
        b"It requires {CPU: 1, GPU: 1} for placement, however the cluster currently cannot provide the requested resources."
    )
    assert owners.named_job(line) == "04000000"  # the driver of job 04000000 asked
    by_worker = b"The lease with ID 0000002a" + WID_B.encode() + b" cannot be scheduled right now."
    assert owners.named_job(by_worker) == "03000000"  # a task submitted by a worker of job 03000000
    unknown = b"The lease with ID 00000001" + b"ab" * 28 + b" cannot be scheduled right now."
    assert owners.named_job(unknown) is None  # a worker no file names (the GCS's own): time decides
    identity = owners.identity("03000000")
    assert identity(line) is False and identity(by_worker) is True and identity(unknown) is None


def test_the_autoscalers_broadcast_in_a_driver_log_is_not_the_jobs() -> None:
    """Ray prints the autoscaler's events into every connected driver's log (seen in the trial: one job's
    GPU request in five drivers' logs); a worker's own printed line stays its output."""
    from rlfix.integrations.ray_chatter import driver_lines

    lines = [
        "\x1b[33m(autoscaler +8s)\x1b[0m Error: No available node types can fulfill resource request {'CPU': 1.0, 'GPU': 1.0}.",
        "(autoscaler +3s) Tip: use `ray status` to view detailed cluster status.",
        "\x1b[36m(rollout pid=8783)\x1b[0m (autoscaler +12s) Warning: The following resource request cannot be scheduled",
        "ValueError: reward shape mismatch",
    ]
    assert list(driver_lines(lines)) == ["", "", lines[2], lines[3]]


def test_the_autoscalers_log_is_the_nodes_not_each_jobs_window(tmp_path: Path) -> None:
    """monitor.log names no job by design: a job's section never reads it, the node's reads it whole."""
    from rlfix.integrations.ray_jobs import Ownership, feed_job, feed_node, folder_files, session_jobs

    logs = _jobs_session(tmp_path)
    (logs / "monitor.log").write_text(
        "2026-11-23 18:43:10,000\tINFO monitor.py:438 -- :event_summary:Error: No available node types can "
        "fulfill resource request {'CPU': 1.0, 'GPU': 1.0}. Add suitable node types to this cluster to resolve this issue.\n"
    )
    files = folder_files(logs)
    owners = Ownership.of(files)
    spans = session_jobs(logs)
    (span,) = [s for s in spans if s.submission_id]
    job, node = Triage(), Triage()
    feed_job(job, logs, files, owners, span)
    feed_node(node, logs, files, owners, spans)
    assert "monitor.log" not in [s.name for s in job.report().sources]
    assert "monitor.log" in [s.name for s in node.report().sources]


def test_the_jobs_api_tells_a_driver_that_ran_from_one_that_never_started() -> None:
    """Neither has a job id; only the one whose driver never ran may own the dashboard's supervisor lines
    (in the trial, a bare `exit 1` read a neighbour's runtime_env failure as its own)."""
    from types import SimpleNamespace

    from rlfix.integrations.ray_jobs import api_jobs

    never = SimpleNamespace(
        submission_id="raysubmit_env",
        job_id=None,
        start_time=1000,
        end_time=9000,
        status="FAILED",
        message="runtime_env setup failed",
        driver_exit_code=None,
    )
    ran = SimpleNamespace(
        submission_id="raysubmit_exit",
        job_id=None,
        start_time=1000,
        end_time=9000,
        status="FAILED",
        message="exit code 1",
        driver_exit_code=1,
    )
    spans = {s.submission_id: s for s in api_jobs([never, ran])}
    assert spans["raysubmit_env"].supervised and not spans["raysubmit_exit"].supervised


def test_following_skips_raylet_records_naming_another_job() -> None:
    """`--follow`: a raylet record naming another job (its runtime_env failure, with the traceback lines
    that continue it) is never this job's alert; one naming this job is, whatever else."""
    from rlfix.integrations.ray_watch import NodeTail

    raylet = [
        "[2026-11-23 18:43:10,000 I 1 1] (raylet) runtime_env_agent_client.cc:387: Failed to create runtime env for job 01000000, error message:",
        "ValueError: Could not find Conda executable at conda.",
        "[2026-11-23 18:43:11,000 W 1 1] (raylet) main.cc:985: The lease with ID 0000000003000000"
        + "f" * 48
        + " cannot be scheduled right now. It requires {CPU: 1, GPU: 1} for placement",
    ]
    names = ["raylet.out", f"worker-{WID_B}-03000000-40001.out"]

    def fetch(node: str, name: str | None, lines: int | None) -> list[str]:
        return names if name is None else (raylet if name == "raylet.out" else [])

    triage = Triage()
    NodeTail(triage, fetch).poll([("n1", "10.0.0.1")], "03000000")
    report = triage.report()
    assert report.get("ray-runtime-env-failed") is None and report.get("python-exception") is None, report.ids
    assert report.get("ray-unschedulable") is not None, report.ids


def test_follow_alerts_on_the_root_only_and_on_a_failure_nothing_alerted() -> None:
    """`--follow` (issue 22 item 7): no alert on a warning, none on the NCCL timeouts after the CUDA error
    that explains them, and a job that failed with nothing alerted (an actor SIGKILLed) is alerted at its end."""
    from rlfix.integrations.alerting import Alerter
    from rlfix.kb.load import load_knowledge

    kb = load_knowledge()
    said: list[str] = []
    alerter = Alerter(kb, lambda ev, sig: said.append(sig))
    triage = Triage(kb, on_new=alerter.callback(lambda: triage))
    triage.feed(
        "Token indices sequence length is longer than the specified maximum sequence length for this "
        "model (2048 > 1024). Running this sequence through the model will result in indexing errors",
        "w.out",
    )
    # The timeouts' file is read first (files are polled by name): the alert waits for the CUDA error.
    triage.feed(
        "[rank1]:[E1126 12:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=1686, OpType=ALLREDUCE, NumelIn=1543, NumelOut=1543, "
        "Timeout(ms)=600000) ran for 600000 milliseconds before timing out.",
        "w2.err",
    )
    triage.feed("RuntimeError: CUDA error: an illegal memory access was encountered", "w1.err")
    alerter.tick(force=True)
    assert said == ["cuda-illegal-memory-access"]

    said.clear()
    quiet = Alerter(kb, lambda ev, sig: said.append(sig))
    died = Triage(kb, on_new=quiet.callback(lambda: died))
    died.feed("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.", "driver.log")
    assert said == []  # a symptom: no alert while it runs
    died.set_exit_status(ExitStatus(1))
    quiet.ended(died.report())
    assert said == [died.report().top.id]


#: Ray's scheduling warning as a task prints it (forwarded to the driver), and as the raylet logs it.
_WAITING = (
    "(rollout pid=31375) (autoscaler +12s) Warning: The following resource request cannot be scheduled right now: "
    "{'GPU': 1.0}. This is likely due to all cluster resources being claimed by actors. Consider creating fewer "
    "actors or adding more nodes to this Ray cluster.",
    "[2026-11-26 11:12:43,463 W 23435 23435] (raylet) main.cc:985: The lease with ID "
    "0000000004000000ffffffffffffffffffffffffffffffffffffffffffffffff cannot be scheduled right now. It requires "
    "{CPU: 1, GPU: 1} for placement, however the cluster currently cannot provide the requested resources.",
)


@pytest.mark.parametrize("warning", _WAITING)
def test_follow_alerts_on_a_warning_only_when_the_job_ends_of_it(warning: str) -> None:
    """`--follow` (issue 22): a root seen on a line its program logged as a warning (Ray repeats "cannot be
    scheduled right now" while a request waits) is no alert while the run may go past it. A job that
    succeeded after it gets none; a job that failed of it (its report names it first) gets one, at its end,
    on the warning line, and the uncaught GetTimeoutError after it is its symptom."""
    from rlfix.integrations.alerting import Alerter
    from rlfix.kb.load import load_knowledge

    kb = load_knowledge()
    said: list[tuple[str, str]] = []
    healthy_alerter = Alerter(kb, lambda ev, sig: said.append((sig, ev.text)))
    healthy = Triage(kb, on_new=healthy_alerter.callback(lambda: healthy))
    healthy.feed(warning, "job-driver-raysubmit_a.log")
    healthy.feed("rollouts: 6", "job-driver-raysubmit_a.log")
    healthy_alerter.tick(force=True)
    assert said == []
    healthy.set_exit_status(ExitStatus(0))
    healthy_alerter.ended(healthy.report())
    assert said == []

    alerter = Alerter(kb, lambda ev, sig: said.append((sig, ev.text)))
    failed = Triage(kb, on_new=alerter.callback(lambda: failed))
    failed.feed(warning, "job-driver-raysubmit_b.log")
    for line in (
        "Traceback (most recent call last):",
        '  File "/home/user/unschedulable.py", line 40, in <module>',
        "    ray.get(ref, timeout=3)",
        "ray.exceptions.GetTimeoutError: Get timed out: some object(s) not ready.",
    ):
        failed.feed(line, "job-driver-raysubmit_b.log")
    alerter.tick(force=True)
    assert said == []  # live, nobody knows yet whether the job fails of the request it waited for
    failed.set_exit_status(ExitStatus(1))
    alerter.ended(failed.report())
    assert said == [("ray-unschedulable", warning)]


def test_a_dead_worker_of_another_job_is_not_read_in_this_jobs_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """The state API gives no job id for dead workers (Ray 2.60): in the trial, a healthy job that ended just
    before its neighbour's OOM kill got the killed worker in its notes. Its files name the other job."""
    pytest.importorskip("ray")
    import ray.util.state

    from rlfix.integrations import ray_state

    killed = {
        "worker_id": WID_B,
        "exit_type": "SYSTEM_ERROR",
        "end_time_ms": 5000,
        "exit_detail": "OOM kill reason: Memory usage exceeded threshold",
        "worker_type": "WORKER",
        "pid": 40001,
        "ip": "10.0.0.1",
        "node_id": "n1",
    }
    monkeypatch.setattr(ray.util.state, "list_workers", lambda **_kw: [killed])
    monkeypatch.setattr(ray_state, "alive_nodes", lambda _address: [("n1", "10.0.0.1")])
    monkeypatch.setattr(ray_state, "list_node_logs", lambda _a, _n: [f"worker-{WID_B}-08000000-40001.out"])
    mine, theirs = Triage(), Triage()
    ray_state.feed_state(mine, "http://h:8265", job_id="07000000", since_ms=0, until_ms=9000, kinds=("workers",))
    ray_state.feed_state(theirs, "http://h:8265", job_id="08000000", since_ms=0, until_ms=9000, kinds=("workers",))
    assert not mine.report().sources
    assert [s.name for s in theirs.report().sources] == [f"ray-state:worker {WID_B}"]


def test_an_unrecognised_failure_quotes_the_line_it_ended_with_first() -> None:
    """Issue 22 item 2: a job's bare `exit 1` quotes its own last error line first, not a shared raylet line
    of its window that was read before its driver log (seen in the trial)."""
    triage = Triage()
    triage.feed(
        "[2026-11-26 12:13:03,778 W 26653 26664] (raylet) store.cc:366: Disconnecting client due to connection "
        "error with code 2: End of file",
        "raylet.out",
    )
    triage.feed("loading reward model from http://reward-model:8000", "job-driver-raysubmit_x.log")
    triage.feed("ERROR: reward model endpoint unreachable (connection refused)", "job-driver-raysubmit_x.log")
    triage.set_exit_status(ExitStatus(1))
    top = triage.report().top
    assert top is not None and top.id == "unrecognized-failure"
    assert (top.evidence[0].source, top.evidence[0].line) == ("job-driver-raysubmit_x.log", 2), top.evidence


def test_the_raylets_periodic_oom_summary_is_the_nodes() -> None:
    """It names no job and counts kills whose own records name their jobs: no job's window reads it (in the
    trial, a healthy job that ended just before its neighbour's OOM kill got it as a note), the node does."""
    from rlfix.integrations.ray_jobs import Ownership

    summary = (
        b"[2026-11-26 12:28:48,829 E 19714 19714] (raylet) node_manager.cc:3219: 1 Workers (tasks / actors) killed "
        b"due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 9e4b, IP: 192.0.2.2) "
        b"over the last time period. To see more information about the Workers killed on this node, use "
        b"`ray logs raylet.out -ip 192.0.2.2`"
    )
    owners = Ownership({}, {})
    assert owners.identity("07000000")(summary) is False
    assert owners.identity(None, submission="raysubmit_x")(summary) is False
    assert owners.identity(None, ["07000000"], submissions=["raysubmit_x"])(summary) is True


# --- absurd values in Ray's own files (security audit 2026-11-26, M15 and M10c) ----------------


@pytest.mark.parametrize("stamp", ["nan", "1e999", "-99999999999999", "inf"])
def test_an_absurd_event_time_is_skipped_not_a_traceback(tmp_path: Path, stamp: str, run_cli: RunCli) -> None:
    logs = tmp_path / "logs"
    (logs / "events").mkdir(parents=True)
    (logs / "raylet.out").touch()
    (logs / "gcs_server.out").touch()
    start = datetime(2026, 11, 23, 18, 43, 5).timestamp()
    (logs / "events" / "event_JOBS.log").write_text(
        f'{{"source_type": "JOBS", "message": "Started a ray job raysubmit_x.", "timestamp": "{stamp}"}}\n'
        f'{{"source_type": "JOBS", "message": "Started a ray job raysubmit_y.", "timestamp": "{start:.0f}"}}\n'
    )
    from rlfix.integrations.ray_jobs import session_jobs

    spans = {s.key: s for s in session_jobs(logs)}
    assert "raysubmit_x" not in spans and spans["raysubmit_y"].start == start  # the bad value only is skipped
    proc = run_cli(["ray", "logs", str(logs)])
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_a_5000_digit_driver_pid_is_no_pid_not_a_traceback(tmp_path: Path, run_cli: RunCli) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "raylet.out").touch()
    (logs / "gcs_server.out").write_text(
        "[2026-11-23 18:41:44,941 I 29493 29493] (gcs_server) gcs_job_manager.cc:115: Registering job. "
        f"job_id=02000000 driver_pid={'9' * 5000}\n"
    )
    from rlfix.integrations.ray_jobs import session_jobs

    assert [s.job_id for s in session_jobs(logs)] == ["02000000"]  # the job is still known
    proc = run_cli(["ray", "logs", str(logs)])
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_a_job_ray_marked_failed_is_never_healthy(tmp_path: Path, run_cli: RunCli) -> None:
    """The audit's M10c reproduction: Ray says FAILED, no signature matches: 1 failed, exit 1, no token shown."""
    logs = tmp_path / "s" / "logs"
    (logs / "events").mkdir(parents=True)
    (logs / "raylet.out").touch()
    (logs / "gcs_server.out").touch()
    start = int(datetime(2026, 11, 23, 18, 43, 5).timestamp())
    (logs / "events" / "event_JOBS.log").write_text(
        f'{{"source_type": "JOBS", "message": "Started a ray job raysubmit_a.", "timestamp": "{start}"}}\n'
        '{"source_type": "JOBS", "message": "Completed a ray job raysubmit_a with a status FAILED. Job entrypoint '
        'command failed with exit code 1 HF_TOKEN=hf_JobMsgQz7xK2mP9vL4nR8tW1yB5cD3", "timestamp": "%d"}\n'
        % (start + 19)
    )
    (logs / "job-driver-raysubmit_a.log").write_text("training step 3\n")
    proc = run_cli(["ray", "logs", str(logs)])
    assert proc.returncode == 1 and proc.stdout.startswith("rlfix: Ray session: 1 job, 1 failed"), proc.stdout
    doc = run_cli(["ray", "logs", str(logs), "-f", "json"])
    assert doc.returncode == 1 and "hf_JobMsg" not in doc.stdout
    assert json.loads(doc.stdout)["fleet"]["jobs"][0]["failed"] is True


def test_last_failed_names_the_job_it_picked() -> None:
    from rlfix.integrations.ray import picked
    from rlfix.integrations.ray_jobs import JobSpan

    span = JobSpan("raysubmit_6V1gk14rEkqMpXgV", "0a000000", start=1_795_460_000.0, end=1_795_460_040.0)
    assert (
        picked(span) == f"rlfix: --last-failed: raysubmit_6V1gk14rEkqMpXgV (job 0a000000), failed {utc_text(span.end)}"
    )
    assert picked(JobSpan(job_id="0b000000")) == "rlfix: --last-failed: 0b000000"


def test_a_submission_id_is_masked_whole_in_error_templates() -> None:
    """Digits inside a submission id were masked one by one (`raysubmit_<N>C<N>zZHz…`): the id is one id."""
    import re

    from rlfix.templates import pattern_for, template

    one = "Job raysubmit_9C8zZHzsFUJnnSTN FAILED: Job entrypoint command failed with exit code 1"
    other = "Job raysubmit_Fkmy9dywLKu44MNy FAILED: Job entrypoint command failed with exit code 1"
    assert (
        template(one)
        == template(other)
        == "Job raysubmit_<ID> FAILED: Job entrypoint command failed with exit code <N>"
    )
    assert re.fullmatch(pattern_for(one), other)  # a drafted pattern matches the next submission too


def test_text_slips_worker_worker_and_evidence_below() -> None:
    """A Ray task named `worker` is "worker", not "worker worker"; the fix points up to the evidence."""
    from rlfix.details import ExitStatus

    triage = Triage()
    triage.feed("(worker pid=10669) RuntimeError: CUDA error: an illegal memory access was encountered", "driver")
    text = triage.report().render("text")
    assert "first seen on worker\n" in text and "worker worker" not in text
    triage = Triage()
    triage.feed("ERROR: reward model endpoint http://rm.internal:8000/score unreachable after 5 retries", "driver")
    triage.set_exit_status(ExitStatus(1))
    text = triage.report().render("text")
    assert text.index("evidence:") < text.index("Read the evidence lines above") and " below" not in text


@pytest.mark.parametrize("process", ["raylet", "gcs_server", "dashboard_agent"])
def test_a_first_failure_on_rays_own_process_is_not_called_a_worker(process: str) -> None:
    """Issue 22: "first seen on worker raylet". The raylet, the GCS and the dashboard agent are Ray's own
    processes, named by what they are; a task or actor is still a worker."""
    triage = Triage()
    triage.feed(f"({process}, ip=10.0.0.2) RuntimeError: CUDA error: an illegal memory access was encountered", "d")
    text = triage.report().render("text")
    assert f"first seen on {process}, node 10.0.0.2\n" in text and "worker" not in text.split("first seen on")[1][:40]
    triage = Triage()
    triage.feed("(RolloutWorker pid=7, ip=10.0.0.2) RuntimeError: CUDA error: an illegal memory access was encountered")
    assert "first seen on worker RolloutWorker, node 10.0.0.2\n" in triage.report().render("text")


def test_an_unrecognised_failure_quotes_the_jobs_own_driver_log_first() -> None:
    """Issue 22 item 2: a failed job quotes its own last error line, driver log first. A job that printed a
    line after its error ("… done") did not end its input with it, and the evidence then went in read order:
    a shared raylet line of its window (read first, and naming no job) led. The order no longer depends on that."""
    from rlfix.integrations.ray_jobs import driver_first

    for node in ("", "10.0.0.1:"):  # `ray logs` names the file; `ray cluster` adds the node it came from
        triage = Triage()
        triage.feed(
            "[2026-11-26 14:20:53,706 W 16003 16012] (raylet) store.cc:366: Disconnecting client due to connection "
            "error with code 2: End of file",
            f"{node}raylet.out",
        )
        driver = f"{node}job-driver-raysubmit_dQc0QEXbEfFNELX6.log"
        for line in (
            "loading reward model from http://reward-model:8000",
            "ERROR: reward model endpoint unreachable (connection refused)",
            "ERROR: giving up on the reward model",
            "saving partial rollouts to /home/user/out ... done",
        ):
            triage.feed(line, driver)
        triage.set_exit_status(ExitStatus(1))
        report = driver_first(triage.report())
        assert report.top is not None and report.top.id == "unrecognized-failure"
        quoted = [(e.source, e.line) for e in report.top.evidence]
        assert quoted[:2] == [(driver, 3), (driver, 2)] and quoted[2][0] == f"{node}raylet.out", quoted
        first = report.insights.first_failure
        assert first is not None and (first.source, first.line) == (driver, 3)
    healthy = Triage()
    healthy.feed("ERROR: reward model endpoint unreachable (connection refused)", "job-driver-raysubmit_a.log")
    healthy.set_exit_status(ExitStatus(0))
    assert driver_first(healthy.report()) == healthy.report()


def test_memory_above_threshold_without_a_kill_is_not_a_kill(tmp_path: Path) -> None:
    """The memory monitor prints "above threshold" on every refresh, also when it kills nothing (trial D14)."""
    record = (FIXTURES / "ray-oom-killer--raylet-out.log").read_text().splitlines()
    above = next(line for line in record if "Node memory usage above threshold" in line)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "raylet.out").write_text(above + "\n")
    triage = Triage()
    feed_session_logs(triage, logs)
    assert triage.report().get("ray-oom-killer") is None
    # The kill record itself still is one, from its own lines.
    (logs / "raylet.out").write_text("\n".join(record) + "\n")
    triage = Triage()
    feed_session_logs(triage, logs)
    kill = triage.report().get("ray-oom-killer")
    assert kill is not None and "above threshold" not in kill.first.text


# Ray 2.60's monitor.log when the autoscaler's metrics port (44217) was taken, recorded here (paths neutral).
METRICS_PORT_TAKEN = """\
2026-11-26 11:24:55,038\tINFO monitor.py:199 -- Starting autoscaler metrics server on port 44217
2026-11-26 11:24:55,038\tERROR monitor.py:218 -- An exception occurred while starting the metrics server.
Traceback (most recent call last):
  File "/home/user/venv/lib/python3.11/site-packages/ray/autoscaler/_private/monitor.py", line 207, in __init__
    prometheus_client.start_http_server(
  File "/home/user/venv/lib/python3.11/site-packages/prometheus_client/exposition.py", line 260, in start_wsgi_server
    httpd = make_server(addr, port, app, TmpServer, handler_class=_SilentHandler)
  File "/usr/local/lib/python3.11/socketserver.py", line 472, in server_bind
    self.socket.bind(self.server_address)
OSError: [Errno 98] Address already in use
2026-11-26 11:24:55,070\tINFO monitor.py:226 -- Monitor: Started
"""


def test_rays_metrics_port_clash_is_not_a_rendezvous_error(tmp_path: Path) -> None:
    """The autoscaler logs it and runs on without metrics: not dist-port-in-use (trial D14)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "monitor.log").write_text(METRICS_PORT_TAKEN + "OSError: [Errno 98] Address already in use\n")
    triage = Triage()
    feed_session_logs(triage, logs)
    clash = triage.report().get("dist-port-in-use")
    # Only the copy outside Ray's record (line 12) is read; the record's lines keep their numbers.
    assert clash is not None and [e.line for e in clash.evidence] == [12]
    (logs / "monitor.log").write_text(METRICS_PORT_TAKEN)
    triage = Triage()
    feed_session_logs(triage, logs, since="2026-11-26 11:00:00")  # through a time window too
    assert triage.report().get("dist-port-in-use") is None
    # The same line from a job's own worker is still the rendezvous clash it is.
    (logs / "worker-aa-02000000-7.err").write_text("OSError: [Errno 98] Address already in use\n")
    triage = Triage()
    feed_session_logs(triage, logs)
    assert triage.report().get("dist-port-in-use") is not None


def test_triage_on_rays_temp_root_counts_sessions_only(tmp_path: Path) -> None:
    """`/tmp/ray` holds Ray's own files beside its sessions; they were counted as healthy jobs (trial D14)."""
    from rlfix.fleet.jobs import find_jobs

    logs = _session(tmp_path)  # tmp_path/session_…/logs, and session_latest linking to it
    (tmp_path / "ray_current_cluster").write_text("127.0.0.1:6379\n")
    (tmp_path / "prom_metrics_service_discovery.json").write_text('[{"labels": {}, "targets": []}]\n')
    assert [Path(j.path).name for j in find_jobs([str(tmp_path)])] == [logs.parent.name]
    # A folder of jobs that is no Ray temp root keeps every file as a job.
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "metrics.json").write_text("{}\n")
    (plain / "train.log").write_text("step 1\n")
    assert sorted(Path(j.path).name for j in find_jobs([str(plain)])) == ["metrics.json", "train.log"]


def test_ray_cluster_json_carries_each_nodes_summary() -> None:
    """`rlfix ray cluster -f json` had no node summary, though docs/ray.md promised it (trial D13)."""
    from rlfix.fleet.sections import JobReports
    from rlfix.integrations.ray_scan import node_scan

    def part(sources: list[list[object]], counts: dict[str, int]) -> dict[str, object]:
        return {"lines": [], "counts": counts, "sources": sources, "errors": []}

    raylet = ["raylet.out", 4000, 300_000, False]
    result = {
        "node_id": "946194a3",
        "ip": "192.0.2.2",
        "logs_dir": "/tmp/ray/session_latest/logs",
        # Two jobs and the node read the same raylet.out: it is one file of the node, counted once.
        "jobs": [
            (None, part([raylet, ["worker-aa-02000000-7.err", 12, 800, False]], {"python-exception": 2})),
            (None, part([raylet], {"ray-oom-killer": 1})),
        ],
        "node": part([raylet], {}),
    }
    scan = node_scan(result)
    assert (scan.files, scan.lines, scan.bytes) == (2, 4012, 300_800)
    assert scan.counts == {"python-exception": 2, "ray-oom-killer": 1}
    doc = JobReports((), None, ray_nodes=(scan,)).to_dict()
    assert doc["ray_nodes"] == [scan.to_dict()] and doc["ray_nodes"][0]["ip"] == "192.0.2.2"
    assert "ray_nodes" not in JobReports(()).to_dict()  # `ray logs` scans no node


def test_the_driver_hooks_own_report_is_not_read_back_as_evidence(tmp_path: Path) -> None:
    """The hook prints its report into the driver log; read back, its quotes counted twice (trial D11)."""
    from rlfix.integrations.ray_chatter import driver_lines

    died = "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task."
    hook = Triage()
    hook.feed(died, "driver: ActorDiedError")
    printed = hook.report().render("text", color=False).rstrip("\n").split("\n")
    assert printed[0].startswith("rlfix: 1 finding in") and died in "\n".join(printed[1:])
    lines = [
        "Running entrypoint for job raysubmit_H: python hook.py",
        "(Learner pid=40) train step 5",
        *printed,
        "Traceback (most recent call last):",
        '  File "/home/user/hook.py", line 15, in <module>',
        died,
        "rlfix: most likely cause: ray-actor-died (Ray actor or worker died (cause reported elsewhere))",
    ]
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "job-driver-raysubmit_H.log").write_text("\n".join(lines) + "\n")
    triage = Triage()
    feed_session_logs(triage, logs)
    diag = triage.report().get("ray-actor-died")
    assert diag is not None and [e.line for e in diag.evidence] == [len(lines) - 1], diag.evidence
    # The driver log as the Jobs API returns it, and as --follow reads it: the same lines are dropped.
    kept = list(driver_lines(lines))
    assert len(kept) == len(lines) and kept[-2] == died and not any(kept[2 : 2 + len(printed)]) and not kept[-1]


def test_a_time_asked_for_leaves_out_node_lines_that_cannot_be_placed_in_it(tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from rlfix.integrations.ray import diagnose_session_jobs

    logs = tmp_path / "session_1" / "logs"
    logs.mkdir(parents=True)
    (logs / "raylet.out").write_text("")
    (logs / "gcs_server.out").write_text("")
    # A file of no job, without a single timestamp (a worker's stderr): its time is unknown.
    (logs / "worker-7933049bcf58bc556e912f2df74d4a5ea56f64c1d304ab0f73ae7a2c-ffffffff-31513.err").write_text(
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    everything = diagnose_session_jobs(logs)
    assert everything.node is not None and everything.node.report.ids == ["cuda-illegal-memory-access"]
    day = datetime(2000, 1, 1, tzinfo=timezone.utc).timestamp()
    windowed = diagnose_session_jobs(logs, since=day, until=day + 86400)
    assert windowed.node is not None and windowed.node.report.ids == []
    assert windowed.exit_code == 0


def test_a_time_asked_for_cuts_the_nodes_own_records_too(tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from rlfix.integrations.ray import diagnose_session_jobs

    logs = tmp_path / "session_1" / "logs"
    logs.mkdir(parents=True)
    (logs / "gcs_server.out").write_text("")
    # The raylet's periodic OOM summary names no job: it is the node's, whatever the jobs' windows.
    (logs / "raylet.err").write_text(
        "[2026-11-26 13:11:28,972 E 25187 25187] (raylet) node_manager.cc:3517: 1 Workers (tasks / actors) "
        "killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node "
        "(ID: 38d9d9c20b4d, IP: 192.0.2.2) over the last time period.\n"
    )
    (logs / "raylet.out").write_text("")
    assert diagnose_session_jobs(logs).node.report.ids == ["ray-oom-killer"]  # type: ignore[union-attr]
    day = datetime(2000, 1, 1, tzinfo=timezone.utc).timestamp()
    windowed = diagnose_session_jobs(logs, since=day, until=day + 86400)
    assert windowed.node is not None and windowed.node.report.ids == [] and windowed.exit_code == 0
