"""What to do with each finding: action and owner on every signature, the Xid buckets, the fleet filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import rlfix
from rlfix.cli import cli
from rlfix.conclude.actions import xid_decision
from rlfix.conclude.unrecognized import UNRECOGNIZED
from rlfix.kb.load import KnowledgeBase
from rlfix.model import Action, Kind, Owner
from rlfix.render import RenderOptions, render
from tests.conftest import ROOT, RunCli

FIXTURES = ROOT / "fixtures" / "logs"
XID79 = FIXTURES / "gpu-hardware-fault--xid79-dmesg.log"
#: A training job's last words, then the kernel's on the node (as `journalctl -k` prints them).
TAIL = "[rank0]: step 12 loss 0.41\n[rank0]: RuntimeError: CUDA error: unspecified launch failure\n"


def _xid_log(*xids: int, host: str | None = None) -> str:
    prefix = f"Oct  1 13:00:00 {host} kernel: " if host else "[74889.644138] "
    return TAIL + "".join(f"{prefix}NVRM: Xid (PCI:0000:3b:00): {x}, pid=1234, name=python\n" for x in xids)


def test_every_bundled_signature_says_what_to_do_and_who_owns_it(builtin_kb: KnowledgeBase) -> None:
    assert len(builtin_kb) >= 46
    for sig in builtin_kb:
        decision = sig.decision
        assert isinstance(decision.action, Action) and isinstance(decision.owner, Owner), sig.id
        assert decision.reason.strip() and "\n" not in decision.reason, sig.id
        assert sig.zh is not None and sig.zh.reason, f"{sig.id}: no Chinese reason"
        # What the log only echoes (a launcher's table, Ray's death notice) is never a reason to retry.
        if sig.kind is Kind.SYMPTOM:
            assert decision.action is Action.INVESTIGATE, sig.id


def test_what_is_known_only_by_its_shape_is_investigated_never_retried(builtin_kb: KnowledgeBase) -> None:
    for decision in (builtin_kb.require("python-exception").decision, UNRECOGNIZED.decision):
        assert (decision.action, decision.owner) == (Action.INVESTIGATE, Owner.UNKNOWN)
    hardware = builtin_kb.require("gpu-hardware-fault").decision
    assert (hardware.action, hardware.owner) == (Action.CORDON_NODE, Owner.HARDWARE)


def test_a_cause_only_inferred_from_the_exit_signal_is_investigated() -> None:
    report = rlfix.diagnose("loading model\nstep 1 loss 0.3\n", exit_status="SIGKILL")
    assert report.top is not None and report.top.id == "host-oom-sigkill"
    assert report.top.action is Action.INVESTIGATE and report.top.owner is Owner.UNKNOWN
    # The signature itself, found by a line that names it, still says what to change.
    assert report.top.signature.decision.action is Action.FIX_CONFIG


@pytest.mark.parametrize(
    ("xid", "action", "owner"),
    [
        (79, Action.CORDON_NODE, Owner.HARDWARE),  # fell off the bus: RESTART_BM
        (48, Action.CORDON_NODE, Owner.HARDWARE),  # double-bit ECC
        (64, Action.CORDON_NODE, Owner.HARDWARE),  # a row could not be remapped: RESET_GPU
        (95, Action.CORDON_NODE, Owner.HARDWARE),  # uncontained ECC: RESET_GPU
        (119, Action.CORDON_NODE, Owner.HARDWARE),  # GSP timeout: RESET_GPU
        (74, Action.CORDON_NODE, Owner.HARDWARE),  # NVLink
        (94, Action.RETRY, Owner.HARDWARE),  # contained ECC: RESTART_APP
        (63, Action.INVESTIGATE, Owner.HARDWARE),  # a row remap recorded: no immediate action
        (92, Action.INVESTIGATE, Owner.HARDWARE),  # many corrected single-bit errors: no immediate action
        (13, Action.INVESTIGATE, Owner.USER_CODE),  # graphics engine exception: usually the application
        (31, Action.INVESTIGATE, Owner.USER_CODE),  # MMU fault: usually the application
        (43, Action.INVESTIGATE, Owner.USER_CODE),  # the channel stopped after an application fault
    ],
)
def test_each_xid_acts_by_its_bucket_in_nvidias_catalogue(xid: int, action: Action, owner: Owner) -> None:
    decision = xid_decision(xid)
    assert (decision.action, decision.owner) == (action, owner)
    assert f"Xid {xid}" in decision.reason


@pytest.mark.parametrize(
    ("xids", "action"),
    [((79,), Action.CORDON_NODE), ((94,), Action.RETRY), ((63,), Action.INVESTIGATE), ((94, 79), Action.CORDON_NODE)],
)
def test_gpu_hardware_fault_takes_its_action_per_finding(xids: tuple[int, ...], action: Action) -> None:
    top = rlfix.diagnose(_xid_log(*xids)).top
    assert top is not None and top.id == "gpu-hardware-fault"
    assert top.action is action
    assert top.to_dict()["action"] == action.value


def test_action_and_owner_show_in_every_format() -> None:
    report = rlfix.diagnose(XID79)
    for fmt in ("text", "markdown", "html"):
        out = render(report, fmt)
        assert "cordon-node" in out and "hardware" in out and "Xid 79" in out, fmt
    chinese = render(report, "text", RenderOptions(lang="zh"))
    assert "摘除节点 cordon-node" in chinese and "负责方：硬件" in chinese
    data = json.loads(render(report, "json"))["diagnoses"][0]
    assert (data["action"], data["owner"]) == ("cordon-node", "hardware")
    assert "cordon-node" in report._repr_html_()  # the notebook's view


def _fleet_dir(tmp_path: Path) -> Path:
    jobs = tmp_path / "runs"
    jobs.mkdir()
    (jobs / "job-on-node7.log").write_text(_xid_log(79, host="gpu-node-7"))
    (jobs / "job-pci-only.log").write_text(_xid_log(95))
    (jobs / "job-ecc-no-node.log").write_text(
        "[rank1]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
    )
    (jobs / "job-config.log").write_text((FIXTURES / "cuda-oom--verl-fsdp-update.log").read_text())
    (jobs / "job-contained.log").write_text(_xid_log(94, host="gpu-node-9"))
    return jobs


def test_triage_action_cordon_node_lists_nodes_not_jobs(tmp_path: Path, run_cli: RunCli) -> None:
    jobs = _fleet_dir(tmp_path)
    proc = run_cli(["triage", str(jobs), "--action", "cordon-node", "-j", "1"])
    assert proc.returncode == 1, proc.stderr
    names = [line.split("  (")[0] for line in proc.stdout.splitlines()]
    # The host wins over the GPU's bus id; a line naming no machine says so; the Xid 94 job is a retry.
    assert names == ["PCI:0000:3b:00", "gpu-node-7", "node unknown"]
    assert "job-" not in proc.stdout and "gpu-node-9" not in proc.stdout


def test_triage_action_filters_the_table_through_clicks_runner(tmp_path: Path) -> None:
    jobs = _fleet_dir(tmp_path)
    result = CliRunner().invoke(cli, ["triage", str(jobs), "-j", "1", "--action", "retry", "--action", "fix-config"])
    assert result.exit_code == 1, result.output
    assert "with action retry, fix-config (3 other left out)" in result.output
    assert "gpu-hardware-fault  retry" in result.output and "cuda-oom" in result.output
    data = json.loads(CliRunner().invoke(cli, ["triage", str(jobs), "-j", "1", "-f", "json"]).output)
    assert data["actions"] == {"cordon-node": 3, "fix-config": 1, "retry": 1}
    assert data["nodes_to_cordon"] == [
        {"node": "PCI:0000:3b:00", "jobs": 1},
        {"node": "gpu-node-7", "jobs": 1},
        {"node": "node unknown", "jobs": 1},
    ]
    group = next(g for g in data["groups"] if g["cause"] == "gpu-hardware-fault")
    assert group["actions"] == ["cordon-node", "retry"] and group["owners"] == ["hardware"]
    html = CliRunner().invoke(cli, ["triage", str(jobs), "-j", "1", "-f", "html"]).output
    assert "Nodes to cordon" in html and "<code>gpu-node-7</code>" in html


def test_triage_action_refuses_an_unknown_action_in_one_line(tmp_path: Path, run_cli: RunCli) -> None:
    proc = run_cli(["triage", str(_fleet_dir(tmp_path)), "--action", "reboot"])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "'reboot' is not one of" in proc.stderr
    with pytest.raises(rlfix.UsageError, match="choose from retry"):
        rlfix.triage(tmp_path, actions=["reboot"])


def test_lint_names_file_line_and_field_of_a_missing_action(tmp_path: Path, run_cli: RunCli) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "mine.yaml").write_text(
        "signatures:\n  - id: my-failure\n    title: T\n    kind: root\n    severity: fatal\n    owner: config\n"
        "    reason: A flag decides it.\n    summary: S.\n    patterns: [{text: 'my failure here'}]\n"
        "    remediation: {steps: [Fix.]}\n    references: [https://example.org]\n"
        "    examples: {match: ['my failure here']}\n"
    )
    proc = run_cli(["kb", "lint", "--kb", str(kb)])
    assert proc.returncode == 2, proc.stdout
    assert "mine.yaml:2:5: my-failure.action: is required: one of retry, fix-config" in proc.stdout + proc.stderr


def test_decisions_made_per_finding_speak_chinese_too() -> None:
    unknown = rlfix.diagnose("step 1\nFATAL: the flux capacitor overheated\nexit code 3\n")
    assert unknown.top is not None and unknown.top.id == "unrecognized-failure"
    assert "只是从形态上认出来的" in render(unknown, "text", RenderOptions(lang="zh"))
    contained = rlfix.diagnose(_xid_log(94))
    assert "错误已被隔离" in render(contained, "markdown", RenderOptions(lang="zh"))


def test_explain_says_what_to_do(run_cli: RunCli) -> None:
    proc = run_cli(["explain", "gpu-hardware-fault"])
    assert proc.returncode == 0 and "What to do" in proc.stdout and "cordon-node (owner: hardware)" in proc.stdout
