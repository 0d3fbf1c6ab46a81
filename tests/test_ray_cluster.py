"""The Ray integration against the session's real local token-auth head: what is not a job of the trial.

The jobs that fail in different ways, and every face's reading of them, are the trial's
(tests/test_ray_trial.py: they run at the same time, as on a shared cluster). Here: a driver run
outside the Jobs API with the hook, a shell with no token, and a job id that does not exist.
Never skipped in CI: with CI set and Ray missing, the module fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import RunCli

if os.environ.get("CI"):
    import ray  # noqa: F401 - in CI a missing Ray must fail the run, not skip it
else:
    pytest.importorskip("ray")

from tests.ray_cluster import RayHead

pytestmark = [pytest.mark.ray, pytest.mark.slow]

#: Seconds the driver may take before the test gives up on it.
JOB_TIMEOUT = 120


@pytest.fixture(scope="module")
def head(ray_head: RayHead) -> RayHead:
    """The session's token-auth head (tests/conftest.py)."""
    return ray_head


@pytest.fixture(autouse=True)
def _ray_home(head: RayHead, monkeypatch: pytest.MonkeyPatch) -> None:
    # Talk to the token-auth head as its user does (RAY_AUTH_MODE and RAY_AUTH_TOKEN_PATH: conftest.py).
    monkeypatch.setenv("HOME", str(head.home))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


def test_driver_hook_diagnoses_prints_attaches_and_reraises(head: RayHead, tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(
        textwrap.dedent(
            """
            import ray
            from rlfix.integrations.ray import diagnose_on_failure

            ray.init()

            @ray.remote
            class Critic:
                def value(self, batch):
                    raise KeyError("advantages")

            try:
                with diagnose_on_failure():
                    ray.get(Critic.remote().value.remote([1, 2]))
            except ray.exceptions.RayTaskError as exc:
                print("TOP", exc.rlfix_report.top.id)
                raise
            """
        )
    )
    env = {**os.environ, "HOME": str(head.home), "RAY_ADDRESS": head.gcs_address, "NO_COLOR": "1"}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT, check=False
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "TOP python-exception" in proc.stdout, proc.stderr[-6000:]
    assert "1. python-exception" in proc.stderr  # the report, printed before the traceback
    if sys.version_info >= (3, 11):  # exception notes (PEP 678) came in 3.11; 3.10 has the report above
        assert "rlfix: most likely cause: python-exception" in proc.stderr  # the note on the traceback
    assert "KeyError: 'advantages'" in proc.stderr


def test_a_job_that_does_not_exist_is_one_line(head: RayHead, run_cli: RunCli) -> None:
    proc = run_cli(["ray", "job", "raysubmit_nope", "--address", head.dashboard_url], env={"HOME": str(head.home)})
    assert proc.returncode == 2
    assert proc.stderr.strip() == "rlfix: error: no Ray job 'raysubmit_nope'; `ray job list` shows the jobs"


def test_token_auth_without_the_token_is_one_line_naming_the_fix(head: RayHead, run_cli: RunCli) -> None:
    """Every face, on the token-auth head, from a shell with no token configured: exit 2 at once."""
    no_token = {"RAY_AUTH_MODE": "", "RAY_AUTH_TOKEN_PATH": "", "RAY_AUTH_TOKEN": "", "RAY_ADDRESS": ""}
    faces = (
        ["ray", "job", "--last-failed", "--address", head.dashboard_url],
        ["ray", "logs", str(head.temp_dir), "--address", head.dashboard_url],
        ["ray", "cluster", "--address", head.gcs_address],
    )
    for args in faces:
        started = time.monotonic()
        proc = run_cli([*args, "--timeout", "20"], env=no_token)
        took = time.monotonic() - started
        assert proc.returncode == 2, (args, proc.stdout[-500:], proc.stderr[-2000:])
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("rlfix: error:"), (args, proc.stderr[-2000:])
        assert "token authentication" in lines[0] and "RAY_AUTH_MODE=token" in lines[0], lines[0]
        assert not proc.stdout.strip(), (args, proc.stdout[:500])  # no report printed before the error
        assert took < 10, (args, took)
