"""Shared fixtures: the bundled and the test knowledge bases, paths, and the installed CLI."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from rlfix.kb.load import KnowledgeBase, load_knowledge

# Tests and the CLIs they start share a knowledge-base cache of their own, never the user's.
if "RLFIX_CACHE_DIR" not in os.environ:
    os.environ["RLFIX_CACHE_DIR"] = tempfile.mkdtemp(prefix="rlfix-test-cache-")
    atexit.register(shutil.rmtree, os.environ["RLFIX_CACHE_DIR"], True)

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
FIXTURES = ROOT / "fixtures" / "logs"


@pytest.fixture(scope="session")
def builtin_kb() -> KnowledgeBase:
    return load_knowledge()


@pytest.fixture(scope="session")
def mini_kb() -> KnowledgeBase:
    """A small knowledge base that does not change when the shipped one does."""
    return load_knowledge([DATA / "kb"], builtin=False)


def rlfix_executable() -> list[str]:
    """The installed console script (what users run), next to this interpreter."""
    script = Path(sys.executable).with_name("rlfix")
    if script.exists():
        return [str(script)]
    found = shutil.which("rlfix")
    if found:
        return [found]
    raise RuntimeError("the rlfix console script is not installed; run: pip install '.[test]'")


RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_cli(tmp_path: Path) -> RunCli:
    """Run the installed `rlfix` console script in a subprocess, from a neutral directory."""

    def run(
        args: Sequence[str],
        stdin: str | bytes | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
        data = stdin.encode() if isinstance(stdin, str) else stdin
        proc = subprocess.run(
            [*rlfix_executable(), *args],
            input=data if data is not None else b"",
            capture_output=True,
            cwd=cwd or tmp_path,
            env=full_env,
            timeout=120,
            check=False,
        )
        return subprocess.CompletedProcess(
            proc.args, proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
        )

    return run
