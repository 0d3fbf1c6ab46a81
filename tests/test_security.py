"""Issue 12: reports never leak a secret, never inject, never crash (one test per item, then a leak scan)."""

from __future__ import annotations

import gzip
import os
import re
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlfix.core as triage_module
from rlfix import safe
from rlfix.api import diagnose
from rlfix.core import Triage
from rlfix.integrations.follow import LineFeeder, follow
from rlfix.integrations.run import format_alert, run_command
from rlfix.kb.load import load_knowledge, with_signatures
from rlfix.match.engines import available_engines
from rlfix.redact import MASK, RULES, redact_secrets
from rlfix.tools.draft import draft_signature
from rlfix.tools.lint import lint

ENGINES = [
    pytest.param(e, marks=pytest.mark.skipif(e not in available_engines(), reason=f"{e} not installed"))
    for e in ("python", "hyperscan")
]
FORMATS = ("text", "json", "markdown", "html")
CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"
RLFIX = [sys.executable, "-m", "rlfix"]

# The part of each rule's positive example that must never be shown.
SECRET_OF = {
    "url-credentials": "p@ss:w/rd",
    "authorization": "YWxpY2U6c2VjcmV0",
    "bearer": "eyJhbGciOiJIUzI1NiJ9",
    "github": "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "gitlab": "AbCdEfGhIjKlMnOpQrSt",
    "slack": "1234567890-abcdefghij",
    "google": "SyA1234567890abcdefghijklmnopqrstuv",
    "huggingface": "AbCdEfGhIjKlMnOpQrStUvWxYz0123",
    "sk-key": "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "aws-key-pair": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "aws-access-key": "IOSFODNN7EXAMPLE",
    "wandb-login": "0123456789abcdef0123456789abcdef01234567",
    "hex-after-key-name": "0123456789abcdef0123456789abcdef01234567",
    "secret-flag": "0123456789abcdef",
    "secret-flag-argv": "fedcba9876543210fedc",
    "assignment": "0123456789abcdef0123456789abcdef01234567",
    "short-password": "abc12",
    "netrc": "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
    "pem-private-key": "MIIEpAIBAAKCAQEAx9Zq",
    "jwt": "eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N",
    "slack-webhook": "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "google-oauth": "a0AfH6SMBx3kLmNoPqRsTuVwXyZ0123456789",
    "pypi": "AgEIcHlwaS5vcmcCJGE0ZjY0YjE2LTk0ZjUtNGQxNi1hYjY3LTEyMzQ1Njc4OTBhYgACKlsz",
    "aliyun-access-key": "5tQz7xK2mP9vL4nR8tW1",
    "azure-sas": "QwErTyUiOp1234567890",
    "cli-password": "s3cr3tPw",
}


