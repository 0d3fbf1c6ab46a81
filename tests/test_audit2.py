"""The second security audit's defects M7-M16 and L1-L7 (../shared/audits/security-2026-11-26.md).

Each test runs the audit's reproduction and one variant of our own, mostly through the installed
console script: these are things users type.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlfix import cli, core, model, safe
from rlfix.errors import Location
from rlfix.fleet import gather
from rlfix.fleet.jobs import Job
from rlfix.fleet.model import JobSummary
from rlfix.fleet.scan import ScanSettings
from rlfix.kb.expansion import expansion
from rlfix.match import matcher
from rlfix.observe.recent import RecentLines
from rlfix.output import write_report
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
    # As `rlfix diagnose` does: an unreadable input is exit 2 whatever else was found, and the
    # table still shows the job that failed.
    (tmp_path / "b.log").write_text(CUDA + "\n")
    both = run_cli(["triage", "b.log", "/proc/self/mem", "-j", "1"])
    assert both.returncode == 2
    assert CUDA_ID in both.stdout


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
    try:
        _deep(tmp_path / "deep", 1100)
        result = _quick([*command, "deep", "-f", "json"], tmp_path, timeout=60)
    finally:
        # pytest's clean-up of old temporary folders recurses, and would fail on this tree later.
        subprocess.run(["rm", "-rf", str(tmp_path / "deep")], check=True)
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


# -- M11: bounded recent lines; --follow stops while data keeps coming -------------------------


def test_m11_recent_lines_are_bounded_in_bytes() -> None:
    recent = RecentLines(lines=2000, max_bytes=1 << 20, line_bytes=4096)
    for _ in range(2500):
        recent.append(b"x" * 1_000_000)
    assert recent.size <= 1 << 20
    assert all(len(line) <= 4096 for line in recent)
    assert recent.size == sum(len(line) for line in recent)
    recent.append(b"tail")
    assert recent[-1] == b"tail"


def test_m11_run_with_megabyte_lines_still_diagnoses(tmp_path: Path, run_cli: RunCli) -> None:
    script = (
        f"import sys\nfor _ in range(300): sys.stdout.write('x' * 1_000_000 + '\\n')\nprint({CUDA!r})\nsys.exit(1)\n"
    )
    result = run_cli(["run", "--", sys.executable, "-c", script])
    assert result.returncode == 1
    assert CUDA_ID in result.stderr


def test_m11_follow_on_an_endless_stream_stops_on_sigint(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*rlfix_executable(), "diagnose", "--follow", "/dev/zero"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("--follow /dev/zero ignored SIGINT")
    assert "no failure recognised" in out


# -- M12: a killed worker, and SIGTERM -----------------------------------------------------------


def _poisoned_scan(job: Job, settings: ScanSettings, kb: object = None) -> JobSummary:
    if job.path.endswith("poison"):
        os._exit(9)  # what the OOM killer leaves behind: the worker is simply gone
    return JobSummary(job=job.path, cause="healthy", key="healthy", files=1)


def test_m12_a_worker_that_dies_loses_only_its_own_job(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLFIX_START_METHOD", "fork")  # the workers inherit the patched scan
    monkeypatch.setattr(gather, "scan_job", _poisoned_scan)
    jobs = [Job(f"job{i}") for i in range(6)] + [Job("poison")] + [Job(f"job{i}") for i in range(6, 14)]
    out = list(gather.summaries(jobs, ScanSettings(), workers=2, kb=None))
    assert [s.job for s in out] == [j.path for j in jobs]
    dead = [s for s in out if s.errors]
    assert [s.job for s in dead] == ["poison"]
    assert dead[0].errors == (gather.WORKER_DIED,)


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found.update(int(c) for c in (task / "children").read_text().split())
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def test_m12_sigterm_leaves_no_worker_behind(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for i in range(40):  # enough work that the pool is busy when the signal comes
        (fleet / f"job{i}.log").write_bytes(b"".join(b"step %d ok loss=0.%d\n" % (n, n) for n in range(200_000)))
    proc = subprocess.Popen([*rlfix_executable(), "triage", str(fleet), "-j", "2"], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    workers: set[int] = set()
    while len(workers) < 2 and time.monotonic() < deadline:
        workers |= _children(proc.pid)
        time.sleep(0.05)
    assert workers, "no worker started"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)]


# -- M13: names that are not UTF-8; L6: -o replaces the file whole ---------------------------------


def test_m13_non_utf8_names_in_written_reports(tmp_path: Path, run_cli: RunCli) -> None:
    name = b"gbk-" + "训练任务.log".encode("gbk")
    (tmp_path / os.fsdecode(name)).write_bytes(CUDA.encode() + b"\n")
    for fmt in ("text", "json", "markdown", "html"):
        result = run_cli(["diagnose", os.fsdecode(name), "-f", fmt, "-o", f"out.{fmt}"])
        assert result.returncode == 1, result.stderr
        (tmp_path / f"out.{fmt}").read_bytes().decode("utf-8")  # valid UTF-8
    assert json.loads((tmp_path / "out.json").read_text())["top"] == CUDA_ID
    script = tmp_path / os.fsdecode(b"job\xb5\xc4.sh")
    script.write_text(f'#!/bin/sh\necho "{CUDA}"\nexit 3\n')
    script.chmod(0o755)
    result = run_cli(["run", "--report", "r.json", "--", str(script)])
    assert result.returncode == 3
    assert json.loads((tmp_path / "r.json").read_text())["top"] == CUDA_ID
    triage = run_cli(["triage", str(tmp_path), "-f", "json", "-o", "t.json", "-j", "1"])
    assert triage.returncode == 1, triage.stderr


def test_l6_output_is_replaced_whole_or_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.json"
    target.write_text("previous report\n")
    target.chmod(0o640)
    write_report(target, "new report \udcb5\n")
    assert target.read_text() == "new report \\udcb5\n"
    assert target.stat().st_mode & 0o777 == 0o640

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError):
        write_report(target, "x" * 100_000)
    assert target.read_text() == "new report \\udcb5\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left


# -- M14: GitHub autolinks ------------------------------------------------------------------------

AUTOLINK_BAIT = ["www.evil-site.example", "ops@evil.example", "http://evil.example/x", "WWW.EVIL.EXAMPLE"]


@pytest.mark.parametrize("bait", AUTOLINK_BAIT)
def test_m14_markdown_prose_never_autolinks(bait: str) -> None:
    text = safe.md_text(f"(TaskRunner pid=12, ip={bait}) failed")
    assert bait not in text
    assert text.replace(safe.ZERO_WIDTH_SPACE, "").replace("\\", "") == f"(TaskRunner pid=12, ip={bait}) failed"
    cmark = pytest.importorskip("cmarkgfm")
    assert "<a " not in cmark.github_flavored_markdown_to_html(text)


def test_m14_reports_from_hostile_names_have_no_links(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "www.evil-site.example").write_text(f"x\n{CUDA}\n")
    (tmp_path / "node.log").write_text(f"(TaskRunner pid=12, ip=www.evil-node.example) {CUDA}\n")
    (tmp_path / "ops@evil.example").write_text(f"{CUDA}\n")
    for name in ("www.evil-site.example", "node.log", "ops@evil.example"):
        md = run_cli(["diagnose", name, "-f", "markdown"]).stdout
        # Code blocks and code spans never link: what is left is prose.
        prose = re.sub(r"`[^`\n]*`", "", re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1`*[ \t]*$", "", md))
        prose = re.sub(r"<https://[^>\s]+>", "", prose)  # the knowledge base's own references
        assert not re.search(r"(?i)(?<![\w\u200b])www\.|[\w.+-]@[\w-]+\.|[a-z]://", prose), name
        cmark = pytest.importorskip("cmarkgfm")
        assert not re.findall(r'<a href="(?:http://www|mailto)', cmark.github_flavored_markdown_to_html(md))


# -- M15: absurd values are one-line errors ----------------------------------------------------------

ABSURD = [
    ["triage", ".", "--since", "1000000d"],
    ["triage", ".", "--since", "10000000000000000000000000000w"],
    ["triage", ".", "--since", "9" * 5000 + "d"],
    ["ray", "logs", ".", "--since", "1000000d"],
    ["ray", "logs", ".", "--until", "99999999w"],
    ["diagnose", "a.log", "--exit-status", "²"],
    ["diagnose", "a.log", "--exit-status=--9"],
    ["diagnose", "a.log", "--exit-status", "9" * 5000],
    ["diagnose", "a.log", "--exit-status", "-" + "9" * 5000],
    ["diagnose", "a.log", "--exit-status", "-99"],
]


@pytest.mark.parametrize("args", ABSURD, ids=lambda a: " ".join(a)[:40])
def test_m15_absurd_values_are_one_line_errors(tmp_path: Path, run_cli: RunCli, args: list[str]) -> None:
    (tmp_path / "a.log").write_text("step 1 ok\n")
    result = run_cli(args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert len(result.stderr) < 300
    if "--until" in args:
        assert "--until" in result.stderr


def test_m15_an_unexpected_exception_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    def broken(*_: object, **__: object) -> None:
        raise ValueError("year 0 is out of range")

    monkeypatch.setattr("rlfix.api.diagnose", broken)
    with pytest.raises(SystemExit) as stopped:
        cli.main(["diagnose", "-"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: ValueError: year 0 is out of range" in err


# -- M16: a --kb pattern that backtracks or cannot compile -------------------------------------------

REDOS_KB = """signatures:
  - id: redos-sig
    title: ReDoS
    kind: root
    severity: fatal
    action: investigate
    owner: unknown
    reason: a test signature
    summary: s
    patterns: [{regex: '%s', anchor: CUDA}]
    remediation: {steps: [x]}
    references: [https://example.org/a]
    examples: {match: ['CUDA ab'], no_match: []}
"""


def test_m16_a_backtracking_pattern_is_given_up_and_named(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "r.yaml").write_text(REDOS_KB % "CUDA.*(a|aa|aaa)+(b|c)$")
    (tmp_path / "slow.log").write_text(("CUDA " + "a" * 30 + " x\n") * 200 + CUDA + "\n")
    started = time.monotonic()
    result = run_cli(["diagnose", "--kb", "kb", "slow.log", "--engine", "python"])
    # 200 lines at half a second each would take minutes; three tries and it is given up.
    assert time.monotonic() - started < 30
    assert result.returncode == 1
    assert CUDA_ID in result.stdout
    assert "r.yaml:10:" in result.stderr and "given up" in result.stderr


@pytest.mark.parametrize(
    "pattern", ["BOOMX(?:(?:(?:a{1000}){1000}){1000})", "BOOMX(?:a{200}){200}", "BOOMX a{99999999999}"]
)
def test_m16_a_pattern_that_would_take_gigabytes_to_compile_is_refused(
    tmp_path: Path, run_cli: RunCli, pattern: str
) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "b.yaml").write_text(REDOS_KB.replace(", anchor: CUDA", "") % pattern)
    (tmp_path / "bomb.log").write_text("BOOMX aaaa\n")
    for args in (["diagnose", "--kb", "kb", "bomb.log"], ["kb", "lint", "--kb", "kb"]):
        result = run_cli(args)
        assert result.returncode == 2, result.stderr
        assert "b.yaml:10:" in result.stderr and "copies of one atom" in result.stderr


def test_m16_counting_repeats() -> None:
    assert expansion(r"(a{10}){10}") == 100
    assert expansion(r"[0-9a-f]{40}") == 40
    assert expansion(r"\{1000\}x{3}") == 3
    assert expansion(r"[{]{9}") == 9
    assert expansion(r"a{3}b{4}") == 4


# -- L1: errors never echo a token; L4: --kb text is inert ---------------------------------------------

TOKEN = "hf_ErrMsgQz7xK2mP9vL4nR8tW1yB5cD3"


@pytest.mark.parametrize(
    "args",
    [
        ["diagnose", "ok.log", "-o", f"nodir-{TOKEN}/o"],
        ["diagnose", "--kb", f"gone-{TOKEN}", "ok.log"],
        ["diagnose", "--baseline", f"gone-{TOKEN}.log", "ok.log"],
        ["triage", f"gone-{TOKEN}"],
        ["diagnose", "--follow", f"gone-{TOKEN}.log"],
        ["kb", "draft", f"gone-{TOKEN}.log"],
        ["run", "--report", f"nodir-{TOKEN}/r.json", "--", "false"],
        ["eval", f"gone-{TOKEN}"],
        ["ray", "job", "X", "--address", "http://admin:AddrS3cretPw@127.0.0.1:1", "--timeout", "1"],
    ],
    ids=lambda a: " ".join(a)[:30],
)
def test_l1_errors_never_echo_a_token(tmp_path: Path, run_cli: RunCli, args: list[str]) -> None:
    (tmp_path / "ok.log").write_text("step 1 ok\n")
    result = run_cli(args)
    assert result.returncode in (1, 2)
    assert TOKEN[6:] not in result.stdout + result.stderr
    assert "AddrS3cretPw" not in result.stdout + result.stderr


def test_l4_kb_text_is_inert_in_the_catalogue_and_info(tmp_path: Path, run_cli: RunCli) -> None:
    evil = "Evil \x1b]0;PWNED\x07\x9b31m\u202eX <img src=x onerror=alert(1)> [x](javascript:alert(1)) www.evil.example"
    doc = {
        "signatures": [
            {
                "id": "evil-sig",
                "title": evil,
                "kind": "root",
                "severity": "fatal",
                "action": "investigate",
                "owner": "unknown",
                "reason": evil,
                "summary": evil,
                "patterns": [{"text": "EVILX"}],
                "remediation": {"steps": [evil]},
                "references": ["https://example.org/a", "javascript:alert(1)"],
                "examples": {"match": ["EVILX ```"], "no_match": []},
            }
        ]
    }
    kb_dir = tmp_path / "kbdir\x1b]0;PWNED\x07"
    kb_dir.mkdir()
    (kb_dir / "e.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
    for args in (["kb", "catalogue", "--kb", str(kb_dir)], ["kb", "info", "--kb", str(kb_dir)]):
        out = run_cli(args).stdout
        assert not re.search("[\x1b\x07\x9b\u202e]", out)
    md = run_cli(["kb", "catalogue", "--kb", str(kb_dir)]).stdout
    section = md[md.index("## evil-sig") :].split("\n## ")[0]
    assert not re.search(r"(?<!\\)<img|(?<!\\)\]\(javascript|<javascript|www\.evil", section)
    cmark = pytest.importorskip("cmarkgfm")
    html = cmark.github_flavored_markdown_to_html(section)
    assert "<img" not in html and 'href="javascript' not in html
    assert not re.findall(r'<a href="(?!https://example\.org/a)', html)


# -- L5: a fleet's memory does not grow with its jobs ---------------------------------------------------


def test_l5_jobs_of_a_fleet_reuse_one_pair_of_scan_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[int] = []
    real = matcher.scan_buffers

    def counted() -> tuple[bytearray, bytearray]:
        pair = real()
        made.append(id(pair[0]))
        return pair

    monkeypatch.setattr(core, "scan_buffers", counted)
    for i in range(30):
        (tmp_path / f"job{i}.log").write_text(f"step {i} ok\n" + (CUDA + "\n" if i % 3 == 0 else ""))
    fleet = gather.triage(tmp_path, jobs=1)
    assert len(fleet.jobs) == 30 and fleet.failed == 10
    assert len(set(made)) <= 2, "each job allocated its own multi-MB scan blocks"


def test_m16_slow_patterns_share_one_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float | None] = []

    class Slow:
        def search(self, text: str, timeout: float | None = None) -> None:
            calls.append(timeout)
            raise TimeoutError

    pattern = model.Pattern("x(a+)+y", False, ("x",), False, Slow(), Location("kb.yaml", 7, 3))  # type: ignore[arg-type]
    monkeypatch.setattr(model, "SEARCH_TIMEOUTS", [0])
    monkeypatch.setattr(model, "_ABANDONED", {})
    assert pattern.search("xaaaa", 0.05) is None
    assert calls == [0.05, 0.05 * model.RETRY_FACTOR]  # within the budget: a second, longer try
    calls.clear()
    model.SEARCH_TIMEOUTS[0] = model.SHARED_BUDGET  # other patterns spent the budget
    model._ABANDONED.clear()
    assert pattern.search("xaaaa", 0.05) is None
    assert calls == [0.05]  # no second try
    for _ in range(model.GIVE_UP_AFTER):
        pattern.search("xaaaa", 0.05)
    calls.clear()
    assert pattern.search("xaaaa", 0.05) is None and calls == []  # given up
    assert model.patterns_given_up() == ["kb.yaml:7:3"]
