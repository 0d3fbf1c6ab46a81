"""Session-log rules without a cluster: which files are read, per-job filtering, bounded reading."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rlfix.core import Triage
from rlfix.errors import InputError
from rlfix.integrations.ray_logs import (
    Since,
    belongs_to_job,
    classify,
    feed_session_logs,
    resolve_logs_dir,
    session_log_files,
)

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