def _cli(*args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RLFIX, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def _one_line_error(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("rlfix: error:")]
    assert len(errors) == 1, result.stderr


# --- 1. context is redacted like evidence ----------------------------------------------------

REPRO_1 = (
    "$ python train.py --hf_token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 "
    "--wandb_key 0123456789abcdef0123456789abcdef01234567\n"
    "Out of memory: Killed process 1234 (python)\n"
)


@pytest.mark.parametrize("engine", ENGINES)
def test_1_context_is_redacted_in_every_format(engine: str) -> None:
    variant = (
        "'wandb_api_key': 'abcdefghij0123456789',\n"
        "python -m verl.trainer.main_ppo trainer.hf_token=hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa98 data.path=/d\n"
    )
    report = diagnose(REPRO_1 + variant, engine=engine)
    assert report.ids[0] == "host-oom-sigkill"
    assert report.context.setting("--hf_token") == MASK
    for fmt in FORMATS:
        out = report.render(fmt)
        for secret in ("AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "0123456789abcdef01234567", "abcdefghij0123456789"):
            assert secret not in out, (fmt, secret)
        assert "ZyXwVuTsRqPoNmLkJiHgFeDcBa98" not in out, fmt
    assert "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789" in diagnose(REPRO_1, redact=False).render("json")


# --- 2. mask first, cut second ----------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_2_secret_is_masked_before_the_line_is_cut(engine: str) -> None:
    repro = "x" * 1000 + " password=Sup3rS3cretPassw0rd " + "y" * 145 + CUDA + "z" * 800
    assert "Sup3r" not in diagnose(repro + "\n", engine=engine).top.first.text
    # Variant: move the secret across the edge of the 600-character window, one step at a time.
    secret = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"
    for pad in range(780, 860, 7):
        line = "x" * pad + " " + secret + " " + "y" * 145 + CUDA + "z" * 800
        text = diagnose(line + "\n", engine=engine).top.first.text
        assert not any(secret[i : i + 6] in text for i in range(3, len(secret) - 5)), pad


# --- 3. linear-time redaction, and none on the hot path ------------------------------------------


def test_3_redaction_is_linear() -> None:
    for line in ("scheme://user:" + "a." * (512 * 1024), "A_" * (512 * 1024) + "=x", "x " + "--token " * 100_000):
        started = time.perf_counter()
        redact_secrets(line)
        assert time.perf_counter() - started < 1.0, line[:20]


def test_3_no_redaction_for_repeats_under_run(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = triage_module.redact_secrets
    monkeypatch.setattr(triage_module, "redact_secrets", lambda t: calls.append(t) or real(t))
    triage = Triage(engine="python", timeline=False)
    LineFeeder(triage, "<job output>").push((f"[rank0]: {CUDA}\n" * 5000).encode())
    assert triage.report().top.count == 5000
    assert len(calls) < 20


# --- 4. numbers are data ---------------------------------------------------------------------

HUGE = "9" * 5000
HUGE_LINES = [
    f"world_size={HUGE}",
    f"Out of memory: Killed process {HUGE} (python) total-vm:1kB, anon-rss:{HUGE}kB, file-rss:0kB",
    f"(raylet, pid={HUGE}, ip=10.0.0.1, rank={HUGE}) {CUDA} [repeated {HUGE}x across cluster]",
    f"[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={HUGE}, OpType=ALLREDUCE, "
    f"NumelIn=1, NumelOut=1, Timeout(ms)={HUGE}) ran for {HUGE} milliseconds before timing out.",
    f"step {HUGE} loss=0.1",
]


@pytest.mark.parametrize("engine", ENGINES)
def test_4_huge_numbers_never_raise(engine: str) -> None:
    report = diagnose("\n".join(HUGE_LINES) + "\n", engine=engine)
    assert report.ids
    for fmt in FORMATS:
        assert report.render(fmt)


def test_4_run_keeps_the_job_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = "import sys\n" + "".join(f"print({line!r})\n" for line in HUGE_LINES) + "sys.exit(137)\n"
    result = _cli("run", "--", sys.executable, "-c", script)
    assert result.returncode == 137 and "Traceback" not in result.stderr
    # Variant: a bug in the diagnosis on some line stops the diagnosis, never the job or its status.
    monkeypatch.setattr(Triage, "feed", lambda *a, **k: 1 / 0)
    status = run_command([sys.executable, "-c", "print('hello'); raise SystemExit(3)"])
    assert status == 3


# --- 5. one table of rules, each with a positive and a negative example ---------------------------


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_5_rule_table(rule: Any) -> None:
    secret = SECRET_OF[rule.name]
    assert secret in rule.positive
    masked = redact_secrets(rule.positive)
    assert secret not in masked and MASK in masked
    assert redact_secrets(rule.negative) == rule.negative


@pytest.mark.parametrize("engine", ENGINES)
def test_5_every_rule_masks_evidence(engine: str) -> None:
    log = "".join(f"[rank{i}]: {CUDA} while {rule.positive}\n" for i, rule in enumerate(RULES))
    out = diagnose(log, engine=engine).render("json")
    assert not [name for name, secret in SECRET_OF.items() if secret in out]


# --- 6. Markdown is inert -------------------------------------------------------------------


def _outside_code(md: str) -> str:
    """The Markdown text that is not inside a code block or a code span (CommonMark rules)."""
    out, fence = [], None
    for line in md.splitlines():
        if fence is not None:
            if line.strip() == fence:
                fence = None
            continue
        opening = re.match(r"(`{3,})", line)
        if opening:
            fence = opening.group(1)
            continue
        out.append(re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", line))
    assert fence is None, "a code block was left open"
    return "\n".join(out)


@pytest.mark.parametrize("engine", ENGINES)
def test_6_markdown_is_inert(tmp_path: Path, engine: str) -> None:
    hostile = "```` [click](http://evil.example) ![x](http://evil.example/i.png) <img src=x> @octocat `"
    log = tmp_path / "a`` [n](http:e.x) @team.log"
    log.write_text(f"{CUDA} {hostile}\nTraceback (most recent call last):\nValueError: {hostile}\n")
    md = diagnose(log, engine=engine).render("markdown", show_all=True)
    rest = _outside_code(md)
    assert "](" not in rest.replace("\\](", "")
    assert not re.search(r"(?<!\\)<(?!https?://)", rest)
    assert not re.search(r"(?<![\\\w])@\w", rest)
    assert safe.md_code("a ``` b") == "````a ``` b````"


# --- 7. terminal output is inert ------------------------------------------------------------------

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("engine", ENGINES)
def test_7_terminal_and_svg_are_inert(tmp_path: Path, engine: str) -> None:
    name = "evil\x1b]0;pwned\x07\u202e\x9b2J\x9d8;;http:x\x07.log"
    log = tmp_path / name
    log.write_text(f"[rank0]: {CUDA} \x1b[2J\x1b]8;;http://evil\x07link\u202egnp.exe\r\x08\n")
    report = diagnose(log, engine=engine)
    plain = report.render("text", color=False)
    assert not _CONTROL.search(plain) and "\\x1b" in plain
    colored = report.render("text", color=True)
    assert not _CONTROL.search(re.sub(r"\x1b\[[0-9;]*m", "", colored))
    assert "\x1b[2J" not in colored
    html_out = report.render("html")
    ET.fromstring(re.search(r"<svg.*?</svg>", html_out, re.S).group())  # type: ignore[union-attr]
    alert = format_alert(report.top.first, report.top.id)
    assert not _CONTROL.search(alert) and "\n" not in alert


# --- 8. extract: regexes are timed and linted -----------------------------------------------------


def test_8_extract_runs_under_the_pattern_timeout() -> None:
    kb = load_knowledge()
    sig = kb.get("cuda-illegal-memory-access")
    assert sig is not None

    class Spy:
        pattern = "(a+)+$"
        timeouts: ClassVar[list[float | None]] = []

        def search(self, text: str, timeout: float | None = None) -> None:
            self.timeouts.append(timeout)
            raise TimeoutError

    from dataclasses import replace

    spied = with_signatures(kb, [replace(sig, extract=(("x", Spy()),))])  # type: ignore[arg-type]
    triage = Triage(spied, engine="python")
    triage.feed(CUDA)
    assert triage.report().top.id == sig.id  # a timed-out extractor loses its value, not the finding
    assert Spy.timeouts == [triage.matcher.timeout]


def test_8_lint_flags_a_backtracking_extractor(tmp_path: Path) -> None:
    kb_file = tmp_path / "s.yaml"
    kb_file.write_text(
        "signatures:\n- id: slow-extract\n  title: t\n  kind: root\n  severity: fatal\n  summary: s\n"
        "  action: investigate\n  owner: unknown\n  reason: A test signature.\n"
        "  patterns: [{text: 'BoomError: '}]\n  extract:\n    tail: 'BoomError: (?P<tail>(a|aa)+$)'\n"
        "  remediation: {steps: [x]}\n  references: [https://example.org/a]\n  examples: {match: ['BoomError: x'], no_match: []}\n"
    )
    issues = lint(load_knowledge([kb_file]), checks=["backtracking"])
    assert any("slow-extract: extractor tail" in str(i) for i in issues)


# --- 9. nothing read is lost ----------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_9_truncated_gzip_keeps_what_was_read(tmp_path: Path, engine: str) -> None:
    body = "".join(f"step {i} ok {os.urandom(8).hex()}\n" for i in range(20000))
    packed = gzip.compress((CUDA + "\n" + body).encode())
    path = tmp_path / "cut.log.gz"
    path.write_bytes(packed[: len(packed) * 3 // 4])
    report = diagnose(path, engine=engine, strict=False)
    assert report.ids[0] == "cuda-illegal-memory-access"
    assert report.sources[0].lines > 10000
    assert report.exit_code == 2 and "truncated" in report.errors[0]


@pytest.mark.parametrize("engine", ENGINES)
def test_9_holes_utf16_fifos(tmp_path: Path, engine: str) -> None:
    (tmp_path / "hole.log").write_bytes(b"\0" * 3_000_000 + CUDA.encode() + b"\n")
    (tmp_path / "bom.log").write_bytes(f"start\n{CUDA}\n".encode("utf-16"))
    (tmp_path / "le.log").write_bytes(f"start\n{CUDA}\n".encode("utf-16-le"))
    for name in ("hole.log", "bom.log", "le.log"):
        assert diagnose(tmp_path / name, engine=engine).ids[0] == "cuda-illegal-memory-access", name
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(CUDA + "\n"))
    writer.start()
    assert diagnose(fifo, engine=engine).ids[0] == "cuda-illegal-memory-access"
    writer.join()


def test_9_unreadable_input_is_an_error_and_others_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = tmp_path / "good.log"
    good.write_text(CUDA + "\n")
    result = subprocess.run(
        ["bash", "-c", f'{sys.executable} -m rlfix diagnose --no-color <(echo "{CUDA}") {tmp_path}/gone.log {good}'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    _one_line_error(result)
    assert "gone.log" in result.stderr and "2 inputs" in result.stdout and "cuda-illegal" in result.stdout
    # Variant: a path the walk may not search (simulated: tests may run as root) is an error, not "no failure".
    real_is_dir = Path.is_dir
    monkeypatch.setattr(
        Path,
        "is_dir",
        lambda p: (
            (_ for _ in ()).throw(PermissionError(13, "Permission denied")) if p.name == "locked" else real_is_dir(p)
        ),
    )
    report = diagnose([tmp_path / "locked", good], strict=False)
    assert report.exit_code == 2 and "Permission denied" in report.errors[0] and report.ids


# --- 10. every bad input is one line and exit 2 ----------------------------------------------------


def test_10_bad_inputs_are_one_line(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    log.write_text(CUDA + "\n")
    _one_line_error(_cli("diagnose", str(log), "-o", str(tmp_path / "missing" / "out.txt")))
    _one_line_error(_cli("diagnose", str(log), "-o", "/proc/rlfix-report.txt"))
    bad_kbs = {
        "unhashable.yaml": "? [a, b]\n: 1\nsignatures: []\n",
        "bomb.yaml": "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\nsignatures: []\n",
        "taxonomy.yaml": "ids:\n  - id: [1]\n    kind: nonsense\n",
    }
    for name, text in bad_kbs.items():
        kb_dir = tmp_path / name.replace(".", "-")
        kb_dir.mkdir()
        (kb_dir / name).write_text(text)
        _one_line_error(_cli("diagnose", "--kb", str(kb_dir), str(log)))
    labels = tmp_path / "eval"
    labels.mkdir()
    for text in ("cases:\n  - file: [1]\n", "cases: 3\n", "cases: [&a x, *a]\n"):
        (labels / "labels.yaml").write_text(text)
        _one_line_error(_cli("eval", str(labels)))


def test_10_run_report_to_a_bad_path_keeps_the_status(tmp_path: Path) -> None:
    result = _cli("run", "--report", str(tmp_path / "no" / "r.json"), "--", "sh", "-c", f"echo '{CUDA}'; exit 137")
    assert result.returncode == 137 and "Traceback" not in result.stderr
    assert "rlfix: error:" in result.stderr and "no/r.json" in result.stderr


# --- 11. directory walks stay inside the tree --------------------------------------------------------


def test_11_walk_stays_inside_unless_asked(tmp_path: Path) -> None:
    outside = tmp_path / "outside.log"
    outside.write_text(CUDA + "\n")
    tree = tmp_path / "logs"
    tree.mkdir()
    (tree / "a.log").write_text("all fine\n")
    (tree / "link.log").symlink_to(outside)
    (tree / "loop").symlink_to(tree)  # a cycle: must not hang when links are followed
    report = diagnose(tree)
    assert not report.ids and any("link.log" in s.name and s.skipped for s in report.sources)
    followed = Triage()
    followed.feed_paths([tree], follow_symlinks=True)
    assert followed.report().ids[0] == "cuda-illegal-memory-access"
    assert "A string naming an existing file is read" in Path("docs/python-api.md").read_text()


# --- 12. kb draft drafts from unmasked text ----------------------------------------------------------


def test_12_draft_from_unmasked_text(tmp_path: Path) -> None:
    line = "FooError: login with hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123 to https://bob:pw1234@x.io/ failed"
    log = tmp_path / "we\nird\u2028- id: injected.log"
    log.write_text(f'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n{line}\n')
    result = _cli("kb", "draft", str(log))
    assert result.returncode == 0, result.stderr
    draft = yaml.safe_load(result.stdout)
    entry = draft["signatures"][0]
    assert entry["id"] == "my-new-failure" and len(draft["signatures"]) == 1
    regex = entry["patterns"][0]["regex"]
    assert "\\*\\*\\*" not in regex and "AbCdEf" not in regex and "pw1234" not in regex
    assert re.search(regex, line) and re.search(regex, entry["examples"]["match"][0])
    assert "AbCdEf" not in result.stdout and "pw1234" not in result.stdout


# --- 13. --follow on a FIFO honours SIGINT and SIGTERM -------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_13_follow_fifo_stops_on_signals(tmp_path: Path, signum: int) -> None:
    fifo = tmp_path / "live"
    os.mkfifo(fifo)
    proc = subprocess.Popen([*RLFIX, "diagnose", "--follow", str(fifo)], stdout=subprocess.PIPE, text=True)
    time.sleep(2)  # let it open the FIFO (no writer yet: a blocking open would hang here)
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "no failure recognised" in out


# --- 14. buffers allocated once per run ---------------------------------------------------------------


def test_14_buffers_once_per_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = []
    real = triage_module.scan_buffers
    monkeypatch.setattr(triage_module, "scan_buffers", lambda: made.append(1) or real())
    for i in range(30):
        (tmp_path / f"rank{i}.log").write_text(f"step {i}\n" + (CUDA + "\n" if i == 17 else ""))
    triage = Triage()
    triage.feed_paths([tmp_path])
    triage.feed_text("more\n")
    assert triage.report().ids[0] == "cuda-illegal-memory-access"
    assert len(made) == 1


# --- the leak scan: every rule's secret, everywhere a log can put it, every format and mode ------------

# A file name holds a secret only as a self-identifying token (`hf_...`, `ghp_...`): a bare
# base64 or hex string in a name has no context to recognise it by (docs/security.md says so).
_NAMEABLE = [
    r for r in RULES if "/" not in r.positive and redact_secrets(r.positive.split()[-1]) != r.positive.split()[-1]
]


def _plant(root: Path) -> Path:
    logs = root / "logs"
    logs.mkdir()
    flags = " ".join(f"--note{i} x" for i in range(2))
    for rank, rule in enumerate(RULES):
        name = f"rank{rank}-{rule.positive.split()[-1]}.log" if rule in _NAMEABLE else f"rank{rank}.log"
        (logs / name).write_text(
            f"$ python train.py --hf_token {SECRET_OF['huggingface']}x --wandb_key {SECRET_OF['wandb-login']} {flags}\n"
            f"'{rule.name.replace('-', '_')}_password': '{SECRET_OF[rule.name]}',\n"
            f"'wandb_api_key': '{SECRET_OF['assignment']}',\n"
            f"[rank{rank}]: {rule.positive}\n"
            f"[rank{rank}]: {CUDA} while {rule.positive}\n"
            f"[rank{rank}]: Out of memory: Killed process 12{rank} (python) with {rule.positive}\n"
        )
    return logs


def _leaks(text: str) -> list[str]:
    return [name for name, secret in SECRET_OF.items() if secret in text]


@pytest.mark.parametrize("engine", ENGINES)
def test_leak_scan_every_format_and_mode(tmp_path: Path, engine: str) -> None:
    logs = _plant(tmp_path)
    report = diagnose(logs, engine=engine)
    assert report.ids and report.context.command
    for fmt in FORMATS:
        assert not _leaks(report.render(fmt, show_all=True, all_flags=True, verbose=True)), fmt
    for fmt in FORMATS:
        out = tmp_path / f"r.{fmt}"
        result = _cli("diagnose", "--engine", engine, "-a", "-v", "-f", fmt, "-o", str(out), str(logs))
        assert result.returncode == 1, result.stderr
        assert not _leaks(out.read_text() + result.stderr), fmt
    joined = logs / "all.txt"
    joined.write_text("".join(p.read_text() for p in sorted(logs.glob("*.log"))))
    alerts: list[str] = []
    followed = follow(
        joined, Triage(engine=engine), on_alert=lambda e, s: alerts.append(format_alert(e, s)), idle_exit=0
    )
    assert alerts and not _leaks("\n".join(alerts) + followed.to_json())
    script = f"import sys; sys.stdout.write(open({str(joined)!r}).read()); sys.exit(1)"
    ran = _cli("run", "--report", str(tmp_path / "run.json"), "--", sys.executable, "-c", script)
    assert ran.returncode == 1
    assert not _leaks(ran.stderr + (tmp_path / "run.json").read_text())
    draft = draft_signature(
        diagnose(f"Traceback (most recent call last):\nFooError: {RULES[7].positive}\n", redact=False)
    )
    assert not _leaks(draft)


def test_leak_scan_covers_every_rule() -> None:
    assert set(SECRET_OF) == {r.name for r in RULES}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_5_every_match_holds_one_of_its_rules_needs(data: Any) -> None:
    """`Rule.needs` lets a line without those literals skip the rule: every match must hold one."""
    rule = data.draw(st.sampled_from(RULES))
    text = data.draw(st.from_regex(rule.pattern, fullmatch=True))
    for found in rule.pattern.finditer(text):
        assert any(lit in found.group(0).lower() for lit in rule.needs), (rule.name, found.group(0))


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("python train.py --wandb_\u017fecret 0123456789abcdef --lr 1e-5", "0123456789abcdef"),  # long s
        ("python train.py --credent\u0131als=hunter2hunter2", "hunter2hunter2"),  # dotless i
        ("export WANDB_API_\u212aEY=0123456789abcdef0123", "0123456789abcdef0123"),  # Kelvin sign
        ("Authorization: Bearer \u017fk-abcdef0123456789abcdef", "abcdef0123456789abcdef"),
    ],
)
def test_5_case_folding_beyond_ascii_does_not_slip_past_the_literals(text: str, secret: str) -> None:
    """`(?i)` matches `\u017f` for `s` and `\u0131` for `i`, which `str.lower` keeps: such text runs every rule."""
    assert secret in text and secret not in redact_secrets(text)


# --- second audit, H3: secret flags in Python's argv-list form --------------------------------

AUDIT2_H3 = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/site-packages/accelerate/commands/launch.py", line 1090, in simple_launcher\n'
    "    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)\n"
    "subprocess.CalledProcessError: Command '['/usr/bin/python3', 'train_grpo.py', '--wandb_key', "
    "'9f8e7d6c5b4a39281706f5e4d3c2b1a098765432', '--hf_token', 'hf_Lm4Np7Qr2St5Uv8Wx1Yz3Ab6Cd9Ef0Gh', "
    "'--db_password', 'Hunter2Hunter2']' returned non-zero exit status 1.\n"
)
# A variant of our own: JSON's double quotes, a hyphenated name, a value with a space, and the
# bracketed `(--api-key X)` form the audit names.
AUDIT2_H3_VARIANT = (
    'launch args: ["torchrun", "train.py", "--api-key", "sk live 0042 Zq", "--lr", "1e-5"]\n'
    "retry with args=(--secret-key Zq9Zq9Zq9Zq9) failed\n"
    "RuntimeError: launcher failed\n"
)


@pytest.mark.parametrize("engine", ENGINES)
def test_h3_argv_list_secret_flags_are_masked_in_every_format(engine: str) -> None:
    for log, secrets in (
        (AUDIT2_H3, ("9f8e7d6c5b4a39281706f5e4d3c2b1a098765432", "Hunter2Hunter2", "Lm4Np7Qr2St5Uv8Wx1Yz3Ab6Cd9Ef0Gh")),
        (AUDIT2_H3_VARIANT, ("sk live 0042 Zq", "Zq9Zq9Zq9Zq9", "0042 Zq")),
    ):
        report = diagnose(log, engine=engine)
        assert report.diagnoses
        for fmt in FORMATS:
            out = report.render(fmt)
            for secret in secrets:
                assert secret not in out, (fmt, secret)
    # Flags whose names only contain a secret word's letters keep their values.
    kept = redact_secrets("['--max_new_tokens', '1024', '--token_budget', '8']")
    assert "'1024'" in kept and "'8'" in kept


# --- second audit, M2 / L2 / M3: secrets the rules missed, and secrets longer than a rule's bound ----

# (the line as the audit planted it or a variant of our own, the part that must never be shown)
AUDIT2_MISSED = [
    (
        '{"AccessKeyId": "ASIAQ7XK2MP9VL4NR8TW", "SecretAccessKey": "Zx9Cv8Bn7Mm6Ll5Kk4Jj3Hh2Gg1Ff0DdSsAaQqWw"}',
        "Zx9Cv8Bn7Mm6Ll5Kk4Jj3",
    ),
    ('"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n"', "MIIEvQIBADANBgkqhkiG9w0"),
    ("ValueError: bad key -----BEGIN RSA PRIVATE KEY-----MIIEpAIBAAKCAQEAqWeRtYuIoP", "MIIEpAIBAAKCAQEAqWeRt"),
    ("X-Api-Key: Qz7xK2mP9vL4nR8tW1yB5cD3", "Qz7xK2mP9vL4nR8tW1yB5"),
    ('{"api-key": "0a1b2c3d4e5f6a7b8c9d"}', "0a1b2c3d4e5f6a7b8c9d"),
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4UXdFclR5==;EndpointSuffix=x",
        "Zm9vYmFyYmF6cXV4",
    ),
    (
        "GET https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2026&sig=QwErTyUiOpAsDfGh1234%2B%3D",
        "QwErTyUiOpAsDfGh1234",
    ),
    ("machine api.wandb.ai login user password 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432", "9f8e7d6c5b4a3928"),
    ("redis://:R3disSecretPw@cache:6379/0", "R3disSecretPw"),
    ("HTTPS://alice:UpPerSecretPw@host/x", "UpPerSecretPw"),
    ("--openai_key sk1234567abc --db-pass hunter22x", "hunter22x"),
    ("--openai_key sk1234567abc", "sk1234567abc"),
    ("OPENAI_KEY=abcdefgh1234 python train.py", "abcdefgh1234"),
    ('--password "correct horse battery staple"', "horse battery staple"),
    ('DB_PASSWORD="correct horse battery staple"', "horse battery staple"),
    ("db password=abc12 host=pg", "abc12"),
    ("id_token eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwcyJ9.c2lnbmF0dXJlLXZhbHVl", "eyJpc3MiOiJodHRwcyJ9"),
    (
        "webhook https://hooks.slack.com/services/T0ABC1234/B0DEF5678/abcdefghijklmnopqrstuvwx",
        "abcdefghijklmnopqrstuvwx",
    ),
    ("SLACK_APP_TOKEN xapp-1-A0123456789-1234567890-abcdef0123456789", "abcdef0123456789"),
    ("refresh xoxe-1-My0xLTIwMjQtMDEtMDEtYWJjZGVm", "My0xLTIwMjQtMDEtMDEtYWJjZGVm"),
    ("deploy gldt-AbCdEfGhIjKlMnOpQrSt12 and runner glrt-ZyXwVuTsRqPoNmLkJiHg34", "ZyXwVuTsRqPoNmLkJiHg34"),
    ("gcloud ya29.a0AfH6SMBx3kLmNoPqRsTuVwXyZ0123456789abcd", "a0AfH6SMBx3kLmNoPqRsTuVwXyZ"),
    (
        "twine upload -p pypi-AgEIcHlwaS5vcmcCJDVhZjY0YjE2LTk0ZjUtNGQxNi1hYjY3LTEyMzQ1Njc4OTBhYgAC",
        "AgEIcHlwaS5vcmcCJDVh",
    ),
    ("ALIBABA_CLOUD_ACCESS_KEY_ID=LTAI5tQz7xK2mP9vL4nR8tW1", "5tQz7xK2mP9vL4nR8tW1"),
    ("curl -fsSL -u deploy:Sup3rS3cret https://repo.example/x", "Sup3rS3cret"),
    ("docker login -u bot -p D0ck3rPassw0rd registry.example", "D0ck3rPassw0rd"),
]


@pytest.mark.parametrize("engine", ENGINES)
def test_m2_l2_named_and_shaped_secrets_are_masked_in_every_format(engine: str) -> None:
    log = "".join(f"[rank{i}]: {CUDA} while {line}\n" for i, (line, _secret) in enumerate(AUDIT2_MISSED))
    report = diagnose(log, engine=engine)
    for fmt in FORMATS:
        out = report.render(fmt)
        assert not [secret for _line, secret in AUDIT2_MISSED if secret in out], fmt


@pytest.mark.parametrize(("line", "secret"), AUDIT2_MISSED)
def test_m2_l2_each_row_in_process(line: str, secret: str) -> None:
    masked = redact_secrets(line)
    assert secret not in masked and MASK in masked
    assert redact_secrets(masked) == masked


def test_m3_secrets_longer_than_a_rules_bound_are_masked_to_their_end() -> None:
    import random
    import string

    rng = random.Random(7)
    long = "".join(rng.choice(string.ascii_letters) for _ in range(5000))
    for line in (
        f"Authorization: Bearer eyJ{long}",
        f"--password {long[:900]}",
        f"WANDB_API_KEY={long[:700]}",
        f"token hf_{long[:1000]} then",
        f"id {long[:20]} ghp_{long[:3000]}",
    ):
        masked = redact_secrets(line)
        assert long[300:340] not in masked and long[-40:] not in masked, masked[:120]
    # No suffix of a secret is left behind by any rule's mask (every rule's positive, made long).
    for rule in RULES:
        secret = SECRET_OF[rule.name]
        masked = redact_secrets(rule.positive)
        assert not any(secret[i:] in masked for i in range(len(secret) - 3)), rule.name


def test_m5_kb_draft_masks_before_it_cuts() -> None:
    """Second audit M5: a token the 600-character cut or the 60-character title goes through."""
    import re as _re

    straddling = (
        'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
        f"FooError: {'x' * 567} hf_QwErTyUiOpAsDfGhJkLzXcVbNm12345678 end\n"
    )
    titled = "ERROR upload to hub failed, using token hf_Qz7xK2mP9vL4nR8tW1yB5cD3aaZZ now\nProcess exited with code 1\n"
    # A variant of our own: a GitHub token cut by the title's 60 characters.
    variant = "ERROR push failed for ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 token\nexit status 1\n"
    for log in (straddling, titled, variant):
        triage = Triage(redact=False)
        triage.feed_text(log)
        drafted = draft_signature(triage.report())
        leaks = [t for t in _re.findall(r"(?:hf|ghp)_[A-Za-z0-9]+", drafted) if len(t) > 4]
        assert not leaks, (leaks, drafted[:400])
        assert yaml.safe_load(drafted)  # still a YAML document the user can finish
