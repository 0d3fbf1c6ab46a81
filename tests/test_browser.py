"""The HTML report in a real headless Chromium: diagnoses and timeline marks are in the live DOM.

Chromium comes from Debian (`apt-get install -y chromium`, done by .ci/run). Locally the test is
skipped when Chromium is absent; in CI (CI set) a missing Chromium is a failure.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rlfix.core import Triage
from rlfix.kb.load import load_knowledge
from tests.conftest import rlfix_executable

pytestmark = pytest.mark.browser

DATA = Path(__file__).parent / "data"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if _in_ci():
        pytest.fail("chromium is not installed; CI must install it (apt-get install -y chromium)")
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


def _dump_dom(chromium: str, page: Path, profile: Path) -> str:
    done = subprocess.run(
        [chromium, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def dom(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    kb = load_knowledge([DATA / "kb" / "mini.yaml"], builtin=False)
    triage = Triage(kb)
    triage.feed_paths([DATA / "multirank.log"], strict=True)
    # A hostile line too: whatever the log holds must stay text in the live page.
    triage.feed_text(
        '[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered <img src=x onerror="'
        "document.title='pwned'\"><script>document.title='pwned'</script>\n",
        "hostile.log",
    )
    tmp = tmp_path_factory.mktemp("browser")
    page = tmp / "report.html"
    page.write_text(triage.report().render("html", show_all=True, all_flags=True), encoding="utf-8")
    return _dump_dom(chromium, page, tmp / "profile")


def test_script_ran_under_the_page_policy(dom: str) -> None:
    # The report's own script is allowed by hash and marks the root once it has wired the buttons.
    assert re.search(r'<div class="rlfix" data-js="ready"', dom)


def test_diagnoses_are_in_the_dom(dom: str) -> None:
    assert re.search(r'<article class="diag top" data-id="t-illegal-access"', dom)
    assert 'data-id="t-timeout"' in dom and 'data-id="t-child-failed"' in dom
    assert dom.count('class="copy"') == 4


def test_timeline_marks_are_in_the_dom(dom: str) -> None:
    svg = re.search(r"<svg .*?</svg>", dom, re.S)
    assert svg
    marks = re.findall(r'<g class="mark( first)?" data-sig="([^"]+)"', svg.group(0))
    assert len(marks) >= 7
    assert {sig for _, sig in marks} == {"t-illegal-access", "t-timeout", "t-child-failed"}
    assert [sig for first, sig in marks if first] == ["t-illegal-access"]
    assert "first failure: rank 2" in svg.group(0)
    assert re.search(r'<ul class="legend">.*data-sig="t-timeout"', dom, re.S)


def test_log_text_did_not_become_markup(dom: str) -> None:
    assert "<title>rlfix: t-illegal-access</title>" in dom
    assert "pwned" in dom  # present as text...
    assert "<img" not in dom and "<script>document" not in dom  # ...never as elements


# --- the fleet table: `rlfix triage fixtures/logs --format html -o fleet.html` -------------------

FIXTURE_LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def _with_click(page: str, header: str) -> str:
    """The page plus a script that clicks one column header, allowed by adding its hash to the policy.

    --dump-dom cannot click; a click event dispatched in the live page runs the page's own handler.
    """
    click = (
        "Array.prototype.forEach.call(document.querySelectorAll('table.groups th'),function(th){"
        f"if(th.textContent==='{header}'){{th.click();}}}});"
    )
    digest = base64.b64encode(hashlib.sha256(click.encode("utf-8")).digest()).decode("ascii")
    page = page.replace("script-src &#x27;sha256-", f"script-src &#x27;sha256-{digest}&#x27; &#x27;sha256-", 1)
    return page.replace("</body>", f"<script>{click}</script></body>", 1)


@pytest.fixture(scope="module")
def fleet_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("fleet")
    out = tmp / "fleet.html"
    done = subprocess.run(
        [*rlfix_executable(), "triage", str(FIXTURE_LOGS), "--format", "html", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1 and out.exists(), done.stderr[-2000:]
    return tmp, out.read_text(encoding="utf-8")


def _rows(dom: str) -> list[tuple[str, int]]:
    table = re.search(r'<table class="groups">.*?</table>', dom, re.S)
    assert table
    rows = re.findall(r'<tr data-cause="([^"]*)"[^>]*>.*?<td class="n" data-sort="(\d+)"', table.group(0), re.S)
    return [(html.unescape(cause), int(count)) for cause, count in rows]


def test_fleet_table_and_chart_are_in_the_dom(chromium: str, fleet_page: tuple[Path, str]) -> None:
    tmp, page = fleet_page
    (tmp / "plain.html").write_text(page, encoding="utf-8")
    dom = _dump_dom(chromium, tmp / "plain.html", tmp / "profile-plain")
    assert re.search(r'<div class="rlfix-fleet" data-js="ready"', dom)
    rows = _rows(dom)
    assert sum(count for _, count in rows) == len(list(FIXTURE_LOGS.glob("*.log")))
    assert [count for _, count in rows] == sorted((count for _, count in rows), reverse=True)
    bars = re.findall(r'<g class="bar" data-cause="([^"]*)" data-count="(\d+)"', dom)
    assert [(html.unescape(c), int(n)) for c, n in bars] == rows
    assert ("cuda-oom", 3) in rows and ("healthy", 9) in rows


def test_fleet_table_sorts_when_a_header_is_clicked(chromium: str, fleet_page: tuple[Path, str]) -> None:
    tmp, page = fleet_page
    (tmp / "by-cause.html").write_text(_with_click(page, "cause"), encoding="utf-8")
    dom = _dump_dom(chromium, tmp / "by-cause.html", tmp / "profile-cause")
    causes = [cause for cause, _ in _rows(dom)]
    assert causes == sorted(causes) and len(causes) > 10
    assert re.search(r'<th scope="col" aria-sort="ascending">cause</th>', dom)
    (tmp / "by-jobs.html").write_text(_with_click(page, "jobs"), encoding="utf-8")
    counts = [count for _, count in _rows(_dump_dom(chromium, tmp / "by-jobs.html", tmp / "profile-jobs"))]
    assert counts == sorted(counts) and counts[0] < counts[-1]
