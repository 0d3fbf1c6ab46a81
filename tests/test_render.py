from __future__ import annotations

import json

import pytest

import rlfix
from rlfix.kb.load import KnowledgeBase
from rlfix.render.text import color_wanted

LOG = (
    "python3 -m openrlhf.cli.train_ppo_ray --vllm.enforce_eager False --micro_rollout_batch_size 8\n"
    "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
)


@pytest.fixture
def report(mini_kb: KnowledgeBase) -> rlfix.Report:
    return rlfix.diagnose(LOG, kb=mini_kb)


def test_json_contract(report: rlfix.Report) -> None:
    data = json.loads(report.to_json())
    assert data["version"] == 1
    assert data["top"] == "t-illegal-access"
    (diag,) = data["diagnoses"]
    for key in ("id", "kind", "title", "confidence", "evidence", "remediation", "reasons", "explains"):
        assert key in diag
    assert diag["evidence"][0] == {
        "source": "<text>",
        "line": 2,
        "text": "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered",
        "rank": 2,
        "worker": None,
        "node": None,
        "pid": None,
        "timestamp": None,
        "repeat": 1,
        "values": {},
    }
    assert diag["explains"][0]["id"] == "t-child-failed"
    assert data["context"]["framework"] == "openrlhf"


def test_flags_follow_the_framework_in_the_log(report: rlfix.Report) -> None:
    text = report.render("text")
    # The command line spells flags the >=0.10.2 way, so the pre-0.10.2 spelling is not offered.
    assert "--vllm.enforce_eager" in text and "$ --enforce_eager" not in text
    assert "actor_rollout_ref" not in text  # verl's flag is for another framework
    everything = report.render("text", all_flags=True)
    assert "actor_rollout_ref" in everything and "$ --enforce_eager" in everything
    remedy = next(r for r in report.top.remedies if r.flag.value == "--vllm.enforce_eager")  # type: ignore[union-attr]
    assert remedy.current == "False"


def test_text_has_evidence_line_and_rank(report: rlfix.Report) -> None:
    text = report.render("text", color=False)
    assert "line 2 [rank 2]" in text
    assert "\x1b[" not in text
    assert "\x1b[" in report.render("text", color=True)


def test_markdown_pastes_into_an_issue(report: rlfix.Report) -> None:
    md = report.render("markdown")
    assert md.startswith("## rlfix diagnosis")
    assert "### 1. `t-illegal-access`" in md and "```text" in md


def test_html_is_escaped(mini_kb: KnowledgeBase) -> None:
    report = rlfix.diagnose("<script>x</script> an illegal memory access was encountered\n", kb=mini_kb)
    html = report.render("html")
    assert "<script>x</script>" not in html and "&lt;script&gt;" in html


def test_color_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert color_wanted(True) and not color_wanted(False)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not color_wanted(True)


def test_top_and_all(mini_kb: KnowledgeBase) -> None:
    log = "ValueError: a\n" + "RuntimeError: CUDA error: device-side assert triggered\n"
    report = rlfix.diagnose(
        log + "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5\n", kb=mini_kb
    )
    assert len(report.diagnoses) >= 2
    assert "more finding" in report.render("text", top=1)
    assert "more finding" not in report.render("text", top=1, show_all=True)
