"""The whole table of secrets, planted at once wherever a face can carry one, through the installed
command: one run per face x format x language, and no secret in anything that leaves.

Places planted: log lines, a command line, a settings dump, an exception message, a traceback
path, file and folder names, a fleet's job names, a Ray session's worker files (a dead worker's
last words), Ray's exit detail and the Jobs event message, option values that end up in errors,
and `--report` / `-o` files. `rlfix run` passes the command's own output through byte for byte
(docs/security.md): only what rlfix itself writes is checked there.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from rlfix.redact import RULES
from tests.conftest import RunCli
from tests.test_gate import H2_SECRETS, _h2_session, _planted_log
from tests.test_security import CUDA, SECRET_OF

FORMATS = ("text", "json", "markdown", "html")
LANGS = ("en", "zh")
#: A token that only a file or folder name carries.
NAME_TOKEN = "hf_NameLeakQz7xK2mP9vL4nR8tW1yB5cD3"
JOB_MESSAGE_TOKEN = "hf_JobMsgQz7xK2mP9vL4nR8tW1yB5cD3"


def _leaks(text: str) -> list[str]:
    found = [name for name, secret in SECRET_OF.items() if secret in text]
    found += [s for s in (*H2_SECRETS, NAME_TOKEN[3:], JOB_MESSAGE_TOKEN[3:]) if s in text]
    return found


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("planted")
    job = root / "fleet" / f"job-{NAME_TOKEN}"
    job.mkdir(parents=True)
    (job / f"rank0-{NAME_TOKEN}.log").write_text(_planted_log())
    (root / "fleet" / "job-plain.log").write_text(f"step 1 ok\n{CUDA} {RULES[2].positive}\n")
    logs = _h2_session(root)
    (logs / "events").mkdir()
    (logs / "events" / "event_JOBS.log").write_text(
        '{"source_type": "JOBS", "message": "Started a ray job raysubmit_a.", "timestamp": "1763923385"}\n'
        '{"source_type": "JOBS", "message": "Completed a ray job raysubmit_a with a status FAILED. Job entrypoint '
        f'command failed with exit code 1 HF_TOKEN={JOB_MESSAGE_TOKEN}", "timestamp": "1763923404"}}\n'
    )
    (logs / "job-driver-raysubmit_a.log").write_text(f"training step 3\n{CUDA} {RULES[3].positive}\n")
    (root / "script.py").write_text(f"import sys\nsys.stderr.write({_planted_log()!r})\nsys.exit(1)\n")
    return root


def _faces(root: Path, fmt: str) -> dict[str, list[str]]:
    log = str(next((root / "fleet").glob("job-hf_*/rank0-*.log")))
    return {
        "diagnose": ["diagnose", log, "-f", fmt, "--all"],
        "diagnose-dir": ["diagnose", str(root / "fleet"), "-f", fmt, "-o", f"out-{fmt}"],
        "triage": ["triage", str(root / "fleet"), "-f", fmt, "-j", "1"],
        "ray-logs": ["ray", "logs", str(root / "session_1" / "logs"), "-f", fmt],
    }


@pytest.mark.parametrize(("fmt", "lang"), list(itertools.product(FORMATS, LANGS)))
def test_no_secret_leaves_any_face(planted: Path, run_cli: RunCli, tmp_path: Path, fmt: str, lang: str) -> None:
    for face, args in _faces(planted, fmt).items():
        proc = run_cli([*args, "--lang", lang] if face != "diagnose-dir" else args, cwd=tmp_path)
        assert proc.returncode in (1, 2), (face, proc.stderr[-300:])
        written = (tmp_path / f"out-{fmt}").read_text() if face == "diagnose-dir" else ""
        assert not _leaks(proc.stdout + proc.stderr + written), (face, fmt, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_no_secret_leaves_run_follow_draft_or_errors(planted: Path, run_cli: RunCli, tmp_path: Path, lang: str) -> None:
    env = {"RLFIX_LANG": lang}
    run = run_cli(["run", "--report", "r.json", "--", "python", str(planted / "script.py")], env=env)
    assert run.returncode == 1
    # The command's own stderr passes through unchanged; the report after it must be masked.
    report_part = run.stderr[run.stderr.rindex("rlfix") - 200 :] if "rlfix" in run.stderr else ""
    assert json.loads((tmp_path / "r.json").read_text())["failed"]
    assert not _leaks((tmp_path / "r.json").read_text())
    assert not _leaks(report_part.split("\n", 1)[-1])
    log = next((planted / "fleet").glob("job-hf_*/rank0-*.log"))
    follow = run_cli(["diagnose", "--follow", str(log), "--idle-exit", "0.5"], env=env)
    assert follow.returncode == 1
    assert not _leaks(follow.stdout + follow.stderr)
    draft = run_cli(["kb", "draft", str(log)], env=env)
    assert not _leaks(draft.stdout + draft.stderr)
    for args in (
        ["diagnose", str(planted / f"gone-{NAME_TOKEN}.log")],
        ["triage", str(planted / f"gone-{NAME_TOKEN}")],
        ["diagnose", str(log), "-o", str(planted / f"nodir-{NAME_TOKEN}" / "o")],
        ["ray", "job", "X", "--address", f"http://u:{NAME_TOKEN}@127.0.0.1:1", "--timeout", "1"],
    ):
        proc = run_cli(args, env=env)
        assert proc.returncode == 2, (args, proc.stderr)
        assert not _leaks(proc.stdout + proc.stderr), args


def test_the_planted_secrets_do_reach_the_output_unmasked(planted: Path, run_cli: RunCli, tmp_path: Path) -> None:
    # Without the gate (what --no-redact asks for), the same runs show the secrets: the plant works.
    for face, args in _faces(planted, "json").items():
        if face == "ray-logs":
            continue  # ray logs has no --no-redact: its sections are always masked
        proc = run_cli([*args, "--no-redact"], cwd=tmp_path)
        written = (tmp_path / "out-json").read_text() if face == "diagnose-dir" else ""
        # A fleet row quotes one line per job; a report quotes many.
        assert len(_leaks(proc.stdout + written)) >= (2 if face == "triage" else 10), face
