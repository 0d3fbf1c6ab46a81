"""What keeps a chatty log cheap changes no answer: repeats counted without a recheck, lines that
matched nothing remembered, context probes confined to each input's head, masked templates."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rlfix.core import Triage
from rlfix.match.matcher import Matcher, Probe, observer_pattern
from rlfix.observe.context import CONTEXT_BYTES
from rlfix.templates import _SUBSTITUTIONS, TEMPLATE_CHARS, template
from tests.conftest import FIXTURES, RunCli

# A Ray autoscaler warning as Ray prints it every 30 s (fixtures/logs has it), from four nodes.
WARNING = (
    "(autoscaler +{m}m{s}s) Warning: The following resource request cannot be scheduled right now: "
    "{{'CPU': 1.0, 'GPU': {g}.0}}. This is likely due to all cluster resources being claimed by actors."
)
RANKED = "[rank{r}]:[W ProcessGroupNCCL.cpp:{n}] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now"


def _chatty(lines: int) -> str:
    out = []
    for i in range(lines):
        out.append(f"(WorkerDict pid={4000 + i % 8}, ip=10.0.0.{i % 4}) step:{i} - actor/pg_loss:0.{i % 97:02d}")
        if i % 3 == 0:
            out.append(WARNING.format(m=i // 60, s=i % 60, g=i % 3))
        if i % 5 == 0:
            out.append(RANKED.format(r=i % 16, n=1000 + i))
    out.append("RuntimeError: CUDA error: an illegal memory access was encountered")
    return "\n".join(out) + "\n"


def _report(text: str, repeats: bool) -> tuple[dict[str, object], int, int]:
    triage = Triage()
    if not repeats:
        triage.budget.on_repeat = None
    triage.feed_text(text)
    return triage.report().to_dict(), triage.budget.candidates, triage.budget.repeats


def test_repeats_counted_without_a_recheck_give_the_same_report() -> None:
    text = _chatty(3000)
    full, full_candidates, _ = _report(text, repeats=False)
    fast, fast_candidates, repeats = _report(text, repeats=True)
    assert fast == full
    # The first MAX_TIMELINE_EACH (200) of them are timeline points, checked in full.
    assert repeats >= 790 and fast_candidates < full_candidates / 3
    unschedulable = next(d for d in full["diagnoses"] if d["id"] == "ray-unschedulable")  # type: ignore[index]
    assert unschedulable["count"] == 1000


def _runs_of_the_same_warning() -> list[str]:
    """Runs of one warning between lines that hold no anchor, broken by a traceback, another
    worker's warning and a second input: the shapes the "same as the last repeat" shortcut sees."""
    quiet = "(WorkerDict pid=4001, ip=10.0.0.1) step:{i} - actor/pg_loss:0.{i}"
    traceback = [
        "Traceback (most recent call last):",
        '  File "/home/user/train.py", line 3, in <module>',
        "ValueError: bad batch {i}",
    ]
    first, second = [], []
    for i in range(900):
        first.append(quiet.format(i=i))
        if i % 2 == 0:
            first.append(WARNING.format(m=i // 60, s=i % 60, g=i % 3))
        if i in (300, 301, 650):
            first.extend(line.format(i=i) for line in traceback)
        if i == 500:  # another worker's warnings inside a traceback still being printed
            first.extend([traceback[0], traceback[1], first[-1], first[-1], traceback[2].format(i=i)])
        if i % 97 == 0:
            first.append(RANKED.format(r=i % 8, n=i))
        second.append(WARNING.format(m=i // 60, s=i % 60, g=1))
    return ["\n".join(first) + "\n", "\n".join(second) + "\n"]


def _report_of(texts: list[str], repeats: bool) -> tuple[dict[str, object], list[bool]]:
    triage = Triage()
    offered: list[bool] = []
    count = triage.budget.on_repeat
    if repeats and count is not None:
        triage.budget.on_repeat = lambda probes, line, again: offered.append(again) or count(probes, line, again)
    else:
        triage.budget.on_repeat = None
    for n, text in enumerate(texts):
        triage.feed_text(text, f"<log {n}>")
    return triage.report().to_dict(), offered


def test_a_run_of_one_warning_is_counted_as_when_each_line_is_checked() -> None:
    texts = _runs_of_the_same_warning()
    full, _ = _report_of(texts, repeats=False)
    fast, offered = _report_of(texts, repeats=True)
    assert fast == full
    # Most repeats took the shortcut; each run began with a full look (again=False).
    assert offered.count(True) > 800 and offered.count(False) >= 3
    unschedulable = next(d for d in full["diagnoses"] if d["id"] == "ray-unschedulable")  # type: ignore[index]
    assert unschedulable["count"] == 452 + 900


def test_a_repeat_from_another_rank_still_counts_its_rank() -> None:
    lines = [f"[rank{r}]: RuntimeError: CUDA error: an illegal memory access was encountered" for r in range(12)]
    triage = Triage()
    triage.feed_text("\n".join(lines * 3) + "\n")
    top = triage.report().top
    assert top is not None and top.count == 36 and len(top.ranks) == 12


def test_a_remembered_quiet_line_never_hides_a_pattern_that_reads_digits() -> None:
    exit_137 = Probe("exit-137", observer_pattern(r"exited with code 137", ("exited with code",)))
    any_code = Probe("any-code", observer_pattern(r"exited with code \d+ after", ("code",)))
    matcher = Matcher([exit_137, any_code])
    budget = matcher.budget()
    seen: list[tuple[str, int]] = []
    lines = ["worker exited with code 100", "worker exited with code 100", "worker exited with code 137"]
    lines += ["exited with code 3 after", "exited with code 4 after"]
    for number, line in enumerate(lines, 1):
        matcher.scan_line(line, number, "<t>", lambda hit: seen.append((hit.probe.owner, hit.line.number)), budget)
    assert ("exit-137", 3) in seen
    assert [n for owner, n in seen if owner == "any-code"] == [4, 5]


def test_context_is_read_in_each_inputs_head_only() -> None:
    filler = "(WorkerDict pid=7, ip=10.0.0.1) step:1 - actor/pg_loss:0.5\n" * (CONTEXT_BYTES // 50)
    banner = "INFO 03-14 10:00:00 llm_engine.py:237] Initializing a V1 LLM engine (v0.8.5) with config: model=x\n"
    late, early = Triage(), Triage()
    late.feed_text(filler + banner)
    early.feed_text(banner + filler)
    assert early.report().context.versions.get("vllm") == "0.8.5"
    assert "vllm" not in late.report().context.versions


def _slow_template(message: str) -> str:
    for pattern, placeholder in _SUBSTITUTIONS:
        message = pattern.sub(placeholder, message)
    return message.strip()[:TEMPLATE_CHARS]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("0123456789abcdefx.:/-+ eE[]rank_\u0663é"), max_size=80))
def test_a_template_is_that_of_the_message_with_its_digits_masked(message: str) -> None:
    assert template(message) == _slow_template(message)


def test_real_lines_template_as_before() -> None:
    for log in sorted(FIXTURES.glob("*.log"))[:60]:
        for line in log.read_text(errors="replace").splitlines():
            assert template(line) == _slow_template(line), line


def test_stats_line_on_stderr(run_cli: RunCli) -> None:
    log = sorted(FIXTURES.glob("*.log"))[0]
    proc = run_cli(["diagnose", str(log), "--stats", "-f", "json"])
    line = next(x for x in proc.stderr.splitlines() if x.startswith("rlfix: stats "))
    stats = json.loads(line.removeprefix("rlfix: stats "))
    assert set(stats) == {"lines", "bytes", "candidates", "candidate_share", "inputs", "engine", "seconds"}
    assert stats["lines"] == len(log.read_bytes().splitlines()) and 0 < stats["candidates"] <= stats["lines"]
    assert json.loads(proc.stdout)["inputs"][0]["lines"] == stats["lines"]
    assert re.fullmatch(r"hyperscan|python", stats["engine"])
