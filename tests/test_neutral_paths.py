"""Fixture logs, knowledge-base examples and docs carry no path of the machine that made them."""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures" / "generate"))

from neutral_paths import neutral  # noqa: E402


def _machine_paths() -> list[str]:
    """Paths that exist only on the machine that runs this test (the checkout and what is beside it)."""
    found = {str(ROOT), str(ROOT.parent / "venvs"), sys.prefix, sys.base_prefix}
    return sorted(p for p in found if p not in ("/", "/usr", "/usr/local") and len(p) > 4)


TEMP = re.compile(
    re.escape(tempfile.gettempdir()) + r"/(?:tmp[a-z0-9_]{8}|pytest-of-|rlfix[-_][a-z]+[-_][a-z0-9_]{8}\b)"
)
FILES = sorted(
    [
        *(ROOT / "fixtures" / "logs").iterdir(),
        *(ROOT / "fixtures" / "ray-session").rglob("*"),  # real Ray session folders (make_session.py)
        *(ROOT / "knowledge").glob("*.yaml"),
        *(ROOT / "examples").rglob("*.*"),
    ],
)


@pytest.mark.parametrize("path", [p for p in FILES if p.is_file()], ids=lambda p: p.name)
def test_no_machine_path(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", "replace")
    for machine in _machine_paths():
        assert machine + "/" not in text and not text.rstrip().endswith(machine), f"{path.name} holds {machine}"
    assert not TEMP.search(text), f"{path.name} holds a temporary directory of this machine"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (str(ROOT) + "/fixtures/generate/model/tiny_rl.py", "/home/user/rlfix/fixtures/generate/model/tiny_rl.py"),
        (
            str(ROOT.parent) + "/venvs/model/lib/python3.11/site-packages/torch",
            "/home/user/venv/lib/python3.11/site-packages/torch",
        ),
        (tempfile.gettempdir() + "/tmpab12cd34/driver.py", "/tmp/job/driver.py"),
        (tempfile.gettempdir() + "/rlfix-td-seeubyij/train_job.sh", "/tmp/job/train_job.sh"),
        ("/usr/lib/python3.10/runpy.py", "/usr/lib/python3.10/runpy.py"),
    ],
)
def test_generators_rewrite_machine_paths(raw: str, expected: str) -> None:
    assert neutral(raw) == expected
    assert neutral(neutral(raw)) == expected
