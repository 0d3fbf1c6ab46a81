"""The HTML report: self-contained, escaped, with a timeline that shows who failed first."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html import unescape
from pathlib import Path

import pytest

from rlfix.core import Triage
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.render.html import render_html
from rlfix.render.timeline import MAX_LANES, SLOTS, layout_timeline
from rlfix.report import Report
from tests.conftest import FIXTURES

DATA = Path(__file__).parent / "data"
MINI_KB = DATA / "kb" / "mini.yaml"
MULTIRANK = DATA / "multirank.log"
SVG_NS = "{http://www.w3.org/2000/svg}"

ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"
TIMEOUT = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE)"


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    # The small test KB keeps these tests independent of the evolving shipped one.
    return load_knowledge([MINI_KB], builtin=False)


def _report(kb: KnowledgeBase, *sources: tuple[str, str]) -> Report:
    triage = Triage(kb)
    for name, text in sources:
        triage.feed_text(text, name)
    return triage.report()


@pytest.fixture(scope="module")
def multirank(kb: KnowledgeBase) -> Report:
    triage = Triage(kb)
    triage.feed_paths([MULTIRANK], strict=True)
    return triage.report()


def _svg(html: str) -> ET.Element:
    """The timeline SVG, parsed as XML (which also proves it is well formed)."""
    m = re.search(r"<svg .*?</svg>", html, re.S)
    assert m, "no timeline svg"
    return ET.fromstring(m.group(0))


def _marks(svg: ET.Element) -> list[ET.Element]:
    return [g for g in svg.iter(f"{SVG_NS}g") if "mark" in g.get("class", "").split()]


def test_page_is_self_contained(multirank: Report) -> None:
    html = render_html(multirank)
    assert html.startswith("<!doctype html>")
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert csp and unescape(csp.group(1)).startswith("default-src 'none';")
    # Nothing that could fetch: no external scripts, stylesheets, images, fonts or imports.
    assert not re.search(r"<(?:link|img|iframe|object|embed)\b", html)
    assert not re.search(r"\ssrc=", html)
    assert "@import" not in html and "url(" not in html
    # The only URLs are plain links to the signature's references and the SVG namespace.
    urls = set(re.findall(r"https?://[^\s\"'<>]+", html))
    assert urls <= {"http://www.w3.org/2000/svg", "https://example.org/a"}


def test_script_hash_matches_the_csp(multirank: Report) -> None:
    import base64
    import hashlib

    html = render_html(multirank)
    script = re.search(r"<script>(.*?)</script>", html, re.S)
    assert script
    digest = base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in unescape(html)


def test_diagnoses_evidence_and_folded_symptoms(multirank: Report) -> None:
    html = render_html(multirank)
    assert multirank.ids == ["t-illegal-access"]
    assert 'data-id="t-illegal-access"' in html
    assert "tests/data/multirank.log:9 [rank 2]" in html or "multirank.log:9 [rank 2]" in html
    # Symptoms are folded under the root, not listed as findings of their own.
    folded = re.search(r'<details class="folded">(.*?)</details>', html, re.S)
    assert folded
    assert 'data-id="t-timeout"' in folded.group(1)
    assert 'data-id="t-child-failed"' in folded.group(1)
    assert html.count('<article class="diag') == 1


def test_timeline_lanes_and_first_failing_rank(multirank: Report) -> None:
    layout = layout_timeline(multirank)
    assert layout is not None
    assert layout.axis == "order"  # some matched lines carry no timestamp
    assert [lane.label for lane in layout.lanes] == ["rank 0", "rank 1", "rank 2", "rank 3", "multirank.log"]
    assert [lane.label for lane in layout.lanes if lane.first] == ["rank 2"]
    assert layout.first is not None and layout.first.evidence.line == 9
    # The first failure is the leftmost mark: everything else is the cascade after it.
    assert layout.first.x == min(m.x for m in layout.marks) == 0.0

    svg = _svg(render_html(multirank))
    marks = _marks(svg)
    assert len(marks) == len(multirank.timeline)
    assert {m.get("data-sig") for m in marks} == {"t-illegal-access", "t-timeout", "t-child-failed"}
    firsts = [m for m in marks if "first" in m.get("class", "").split()]
    assert len(firsts) == 1 and firsts[0].get("data-line") == "9"
    labels = [t for t in svg.iter(f"{SVG_NS}text") if "first-label" in t.get("class", "")]
    assert any("first failure: rank 2" in "".join(t.itertext()) for t in labels)


def test_marks_are_coloured_by_diagnosis_with_a_legend(multirank: Report) -> None:
    html = render_html(multirank)
    svg = _svg(html)
    fill: dict[str, set[str]] = {}
    for g in _marks(svg):
        shape = g[-1]
        fill.setdefault(g.get("data-sig", ""), set()).add(
            shape.get("fill") if shape.tag.endswith("circle") else shape.get("stroke")
        )
    assert all(len(c) == 1 for c in fill.values())
    assert len({next(iter(c)) for c in fill.values()}) == 3
    legend = re.search(r'<ul class="legend">(.*?)</ul>', html, re.S)
    assert legend
    for sig_id in fill:
        assert f'data-sig="{sig_id}"' in legend.group(1)


def test_everything_from_the_log_is_escaped(kb: KnowledgeBase) -> None:
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)> & "quoted"'
    report = _report(kb, ("<b>job</b>.log", f"[rank1]: {ILLEGAL} {evil}\n[rank0]: [Rank 0] {TIMEOUT} {evil}\n"))
    for html in (render_html(report), render_html(report, compact=True)):
        assert "<script>alert" not in html
        assert "<img" not in html
        assert "<b>job</b>" not in html
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
        assert "&lt;b&gt;job&lt;/b&gt;.log" in html
        _svg(html)  # tooltips with the raw text still leave a well-formed SVG


def test_only_web_links_are_clickable(tmp_path: Path) -> None:
    kb_file = tmp_path / "kb.yaml"
    text = MINI_KB.read_text(encoding="utf-8").replace(
        "references: [https://example.org/a]", 'references: ["javascript:alert(1)", https://example.org/a]'
    )
    kb_file.write_text(text, encoding="utf-8")
    kb = load_knowledge([kb_file], builtin=False)
    html = render_html(_report(kb, ("a.log", ILLEGAL + "\n")))
    assert 'href="https://example.org/a"' in html
    assert "javascript:" not in html


def test_copy_buttons_carry_each_flag(multirank: Report) -> None:
    applicable = [r.flag.value for r in multirank.top.remedies if r.applies] if multirank.top else []
    html = render_html(multirank)
    assert re.findall(r'data-copy="([^"]*)"', html) == applicable == ["CUDA_LAUNCH_BLOCKING=1"]
    every = re.findall(r'data-copy="([^"]*)"', render_html(multirank, all_flags=True))
    assert every == [
        "CUDA_LAUNCH_BLOCKING=1",
        "--vllm.enforce_eager",
        "--enforce_eager",
        "actor_rollout_ref.rollout.free_cache_engine=False",
    ]
    assert "3 flags for frameworks not detected" in html


def test_time_axis_when_every_point_has_a_timestamp(kb: KnowledgeBase) -> None:
    # Fed later-file-first: on a time axis the earlier event must still be drawn further left.
    late = f"2025-03-02 10:00:30,000 [rank1]: [Rank 1] {TIMEOUT}\n"
    early = f"2025-03-02 10:00:05,500 [rank3]: {ILLEGAL}\n"
    report = _report(kb, ("late.log", late), ("early.log", early))
    layout = layout_timeline(report)
    assert layout is not None and layout.axis == "time"
    x = {m.evidence.source: m.x for m in layout.marks}
    assert x["early.log"] == 0.0 and x["late.log"] == 1.0
    assert layout.ticks[0][1] == "10:00:05" and layout.ticks[-1][1] == "10:00:30"
    assert _svg(render_html(report)).get("data-axis") == "time"


def test_yearless_and_dated_timestamps_share_an_axis(kb: KnowledgeBase) -> None:
    text = (
        f"[rank0]:[E602 11:29:52.185 ProcessGroupNCCL.cpp:632] [Rank 0] {TIMEOUT}\n"
        f"2025-06-02 11:29:50 [rank2]: {ILLEGAL}\n"
    )
    layout = layout_timeline(_report(kb, ("a.log", text)))
    assert layout is not None and layout.axis == "time"
    x = {m.evidence.rank: m.x for m in layout.marks}
    assert x[2] < x[0]


def _stamped(fixture: str, stamp: str) -> str:
    """The lines of a fixture log that start with a timestamp of the given shape."""
    text = (FIXTURES / fixture).read_text(encoding="utf-8")
    return "".join(line + "\n" for line in text.splitlines() if re.match(stamp, line))


def test_yearless_stamps_of_one_input_and_dated_ones_of_another_share_an_axis(builtin_kb: KnowledgeBase) -> None:
    # torchrun's glog stamps (no year) take 2026 from raylet.out's: the stamped lines of both fixtures.
    torchrun = _stamped("host-oom-sigkill--torchrun-cgroup-rank1.log", r"[IWEF]\d{4} ")
    raylet = _stamped("ray-oom-killer--raylet-out.log", r"\[20\d\d-")
    layout = layout_timeline(_report(builtin_kb, ("raylet.out", raylet), ("torchrun.log", torchrun)))
    assert layout is not None and layout.axis == "time"
    timed = [m for m in layout.marks if m.evidence.time is not None]
    assert {m.evidence.source for m in timed} == {"raylet.out", "torchrun.log"}
    assert max(m.x for m in timed if m.evidence.source == "torchrun.log") < min(
        m.x for m in timed if m.evidence.source == "raylet.out"
    )


def test_order_axis_when_stamps_are_on_clocks_that_do_not_compare(builtin_kb: KnowledgeBase) -> None:
    # Seconds since boot of two machines (the kernel lines of two fixtures): no common clock, so log order.
    a = _stamped("host-oom-sigkill--cgroup-bash-dmesg.log", r"\[ *\d+\.\d{6}\] ")
    b = _stamped("host-oom-sigkill--ray-actor-cgroup.log", r"\[ *\d+\.\d{6}\] ")
    assert layout_timeline(_report(builtin_kb, ("a/dmesg.txt", a))).axis == "time"  # type: ignore[union-attr]
    layout = layout_timeline(_report(builtin_kb, ("a/dmesg.txt", a), ("b/dmesg.txt", b)))
    assert layout is not None and layout.axis == "order"


def test_order_axis_when_a_timestamp_is_missing(kb: KnowledgeBase) -> None:
    text = f"2025-03-02 10:00:05 [rank1]: {ILLEGAL}\n[rank0]: [Rank 0] {TIMEOUT}\n"
    layout = layout_timeline(_report(kb, ("a.log", text)))
    assert layout is not None and layout.axis == "order"
    assert [t[1] for t in layout.ticks] == ["line 1", "line 2"]


def test_many_ranks_and_lines_stay_bounded(kb: KnowledgeBase) -> None:
    # 200 ranks report a symptom first; the root cause shows up late, on rank 137.
    child = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
    lines = [f"[rank{r}]: {child}" for _ in range(8) for r in range(200)]
    lines.insert(1000, f"[rank137]: {ILLEGAL}")
    report = _report(kb, ("big.log", "\n".join(lines) + "\n"))
    layout = layout_timeline(report)
    assert layout is not None
    assert len(layout.lanes) == MAX_LANES
    assert layout.lanes[-1].label.endswith("more lanes")
    # The first failing rank keeps its own lane however many ranks there are.
    assert [lane.label for lane in layout.lanes if lane.first] == ["rank 137"]
    assert len(layout.marks) <= MAX_LANES * 2 * (SLOTS + 1)
    html = render_html(report)
    assert len(html) < 2_000_000
    assert "first failure: rank 137" in html


def test_no_failure(kb: KnowledgeBase) -> None:
    report = _report(kb, ("ok.log", "step 1 loss 0.5\nstep 2 loss 0.4\n"))
    html = render_html(report)
    assert "No failure recognised" in html
    assert "<svg" not in html
    assert html.startswith("<!doctype html>")


def test_compact_fragment_is_what_notebooks_show(multirank: Report) -> None:
    fragment = multirank._repr_html_()
    assert fragment == render_html(multirank, compact=True)
    assert not re.search(r"<(?:html|head|body|!doctype)", fragment, re.I)
    assert fragment.startswith("<style>")
    assert '<div class="rlfix compact">' in fragment
    assert 'data-id="t-illegal-access"' in fragment
    assert len(_marks(_svg(fragment))) == len(multirank.timeline)


def test_top_and_show_all(kb: KnowledgeBase) -> None:
    text = f"[rank0]: {ILLEGAL}\n[rank1]: RuntimeError: CUDA error: device-side assert triggered\n"
    report = _report(kb, ("a.log", text))
    assert len(report.diagnoses) == 2
    assert render_html(report, top=1).count('<article class="diag') == 1
    assert "1 more finding not shown" in render_html(report, top=1)
    assert render_html(report, top=1, show_all=True).count('<article class="diag') == 2


def test_cli_writes_an_html_file(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "rlfix", "diagnose", str(MULTIRANK), "--format", "html", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>")
    assert "first failure: rank 2" in html
    assert "illegal memory access" in html
