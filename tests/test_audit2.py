"""The second security audit's defects M7-M16 and L1-L7 (../shared/audits/security-2026-11-26.md).

Each test runs the audit's reproduction and one variant of our own, mostly through the installed
console script: these are things users type.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlfix.read.inputs import looks_binary, utf16
from tests.conftest import RunCli, rlfix_executable

CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"
CUDA_ID = "cuda-illegal-memory-access"


def _quick(args: list[str], cwd: Path, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    """The installed CLI with a short timeout: a hang fails the test instead of stalling the suite."""
    return subprocess.run(
        [*rlfix_executable(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )


# -- M7: links out of a job folder ------------------------------------------------------------


def _fleet_with_links(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    for target in (outside / "private.txt", outside / "dir" / "x.log"):
        target.write_text(f"ERROR: OUTSIDE-SECRET-LINE\n{CUDA} (OUTSIDE-FILE)\n")
    fleet = tmp_path / "fleet6"
    (fleet / "job1").mkdir(parents=True)
    (fleet / "job1" / "rank0.log").write_text("step 1 ok\n")
    (fleet / "job2.log").symlink_to("../outside/private.txt")
    (fleet / "job3").symlink_to("../outside/dir")
    # Our variant: a link inside a job folder, to a file outside the fleet.
    (fleet / "job1" / "peek.log").symlink_to("../../outside/private.txt")
    return fleet


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html"])
def test_m7_triage_never_reads_links_out_of_the_folder(tmp_path: Path, run_cli: RunCli, fmt: str) -> None:
    fleet = _fleet_with_links(tmp_path)
    result = run_cli(["triage", str(fleet), "-f", fmt, "-j", "1"])
    assert "OUTSIDE" not in result.stdout + result.stderr
    assert result.returncode == 0, result.stderr
    assert "job2.log: link out of the folder" in result.stderr
    assert "job3: link out of the folder" in result.stderr


def test_m7_follow_symlinks_reads_them(tmp_path: Path, run_cli: RunCli) -> None:
    fleet = _fleet_with_links(tmp_path)
    result = run_cli(["triage", str(fleet), "--follow-symlinks", "-j", "1"])
    assert result.returncode == 1
    assert CUDA_ID in result.stdout


# -- M8: FIFOs in scanned folders ---------------------------------------------------------------


@pytest.mark.parametrize("command", [["diagnose"], ["triage", "-j", "1"], ["triage", "-j", "2"]])
def test_m8_a_fifo_in_a_folder_is_skipped_not_waited_on(tmp_path: Path, command: list[str]) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.log").write_text(CUDA + "\n")
    os.mkfifo(folder / "b.pipe")
    result = _quick([*command, str(folder)], tmp_path)
    assert result.returncode == 1, result.stderr
    assert CUDA_ID in result.stdout
    assert "b.pipe: not a regular file" in result.stderr


def test_m8_a_fifo_deeper_down_is_skipped_too(tmp_path: Path) -> None:
    nested = tmp_path / "d" / "rank0"
    nested.mkdir(parents=True)
    (nested / "a.log").write_text(CUDA + "\n")
    os.mkfifo(nested / "pipe")
    result = _quick(["triage", str(tmp_path / "d"), "-j", "1"], tmp_path)
    assert result.returncode == 1, result.stderr


# -- M9: control bytes in the head are not "binary" --------------------------------------------

AUDIT_M9 = {
    "nul-in-head": b"step 1 ok\n" * 100 + b"\0" * 1024 + b"step 2 ok\n" * 600,
    "mid-hole": b"start\n" * 200 + b"\0" * 2_000_000,
    "conda": b"Solving environment: " + b"\b|\b/\b-\b\\" * 800 + b"done\n",
    "pip": b"Downloading torch " + b"\x08" * 900 + b" 50%\n" + b"step ok\n" * 100,
    # Ours: a tqdm bar redrawn with ESC sequences and a NUL-padded block from a crashed writer.
    "tqdm-nul": b"epoch 1 " + b"\x1b[A\r 50%|#####     |" * 300 + b"\n" + (b"x" * 60 + b"\0" * 40 + b"\n") * 30,
}


@pytest.mark.parametrize("name", sorted(AUDIT_M9))
def test_m9_control_bytes_in_the_head_do_not_hide_the_crash(tmp_path: Path, run_cli: RunCli, name: str) -> None:
    log = tmp_path / f"{name}.log"
    log.write_bytes(AUDIT_M9[name] + CUDA.encode() + b"\n")
    result = run_cli(["diagnose", str(log)])
    assert result.returncode == 1, result.stdout + result.stderr
    assert CUDA_ID in result.stdout


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_m9_bomless_utf16_with_cjk_is_read(tmp_path: Path, run_cli: RunCli, encoding: str) -> None:
    log = tmp_path / "u16.log"
    log.write_bytes(("🚀 训练开始\n" * 20 + CUDA + "\n").encode(encoding))
    result = run_cli(["diagnose", str(log)])
    assert result.returncode == 1, result.stderr
    assert CUDA_ID in result.stdout


def test_m9_gbk_text_is_text_and_random_bytes_are_binary() -> None:
    assert not looks_binary(("训练开始 第一步 损失\n" * 300).encode("gbk")[:8192])
    assert not looks_binary(("Ünïcödé Latin-1 log\n" * 300).encode("latin-1")[:8192])
    assert looks_binary(os.urandom(8192))
    assert looks_binary(Path(sys.executable).resolve().read_bytes()[:8192])
    assert utf16(os.urandom(8192)) is None


# -- M10a/b: unreadable jobs and damaged gzip ---------------------------------------------------


def test_m10a_triage_exits_2_when_a_job_cannot_be_read(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "a.log").write_text("step 1 ok\n")
    result = run_cli(["triage", "a.log", "/proc/self/mem", "-j", "1"])
    assert result.returncode == 2, result.stdout
    assert "/proc/self/mem" in result.stderr
    # A failed job still says so first: the failure matters more than an unreadable neighbour.
    (tmp_path / "b.log").write_text(CUDA + "\n")
    assert run_cli(["triage", "b.log", "/proc/self/mem", "-j", "1"]).returncode == 1


@pytest.mark.parametrize("damage", ["trailing-garbage", "bad-crc"])
def test_m10b_a_damaged_gzip_keeps_its_finding_in_the_fleet(tmp_path: Path, run_cli: RunCli, damage: str) -> None:
    packed = bytearray(gzip.compress(f"{CUDA}\n".encode()))
    if damage == "trailing-garbage":
        packed += b"job restarted\n"
    else:
        packed[-8] ^= 0xFF  # the CRC32 of the member
    folder = tmp_path / "f5"
    folder.mkdir()
    (folder / "j1.log.gz").write_bytes(bytes(packed))
    one = run_cli(["diagnose", str(folder / "j1.log.gz")])
    # As for a truncated gzip: the finding is made, and the damage is an input error (exit 2).
    assert one.returncode == 2
    assert CUDA_ID in one.stdout
    assert "j1.log.gz (1 lines)" in one.stdout.splitlines()[0]
    assert "damaged gzip file" in one.stderr
    fleet = run_cli(["triage", str(folder), "-j", "1"])
    assert fleet.returncode == 1, fleet.stdout + fleet.stderr
    assert CUDA_ID in fleet.stdout


# -- L3: deep folders; L7: an empty path ---------------------------------------------------------


def _deep(root: Path, depth: int) -> None:
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open("x.log", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, (CUDA + "\n").encode())
        os.close(out)
    finally:
        os.close(fd)


@pytest.mark.parametrize("command", [["diagnose"], ["triage", "-j", "1"]])
def test_l3_a_thousand_folders_deep_is_read(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "deep").mkdir()
    _deep(tmp_path / "deep", 1100)
    result = _quick([*command, "deep", "-f", "json"], tmp_path, timeout=60)
    assert result.returncode == 1, result.stderr[-500:]
    assert "Traceback" not in result.stderr
    assert CUDA_ID in result.stdout


def test_l7_an_empty_path_is_an_error_not_the_current_directory(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "crash.log").write_text(CUDA + "\n")
    for args in (["diagnose", ""], ["diagnose", "crash.log", ""], ["triage", ""]):
        result = run_cli(args)
        assert result.returncode == 2, (args, result.stdout)
        assert result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1
