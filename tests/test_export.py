"""tools/export.py: Python regexes translated to POSIX ERE, checked against grep -E itself."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from rlfix.kb.load import load_knowledge
from rlfix.tools.export import Inexact, export_patterns, regex_to_ere

CASES = [
    # (python regex, a line it matches, a line it must not match)
    (r"CUDA error: an illegal memory access", "RuntimeError: CUDA error: an illegal memory access was", "CUDA error"),
    (r"\bKilled\b", "line 1: 123 Killed python", "Unkilled"),
    (r"exit(?:ed)? with code \d+", "exited with code 137", "exit with code x"),
    (r"rank\s+\d{1,3}", "rank  12", "rank x"),
    (r"[Nn]o space left", "OSError: No space left on device", "no  space"),
    (r"(?i)out of memory", "CUDA OUT OF MEMORY", "out of memor"),
    (r"a\.b", "a.b", "axb"),
]


@pytest.mark.parametrize(("source", "yes", "no"), CASES)
def test_translation_agrees_with_python(source: str, yes: str, no: str) -> None:
    ere = regex_to_ere(source.removeprefix("(?i)"), ignore_case=source.startswith("(?i)"))
    assert re.search(source, yes) and not re.search(source, no)
    if shutil.which("grep") is None:
        pytest.skip("no grep here")
    for line, want in ((yes, 0), (no, 1)):
        proc = subprocess.run(["grep", "-E", "-e", ere], input=line, capture_output=True, text=True)
        assert proc.returncode == want, (source, ere, line)


@pytest.mark.parametrize("source", [r"(?<=x)y", r"a(?=b)", r"(a)\1"])
def test_constructs_ere_cannot_say_are_refused(source: str) -> None:
    with pytest.raises(Inexact):
        regex_to_ere(source)


def test_every_shipped_pattern_exports_in_both_dialects() -> None:
    kb = load_knowledge()
    n = sum(len(s.patterns) for s in kb)
    assert len(export_patterns(kb, "python")) == n
    assert len(export_patterns(kb, "ere")) >= n - 5  # a few exact-only patterns fall back to anchors
