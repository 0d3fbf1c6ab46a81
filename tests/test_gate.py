"""The one output gate (rlfix/gate.py): whatever a report holds, no secret leaves in any format.

Evidence is masked where it is read, with its context (a secret cut by a 600-character window is
masked before the cut). Everything else a face may put in a report (a dead worker's last words,
Ray's exit detail, a heading, a job name, an error) is planted here with the whole table of
secrets appended to every string of the report, as a face that forgot to mask would leave it:
the gate alone must mask it in every format and language.
"""

from __future__ import annotations

import dataclasses
import json
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from rlfix.api import diagnose
from rlfix.fleet.gather import triage
from rlfix.fleet.model import FLEET_RENDERERS
from rlfix.fleet.sections import JOB_RENDERERS, JobReports, JobSection
from rlfix.gate import GATED, Renderers, masked
from rlfix.redact import RULES
from rlfix.report import RENDERERS
from tests.conftest import RunCli
from tests.test_security import CUDA, SECRET_OF

REGISTRIES = {"report": RENDERERS, "fleet": FLEET_RENDERERS, "jobs": JOB_RENDERERS}


def _planted_log() -> str:
    """Every rule's secret, in every place a log can carry it: error lines, a command line, a
    settings dump, an exception message, a traceback frame, a Ray status line."""
    lines = ["$ python train.py " + " ".join(f"--note{i} {rule.positive}" for i, rule in enumerate(RULES))]
    lines += [f"'{rule.name}': '{rule.positive}'," for rule in RULES]
    lines += [f"[rank{i}]: {CUDA} ({rule.positive})" for i, rule in enumerate(RULES)]
    lines += [
        "Traceback (most recent call last):",
        f'  File "/home/user/{RULES[0].positive}/train.py", line 3, in <module>',
        f"RuntimeError: upload failed: {' '.join(r.positive for r in RULES)}",
        f"Job raysubmit_AbC123 FAILED: {RULES[1].positive}",
    ]
    return "\n".join(lines) + "\n"


def _leaks(text: str) -> list[str]:
    return [name for name, secret in SECRET_OF.items() if secret in text]


def test_every_registered_format_is_behind_the_gate() -> None:
    for name, registry in REGISTRIES.items():
        assert isinstance(registry, Renderers), name
        for fmt, renderer in registry.items():
            assert getattr(renderer, GATED, False), f"{name} format {fmt!r} is not behind the gate"
    # A format registered later, by anyone, goes behind it too.
    registry = Renderers()
    registry["new"] = lambda subject, **_: str(subject)
    assert getattr(registry["new"], GATED, False)


SECRETS = " ".join(rule.positive for rule in RULES)


