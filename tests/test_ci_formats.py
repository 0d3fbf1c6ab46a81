"""Outputs CI consumes: SARIF 2.1.0 (validated against the official schema) and GitHub workflow commands."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

import rlfix
from rlfix.integrations.github import step_summary, write_step_summary
from rlfix.render.github import escape_data, escape_property
from rlfix.report import RENDERERS, Report
from tests.conftest import ROOT, RunCli

jsonschema = pytest.importorskip("jsonschema")
DATA = ROOT / "tests" / "data"
SCHEMA_FILE = DATA / "sarif-schema-2.1.0.json"
SCHEMA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
LOGS = ROOT / "fixtures" / "logs"
SEED = LOGS / "cuda-illegal-memory-access--openrlhf-vllm072-buried.log"
#: Logs with roots, folded symptoms, notes, Xids, an uncaught exception, an unrecognised failure.
CASES = [
    SEED,
    LOGS / "gpu-hardware-fault--xid79-dmesg.log",
    LOGS / "python-exception--chained-custom-buried.log",
    *sorted(LOGS.glob("healthy*.log"))[:1],
]


def _sarif(report: Report) -> dict[str, object]:
    return json.loads(report.render("sarif"))  # type: ignore[no-any-return]


def test_the_vendored_schema_is_the_official_one_unchanged() -> None:
    source = (DATA / "sarif-schema-2.1.0.SOURCE.md").read_text(encoding="utf-8")
    assert "https://github.com/oasis-tcs/sarif-spec" in source
    assert hashlib.sha256(SCHEMA_FILE.read_bytes()).hexdigest() in source
    assert SCHEMA["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    jsonschema.Draft4Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("log", CASES, ids=lambda p: p.name)
def test_sarif_validates_against_the_official_schema(log: Path) -> None:
    jsonschema.Draft4Validator(SCHEMA).validate(_sarif(rlfix.diagnose(log)))


def test_sarif_validates_for_an_exit_status_an_unknown_failure_and_bytes() -> None:
    inferred = rlfix.diagnose("step 1 loss 0.3\n", exit_status="SIGKILL")
    jsonschema.Draft4Validator(SCHEMA).validate(_sarif(inferred))
    unknown = rlfix.diagnose("step 1\nFATAL: the flux capacitor overheated\nexit code 3\n")
    assert unknown.top is not None and unknown.top.id == "unrecognized-failure"
    jsonschema.Draft4Validator(SCHEMA).validate(_sarif(unknown))
    piped = rlfix.diagnose(b"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    log = _sarif(piped)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]  # type: ignore[index]
    assert uri == "%3Cbytes%3E"


def test_one_result_per_finding_with_rule_location_and_level() -> None:
    report = rlfix.diagnose(SEED)
    run = _sarif(report)["runs"][0]  # type: ignore[index]
    results, rules = run["results"], run["tool"]["driver"]["rules"]
    findings = [d for top in report.diagnoses for d in (top, *top.folded)] + list(report.notes)
    assert [r["ruleId"] for r in results] == [d.id for d in findings]
    assert {r["id"] for r in rules} == {d.id for d in findings}
    top = results[0]
    assert rules[top["ruleIndex"]]["id"] == top["ruleId"] == "cuda-illegal-memory-access"
    assert top["level"] == "error" and top["properties"]["action"] == "report-upstream"
    location = top["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == str(SEED)[1:] or location["artifactLocation"]["uri"].endswith(
        SEED.name
    )
    assert location["region"]["startLine"] == 67
    assert all(r["level"] == "note" for r in results[1:])  # the symptoms the root explains
    rule = rules[top["ruleIndex"]]
    assert "Re-run the failing step" in rule["help"]["text"] and "--enforce_eager" in rule["help"]["text"]
    assert rule["helpUri"].startswith("https://") and rule["defaultConfiguration"]["level"] == "error"


def test_sarif_uris_are_relative_paths_or_file_uris() -> None:
    from rlfix.render.sarif import artifact_uri

    assert artifact_uri("logs/job 1.log") == "logs/job%201.log"
    assert artifact_uri("/home/user/runs/job.log") == "file:///home/user/runs/job.log"
    assert artifact_uri("<stdin>") == "%3Cstdin%3E"


def test_escaping_of_workflow_commands() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert escape_data("%0A") == "%250A"  # an escape already in the data stays data


def test_a_log_line_cannot_inject_a_workflow_command(tmp_path: Path) -> None:
    # The file name and the evidence line both try: a newline, an escape, a property's `,` and `:`.
    name = tmp_path / "job,title=x:y\n::warning file=evil::pwned\x1b[2J.log"
    name.write_text(
        "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered %0A::set-env name=A::1\r"
        "::add-mask::x\n"
    )
    out = rlfix.diagnose(name).render("github")
    lines = out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("::error file=")
    props, _, message = lines[0][len("::error ") :].partition("::")
    # GitHub splits properties at `,` and each at its first `=`: file, line, title and nothing else.
    assert [p.split("=", 1)[0] for p in props.split(",")] == ["file", "line", "title"]
    assert "%0A%3A%3Awarning file=evil%3A%3Apwned\\x1b[2J.log" in props
    assert "%250A::set-env" in message and "\r" not in out and "\x1b" not in out


def test_github_annotations_and_exit_status_through_the_installed_script(tmp_path: Path, run_cli: RunCli) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    proc = run_cli(["diagnose", str(SEED), "-f", "github"], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 1 and proc.stderr == ""
    assert re.fullmatch(
        r"::error file=[^:\n]+,line=67,title=cuda-illegal-memory-access \(report-upstream\)::CUDA illegal memory "
        r"access \[ActorModelRayActor pid=3340\]: [^\n]+\n",
        proc.stdout,
    )
    text = summary.read_text()
    assert text.startswith("# earlier step\n## rlfix diagnosis") and "cuda-illegal-memory-access" in text
    healthy = run_cli(["diagnose", str(CASES[-1]), "-f", "github"])
    assert healthy.returncode == 0 and healthy.stdout == ""


def test_the_step_summary_stays_under_its_limit(tmp_path: Path) -> None:
    report = rlfix.diagnose(SEED)
    assert len(step_summary(report).encode()) < 1024 * 1024
    small = step_summary(report, limit=600)
    assert len(small.encode()) <= 600 and "cut to stay under" in small
    assert write_step_summary(report, environ={}) is None  # not in GitHub Actions: nothing written
    target = tmp_path / "s.md"
    assert write_step_summary(report, environ={"GITHUB_STEP_SUMMARY": str(target)}) == str(target)


def test_an_unwritable_step_summary_is_a_warning_not_a_failure(tmp_path: Path, run_cli: RunCli) -> None:
    proc = run_cli(["diagnose", str(SEED), "-f", "github"], env={"GITHUB_STEP_SUMMARY": str(tmp_path / "no/such.md")})
    assert proc.returncode == 1 and proc.stdout.startswith("::error ")
    assert proc.stderr.count("\n") == 1 and "cannot write the step summary" in proc.stderr


def test_both_formats_are_registered_behind_the_gate() -> None:
    # tests/test_gate.py plants every secret in every string of a report, for every registered format.
    assert {"sarif", "github"} <= set(RENDERERS)
