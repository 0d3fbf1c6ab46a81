"""The HTML report in a real headless Chromium: diagnoses and timeline marks are in the live DOM.

Chromium comes from Debian (`apt-get install -y chromium`, done by .ci/run). Locally the test is
skipped when Chromium is absent; in CI (CI set) a missing Chromium is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rlfix.core import Triage
from rlfix.kb.load import load_knowledge

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