def _plant(value: Any) -> Any:
    """`value` with the table of secrets appended to every string in it (enums and ids aside)."""
    if isinstance(value, str) and not isinstance(value, Enum):
        return f"{value} {SECRETS}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if getattr(type(value), "__rlfix_unmasked__", False):
            return value
        return dataclasses.replace(value, **{f.name: _plant(getattr(value, f.name)) for f in dataclasses.fields(value)})
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_plant(v) for v in value)
    if isinstance(value, list):
        return [_plant(v) for v in value]
    if isinstance(value, dict):
        return {_plant(k): _plant(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_string_of_a_report_is_masked_on_the_way_out(fmt: str, lang: str) -> None:
    report = diagnose(_planted_log())
    planted = _plant(report)
    assert _leaks(json.dumps(dataclasses.asdict(planted), default=str)), "the secrets must be planted"
    out = planted.render(fmt) if fmt == "json" else planted.render(fmt, lang=lang)
    assert not _leaks(out), (fmt, lang)


def test_redact_false_is_the_users_choice() -> None:
    raw = diagnose(_planted_log(), redact=False)
    assert raw.redacted is False and _leaks(raw.render("text"))
    assert diagnose(_planted_log()).redacted is True


@pytest.mark.parametrize("fmt", sorted(JOB_RENDERERS))
def test_job_sections_and_their_headings_are_masked(fmt: str) -> None:
    section = JobSection("raysubmit_AbC123", "job raysubmit_AbC123: FAILED", diagnose(_planted_log()), {"message": ""})
    reports = _plant(JobReports((section,), None, title="rlfix: Ray session", errors=("x",)))
    assert not _leaks(reports.render(fmt))


@pytest.mark.parametrize("fmt", sorted(FLEET_RENDERERS))
def test_fleet_job_and_folder_names_are_masked(tmp_path: Path, fmt: str) -> None:
    # Audit M1: job names are file and folder names, and those carry tokens too.
    folder = tmp_path / f"job-ghp_{SECRET_OF['github']}"
    folder.mkdir()
    (folder / "rank0.log").write_text(f"[rank0]: {CUDA}\n")
    (tmp_path / f"run-hf_{SECRET_OF['huggingface']}.log").write_text(f"[rank0]: {CUDA}\n")
    fleet = triage([tmp_path], jobs=1)
    assert fleet.failed == 2
    assert not _leaks(fleet.render(fmt))


def test_the_gate_is_idempotent_and_keeps_what_is_no_secret() -> None:
    keep = [
        "raysubmit_AbCdEfGhIjKlMnOp",
        "worker-4f1b6d3a2c9e8b7d6f5a4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d-02000000-31337.err",
        "python-core-worker-4f1b6d3a2c9e8b7d6f5a4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d_31337.log",
        "job 02000000 finished",
        "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "commit 0123456789abcdef0123456789abcdef01234567",
        "Process killed with sig=9",
        "--max_new_tokens 1024 --token_budget 8",
    ]
    data = {"lines": tuple(keep), "by": {k: [k] for k in keep}}
    assert masked(data) is data  # nothing to mask: the very same object back
    secret = {"evidence": [r.positive for r in RULES], "key " + RULES[0].positive: RULES[1].positive}
    once = masked(secret)
    assert masked(once) == once and not _leaks(json.dumps(once))


def test_error_messages_go_through_the_gate(run_cli: RunCli, tmp_path: Path) -> None:
    missing = tmp_path / f"ghp_{SECRET_OF['github']}" / "job.log"
    proc = run_cli(["diagnose", str(missing)])
    assert proc.returncode == 2 and "rlfix: error:" in proc.stderr
    assert SECRET_OF["github"] not in proc.stderr, proc.stderr


# --- second audit, H2: a dead Ray worker's last words, Ray's exit detail, the job's status message ---

H2_WORKER = "7933049bcf58bc556e912f2df74d4a5ea56f64c1d304ab0f73ae7a2c"
H2_SECRETS = ("wJalrXUtnFEMIK7MDENGbPxRfiCYzzzzKEYabcd", "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "ExitDetailPw9")


def _h2_session(root: Path) -> Path:
    logs = root / "session_1" / "logs"
    logs.mkdir(parents=True)
    (logs / "raylet.out").write_text("")
    (logs / "gcs_server.out").write_text(
        "[2026-11-23 18:43:42,514 I 1 1] (gcs_server) gcs_job_manager.cc:115: Registering job. job_id=04000000 driver_pid=31455\n"
        f"[2026-11-23 18:43:48,768 W 1 1] (gcs_server) gcs_worker_manager.cc:70: Reporting worker exit, worker id = {H2_WORKER}, "
        "node id = 8b7c, address = 192.0.2.2, exit_type = SYSTEM_ERROR, exit_detail = Worker unexpectedly exits with a "
        "connection error code 2. End of file. pushing to https://deploy:ExitDetailPw9@registry.example/x\n"
        "[2026-11-23 18:43:49,417 I 1 1] (gcs_server) gcs_job_manager.cc:156: Marking job as finished. job_id=04000000\n"
    )
    (logs / f"worker-{H2_WORKER}-04000000-31513.out").write_text(
        ":job_id:04000000\n:actor_name:Learner\nenv: AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYzzzzKEYabcd\n"
        "login ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n"
    )
    return logs


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html"])
def test_h2_dead_worker_last_words_and_exit_detail_are_masked(tmp_path: Path, run_cli: RunCli, fmt: str) -> None:
    logs = _h2_session(tmp_path)
    proc = run_cli(["ray", "logs", str(logs), "-f", fmt])
    assert proc.returncode in (0, 1), proc.stderr
    assert "Learner" in proc.stdout or fmt == "html"  # the dead worker is still reported
    assert not [s for s in H2_SECRETS if s in proc.stdout], fmt


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html", "sarif"])
def test_the_knowledge_bases_own_remedies_pass_the_gate_unchanged(fmt: str) -> None:
    # `tokenizer.pad_token=tokenizer.eos_token` looks like a token assignment to the rules; it is
    # the fix the user needs, written by the project, and must reach every format as written.
    report = diagnose(Path("fixtures/logs/tokenizer-missing-pad-token--padding-true.log"))
    shown = report.render(fmt)
    assert "tokenizer.eos_token" in shown.replace("\\_", "_").replace("&#x27;", "'"), fmt
    assert "tokenizer.eos_token" in json.dumps(report.to_dict())
