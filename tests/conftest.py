"""Shared fixtures: the bundled and the test knowledge bases, paths, and the installed CLI."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from rlfix.kb.load import KnowledgeBase, load_knowledge
from tests.ray_cluster import RayHead, write_token

# Tests and the CLIs they start share a knowledge-base cache of their own, never the user's.
if "RLFIX_CACHE_DIR" not in os.environ:
    os.environ["RLFIX_CACHE_DIR"] = tempfile.mkdtemp(prefix="rlfix-test-cache-")
    atexit.register(shutil.rmtree, os.environ["RLFIX_CACHE_DIR"], True)

# The Ray tests' cluster runs with token auth, as production clusters do, and this session talks to
# it as a user's shell would: RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH. Set here, before anything
# imports Ray, because Ray reads its auth mode once per process.
if "RAY_AUTH_TOKEN_PATH" not in os.environ:
    _auth_dir = tempfile.mkdtemp(prefix="rlfix-test-ray-auth-")
    atexit.register(shutil.rmtree, _auth_dir, True)
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(write_token(Path(_auth_dir) / "auth_token"))
os.environ["RAY_AUTH_MODE"] = "token"

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


@pytest.fixture(scope="session")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayHead]:
    """One real local Ray head with token auth, shared by every Ray test of the session.

    Token auth is on, as on production clusters; `ray_head.env` holds what a user's shell holds
    to reach it (HOME with ~/.ray/auth_token, RAY_AUTH_MODE=token). Its memory monitor kills above
    the machine's use at start plus 6 GiB (the trial's nine jobs at once use about 3), so the
    OOM scenario stays small and real and never kills an innocent worker.
    """
    if os.environ.get("CI"):
        import ray  # noqa: F401 - in CI a missing Ray must fail the run, not skip it
    else:
        pytest.importorskip("ray")
    from tests.ray_cluster import memory_threshold, start_head

    running = start_head(tmp_path_factory.mktemp("ray"), memory_usage_threshold=memory_threshold(6.0))
    try:
        yield running
    finally:
        running.stop()
