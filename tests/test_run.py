"""`rlfix run`: real commands, real pipes, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlfix.core import Triage
from rlfix.integrations.follow import LineFeeder
from rlfix.integrations.run import CommandNotFound, run_command

CUDA_LINE = "RuntimeError: CUDA error: an illegal memory access was encountered"
RLFIX = [sys.executable, "-m", "rlfix"]


def rlfix_run(*args: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*RLFIX, "run", *args], capture_output=True, timeout=60, **kwargs)  # type: ignore[call-overload,no-any-return]


def script(body: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(body)]


def test_failing_command_passes_output_through_and_reports(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    cmd = script(
        f"""
        import sys
        print("step 1 loss=0.25")
        print("{CUDA_LINE}", file=sys.stderr)
        sys.exit(3)
        """
    )
    result = rlfix_run("--report", str(report), "--", *cmd)
    assert result.returncode == 3
    assert result.stdout == b"step 1 loss=0.25\n"
    err = result.stderr.decode()
    assert err.startswith(CUDA_LINE + "\n")
    assert "rlfix: ALERT cuda-illegal-memory-access" in err
    assert "1. cuda-illegal-memory-access" in err
    data = json.loads(report.read_text())
    assert data["top"] == "cuda-illegal-memory-access"
    assert data["failed"] is True


def test_output_is_passed_through_byte_for_byte() -> None:
    payload = b"\xff\xfe invalid utf-8\r\nprogress 10%\rprogress 20%\r\x00nul\nno newline at end"
    cmd = script(f"import sys; sys.stdout.buffer.write({payload!r}); sys.stderr.buffer.write(b'e\\xff')")
    result = rlfix_run("--", *cmd)
    assert result.returncode == 0
    assert result.stdout == payload
    assert result.stderr == b"e\xff"  # a successful command: no report added


def test_report_path_not_written_on_success(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    result = rlfix_run("--report", str(report), "--", *script("print('ok')"))
    assert result.returncode == 0
    assert not report.exists()


def test_command_not_found_is_one_line_127() -> None:
    result = rlfix_run("--", "rlfix-no-such-command-xyz")
    assert result.returncode == 127
    assert result.stderr.decode().splitlines() == ["rlfix: error: rlfix-no-such-command-xyz: command not found"]


def test_command_not_executable_is_126(tmp_path: Path) -> None:
    target = tmp_path / "not-exec.sh"
    target.write_text("echo hi\n")
    target.chmod(0o644)
    result = rlfix_run("--", str(target))
    assert result.returncode == 126
    assert len(result.stderr.decode().splitlines()) == 1
    assert b"Traceback" not in result.stderr


def test_killed_command_reports_128_plus_signal() -> None:
    result = rlfix_run("--", "sh", "-c", "kill -9 $$")
    assert result.returncode == 128 + 9


def _wait_ready(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signals_are_forwarded_to_the_command(signum: int) -> None:
    cmd = script(
        f"""
        import signal, sys, time
        signal.signal({int(signum)}, lambda *a: sys.exit(5))
        print("ready", flush=True)
        time.sleep(30)
        sys.exit(9)
        """
    )
    # A new session: no controlling terminal, so SIGINT counts as sent by a program and is forwarded.
    proc = subprocess.Popen(
        [*RLFIX, "run", "--", *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        _wait_ready(proc)
        proc.send_signal(signum)
        assert proc.wait(timeout=20) == 5
    finally:
        proc.kill()
        proc.wait()


def test_alert_arrives_while_the_command_is_still_running() -> None:
    cmd = script(
        f"""
        import sys
        print("{CUDA_LINE}", file=sys.stderr, flush=True)
        sys.stdin.readline()   # keep running until the test has seen the alert
        sys.exit(1)
        """
    )
    proc = subprocess.Popen(
        [*RLFIX, "run", "--", *cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None and proc.stdin is not None
    try:
        assert proc.stderr.readline().decode().rstrip("\n") == CUDA_LINE
        alert = proc.stderr.readline().decode()
        assert alert.startswith("rlfix: ALERT cuda-illegal-memory-access at ")
        assert proc.poll() is None  # alerted before the command ended
        proc.stdin.write(b"go\n")
        proc.stdin.close()
        assert proc.wait(timeout=20) == 1
    finally:
        proc.kill()
        proc.wait()


def test_run_command_api_returns_status_and_writes_json(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "out.json"
    status = run_command(script(f"import sys; print({CUDA_LINE!r}); sys.exit(7)"), report_path=report)
    assert status == 7
    captured = capfd.readouterr()
    assert captured.out == CUDA_LINE + "\n"
    assert "cuda-illegal-memory-access" in captured.err
    assert json.loads(report.read_text())["top"] == "cuda-illegal-memory-access"


def test_run_command_api_raises_for_missing_command() -> None:
    with pytest.raises(CommandNotFound):
        run_command(["rlfix-no-such-command-xyz"])


def test_line_feeder_keeps_memory_bounded_and_finds_straddling_anchor() -> None:
    triage = Triage()
    feeder = LineFeeder(triage, "<test>", max_line=4096)
    filler = b"x" * 4000
    # The anchor text is split across two pushes and across the spill point of the long line.
    feeder.push(filler + CUDA_LINE.encode()[:30])
    feeder.push(CUDA_LINE.encode()[30:] + b" " + b"y" * 10_000)
    assert len(feeder._partial) < 4096
    feeder.push(b"\n")
    assert triage.seen() == ["cuda-illegal-memory-access"]


def test_long_output_is_streamed_with_bounded_memory(tmp_path: Path) -> None:
    # 60 MB of output, one 20 MB line among it; rlfix's own peak RSS is measured from a parent.
    writer = (
        "import sys\n"
        "w = sys.stdout.buffer.write\n"
        "line = b'step 12 loss=0.1 ' * 30 + b'\\n'\n"
        "for _ in range(80000): w(line)\n"
        "for _ in range(20): w(b'z' * 1_000_000)\n"
        f"w(b'\\n{CUDA_LINE}\\n'); sys.exit(2)\n"
    )
    probe = (
        "import resource, subprocess, sys\n"
        f"r = subprocess.run([*{RLFIX!r}, 'run', '--', sys.executable, '-c', {writer!r}],"
        " stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n"
        "sys.stderr.buffer.write(r.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    status, peak_mb = map(int, result.stdout.split())
    assert status == 2
    assert "cuda-illegal-memory-access" in result.stderr
    assert peak_mb < 100, f"peak RSS {peak_mb} MB"


def test_environment_gets_unbuffered_python() -> None:
    result = rlfix_run(
        "--",
        *script("import os; print(os.environ.get('PYTHONUNBUFFERED'))"),
        env={**os.environ, "PYTHONUNBUFFERED": ""},
    )
    assert result.stdout == b"\n"  # an explicit setting is kept
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    result = rlfix_run("--", *script("import os; print(os.environ.get('PYTHONUNBUFFERED'))"), env=env)
    assert result.stdout == b"1\n"


def test_death_by_sigkill_is_evidence_of_an_oom_kill(tmp_path: Path) -> None:
    """Issue 11 item 4: the exit status reaches the diagnosis, with the check that confirms it."""
    report = tmp_path / "report.json"
    proc = rlfix_run("--report", str(report), "--", sys.executable, "-c", "import os; os.kill(os.getpid(), 9)")
    assert proc.returncode == 137
    err = proc.stderr.decode()
    assert "host-oom-sigkill" in err and "SIGKILL" in err and "memory.events" in err
    data = json.loads(report.read_text())
    assert data["failed"] is True and data["top"] == "host-oom-sigkill"
    assert data["insights"]["exit"] == {"status": 137, "signal": "SIGKILL", "signal_number": 9}
    assert any(r.startswith("to confirm: dmesg") for r in data["diagnoses"][0]["reasons"])


def test_a_segfault_is_a_native_crash_and_a_printed_cause_still_wins(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    proc = rlfix_run("--report", str(report), "--", *script("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"))
    assert proc.returncode == 139
    assert json.loads(report.read_text())["top"] == "native-crash"
    killed_after_cuda = f'import os, sys; print("{CUDA_LINE}", file=sys.stderr); os.kill(os.getpid(), 9)'
    proc = rlfix_run("--report", str(report), "--", sys.executable, "-c", killed_after_cuda)
    assert proc.returncode == 137
    data = json.loads(report.read_text())
    assert data["top"] == "cuda-illegal-memory-access" and "host-oom-sigkill" not in json.dumps(data["diagnoses"])


def test_failed_is_true_whenever_the_command_failed(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    proc = rlfix_run("--report", str(report), "--", *script("import sys; print('bye'); sys.exit(3)"))
    assert proc.returncode == 3
    data = json.loads(report.read_text())
    assert data["failed"] is True and data["diagnoses"] == [] and data["insights"]["exit"]["status"] == 3
    assert "the command failed (exit status 3)" in proc.stderr.decode()
