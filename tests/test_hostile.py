"""Hostile input: nothing a log (or a user) can throw at rlfix produces a traceback."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlfix.api import diagnose
from rlfix.core import Triage
from rlfix.match.normalize import normalize

CUDA_LINE = "RuntimeError: CUDA error: an illegal memory access was encountered"
RLFIX = [sys.executable, "-m", "rlfix"]
HYPO = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Pieces that exercise the prefixes, redraws and anchors, mixed with arbitrary bytes.
PIECES = st.sampled_from(
    [
        b"\r",
        b"\n",
        b"\x00",
        b"\x1b[31m",
        b"\x1b[0m",
        b"\xff\xfe",
        b"\xe2\x96",
        b"(WorkerDict pid=1, ip=1.2.3.4) ",
        b"[rank3]: ",
        b"[repeated 7x across cluster]",
        b"CUDA error: ",
        b"an illegal memory access was encountered",
        b"out of memory",
        b"NCCL INFO ",
        b"hf_abcdefghijklmnopqrstuvwxyz",
        b"https://u:p@h/",
        b" " * 600,
    ]
)
HOSTILE_BYTES = st.lists(st.one_of(st.binary(max_size=64), PIECES), max_size=40).map(b"".join)


def run_rlfix(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RLFIX, *args], capture_output=True, text=True, timeout=120, **kwargs)  # type: ignore[call-overload,no-any-return]


@HYPO
@given(HOSTILE_BYTES)
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    report = diagnose(data)
    report.render("text")
    report.render("json")
    report.render("markdown")


@HYPO
@given(st.lists(st.one_of(st.text(max_size=200), HOSTILE_BYTES), max_size=20))
def test_arbitrary_lines_never_raise_and_engines_agree(lines: list[str | bytes]) -> None:
    results = []
    for engine in ("python", "hyperscan"):
        triage = Triage(engine=engine)
        triage.feed_lines(lines)
        results.append(triage.report().to_dict()["diagnoses"])
    assert results[0] == results[1]


@HYPO
@given(HOSTILE_BYTES)
def test_block_scan_engines_agree(data: bytes) -> None:
    reports = [diagnose(data, engine=engine).to_dict() for engine in ("python", "hyperscan")]
    assert reports[0]["diagnoses"] == reports[1]["diagnoses"]


@HYPO
@given(st.text(max_size=500))
def test_normalize_never_raises(text: str) -> None:
    line = normalize(text, "<h>", 1)
    assert isinstance(line.message, str)


def test_invalid_utf8_and_nul_bytes_still_diagnosed() -> None:
    data = b"\xff\xfe\x00garbage\x00\n\x1b[31m" + CUDA_LINE.encode() + b"\x1b[0m \xc3\x28\n"
    assert diagnose(data).top is not None
    assert diagnose(data).ids[0] == "cuda-illegal-memory-access"


def test_empty_input() -> None:
    assert diagnose(b"").ids == []
    result = run_rlfix("diagnose", stdin=subprocess.DEVNULL)
    assert result.returncode == 0
    assert result.stderr == ""


def test_binary_file_skipped_with_warning_others_processed(tmp_path: Path) -> None:
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 64 + CUDA_LINE.encode())
    log = tmp_path / "train.log"
    log.write_text(CUDA_LINE + "\n")
    result = run_rlfix("diagnose", "--no-color", str(binary), str(log))
    assert result.returncode == 1
    assert result.stderr.strip() == f"rlfix: warning: {binary}: binary file, skipped"
    assert "cuda-illegal-memory-access" in result.stdout


def test_missing_and_unreadable_paths_one_line_exit_2_others_processed(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(CUDA_LINE + "\n")
    missing = tmp_path / "nope.log"
    not_a_dir = log / "child.log"  # ENOTDIR: unreadable even for root
    result = run_rlfix("diagnose", "--no-color", str(missing), str(not_a_dir), str(log))
    assert result.returncode == 2
    errors = result.stderr.splitlines()
    assert len(errors) == 2
    assert all(e.startswith("rlfix: error: ") for e in errors)
    assert "Traceback" not in result.stderr
    assert "cuda-illegal-memory-access" in result.stdout


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied_path(tmp_path: Path) -> None:  # pragma: no cover - CI runs unprivileged
    secret = tmp_path / "secret.log"
    secret.write_text(CUDA_LINE + "\n")
    secret.chmod(0)
    result = run_rlfix("diagnose", str(secret))
    assert result.returncode == 2
    assert result.stderr.strip() == f"rlfix: error: {secret}: permission denied"


def test_huge_line_memory_stays_bounded(tmp_path: Path) -> None:
    big = tmp_path / "one-line.log"
    with big.open("wb") as fh:
        for _ in range(48):
            fh.write(b"token " * (1024 * 1024 // 6))
        fh.write(b" " + CUDA_LINE.encode())  # 48 MB, no newline, the failure at the very end
    probe = (
        "import resource, sys, tracemalloc\n"
        "from rlfix.api import diagnose\n"
        "diagnose('warm up\\n')\n"
        "tracemalloc.start()\n"
        "report = diagnose(sys.argv[1])\n"
        "_, peak = tracemalloc.get_traced_memory()\n"
        "print(report.ids[0] if report.ids else '-', peak // 2**20)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe, str(big)], capture_output=True, text=True, timeout=120)
    top, peak_mb = result.stdout.split()
    assert top == "cuda-illegal-memory-access"
    # Reading the line whole would take 48 MB as bytes plus more decoded; two block buffers, a 1 MB
    # look-back and a window around the hit keep it well under half of that.
    assert int(peak_mb) < 20, f"peak traced memory {peak_mb} MB"


def test_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_text((CUDA_LINE + "\n" + "step 1 loss=0.1 " * 20 + "\n") * 20000)
    for reader in ("head -1", "true"):
        cmd = f"{' '.join(RLFIX)} diagnose -a -v {big} | {reader}; echo status=${{PIPESTATUS[0]}} >&2"
        result = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
        err = result.stderr.splitlines()
        assert err[-1] in ("status=0", "status=1")
        assert err[:-1] == [], result.stderr


@pytest.mark.skipif(platform.machine() != "x86_64" or not Path("/proc/self/syscall").exists(), reason="x86_64 /proc")
def test_ctrl_c_while_reading_a_pipe() -> None:
    proc = subprocess.Popen(
        [*RLFIX, "diagnose", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write("step 1\n")
        proc.stdin.flush()
        # Wait until it is blocked in read(0, ...) on the pipe: syscall 0, first argument fd 0.
        deadline = time.monotonic() + 60
        while not Path(f"/proc/{proc.pid}/syscall").read_text().startswith("0 0x0 "):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130
        # click writes an empty line before its Abort; the message itself is one line.
        assert [line for line in err.splitlines() if line] == ["rlfix: interrupted"]
    finally:
        proc.kill()
        proc.wait()


CATASTROPHIC = """\
signatures:
  - id: user-catastrophic
    title: A user pattern that backtracks
    kind: root
    severity: fatal
    action: investigate
    owner: unknown
    reason: A test signature.
    summary: Nested quantifiers over the same characters.
    patterns:
      - regex: 'ERRTAG( |  )+$'
    remediation:
      steps: [Rewrite the pattern.]
    references: [https://www.regular-expressions.info/catastrophic.html]
    examples:
      match: ["ERRTAG   "]
      no_match: ["ERRTAG b"]
"""


@pytest.mark.slow
def test_catastrophic_user_pattern_rejected_by_lint_and_bounded_at_match_time(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    (kb_dir / "user.yaml").write_text(CATASTROPHIC)
    lint = run_rlfix("kb", "lint", "--kb", str(kb_dir))
    assert lint.returncode == 1
    assert "user-catastrophic" in lint.stderr and "backtrack" in lint.stderr
    # 60 spaces then a mismatch: exponential in the run length without the regex timeout.
    log = tmp_path / "evil.log"
    log.write_text(("ERRTAG" + " " * 60 + "!\n") * 5 + CUDA_LINE + "\n")
    started = time.monotonic()
    result = run_rlfix("diagnose", "--kb", str(kb_dir), "--no-color", str(log))
    assert time.monotonic() - started < 60
    assert result.returncode == 1
    assert "cuda-illegal-memory-access" in result.stdout
    assert "Traceback" not in result.stderr
