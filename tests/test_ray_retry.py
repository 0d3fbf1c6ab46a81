"""`rlfix ray job --follow --retry N` on the real token-auth test head, with a real transient fault.

It runs before the trial (tests/test_ray_trial.py, by file name), so the trial's OOM records are
not yet in the logs Ray forwards to its drivers, and it waits until the GCS marks its killed
nodes dead, so no node dies under the trial's jobs. A second Ray node joins the head; a job's task can only run there (a custom resource). While the
task runs, that node's raylet is killed with SIGKILL (a preempted or crashed machine), a
replacement node joins, and rlfix, following the job, finds `ray-node-died` (a transient cause),
resubmits the job as it was and follows the new attempt to SUCCEEDED. A job that fails on its
arguments (`config-error`) is not resubmitted. Files, not sleeps, tell the test when the task runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import rlfix_executable

if os.environ.get("CI"):
    import ray  # noqa: F401 - in CI a missing Ray must fail the run, not skip it
else:
    pytest.importorskip("ray")

from tests.ray_cluster import RayHead, free_ports

pytestmark = [pytest.mark.ray, pytest.mark.slow]

RESOURCE = "rlfix_flaky"
JOB = textwrap.dedent(
    """
    import os, pathlib, time
    import ray

    ray.init()

    @ray.remote(resources={"RESOURCE": 1}, max_retries=0)
    def generate_rollouts():
        pathlib.Path(os.environ["RLFIX_STARTED"]).write_text(str(os.getpid()))
        deadline = time.monotonic() + 120
        while not pathlib.Path(os.environ["RLFIX_GO"]).exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        return "rollouts done"

    print(ray.get(generate_rollouts.remote()), flush=True)
    """
).replace("RESOURCE", RESOURCE)


def _client(head: RayHead) -> Any:
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(head.dashboard_url)


def _stored(head: RayHead, submission_id: str) -> dict[str, Any]:
    """The Jobs API's own record of a submission, from the GCS (its REST answer and the SDK's
    JobDetails leave the entrypoint resources out in Ray 2.60)."""
    import importlib
    import json

    from ray._private import ray_constants

    gcs = importlib.import_module("ray._raylet").GcsClient(address=head.gcs_address)
    raw = gcs.internal_kv_get(
        f"_ray_internal_job_info_{submission_id}".encode(), namespace=ray_constants.KV_NAMESPACE_JOB, timeout=30
    )
    record: dict[str, Any] = json.loads(raw)
    return record


def _start_node(head: RayHead, tag: str) -> None:
    """A second node on this machine with the custom resource; `tag` marks its processes."""
    listen, grpc, metrics, runtime_env = free_ports(4)
    cmd = [
        str(Path(sys.executable).with_name("ray")),
        "start",
        f"--address={head.gcs_address}",
        "--node-ip-address=127.0.0.1",
        "--num-cpus=1",
        f'--resources={{"{RESOURCE}": 1, "{tag}": 1}}',
        f"--dashboard-agent-listen-port={listen}",
        f"--dashboard-agent-grpc-port={grpc}",
        f"--metrics-export-port={metrics}",
        f"--runtime-env-agent-port={runtime_env}",
        "--disable-usage-stats",
    ]
    done = subprocess.run(cmd, env=head.env, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def _node_pids(head: RayHead, tag: str) -> list[int]:
    """The node's processes: its raylet names the tag in its resource list; the others name the raylet's socket."""
    found = []
    for pid in head.pids():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if tag.encode() in cmdline:
            found.append(pid)
    return found


def _kill_node(head: RayHead, tag: str) -> None:
    for pid in _node_pids(head, tag):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _kill_pid(path: Path) -> None:
    """SIGKILL the process whose pid `path` holds (written by that process; waited for while it lands)."""
    deadline = time.monotonic() + 10
    while not path.read_text().strip().isdigit():
        assert time.monotonic() < deadline, f"no pid in {path.name}"
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        os.kill(int(path.read_text()), signal.SIGKILL)


def _wait_for(path: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} did not appear in {seconds:.0f} s"
        time.sleep(0.2)


def _wait_until_gone(head: RayHead, tags: list[str], seconds: float = 90) -> None:
    """Until the GCS lists no alive node carrying one of `tags` (it marks a killed node dead after
    missed health checks): later tests share the head, and must not see a node die under their jobs."""
    from ray.util.state import list_nodes

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = list_nodes(
            address=head.dashboard_url, filters=[("state", "=", "ALIVE")], detail=True, raise_on_missing_output=False
        )
        if not any(tag in (getattr(n, "resources_total", None) or {}) for n in alive for tag in tags):
            return
        time.sleep(1)
    raise AssertionError(f"nodes {tags} still alive after {seconds:.0f} s")


@pytest.fixture
def nodes(ray_head: RayHead) -> Iterator[list[str]]:
    """Tags of the extra nodes a test starts; each is killed, and known dead to the GCS, after it."""
    tags: list[str] = []
    yield tags
    for tag in tags:
        _kill_node(ray_head, tag)
    _wait_until_gone(ray_head, tags)


def test_a_node_lost_under_a_job_is_resubmitted_and_succeeds(
    ray_head: RayHead, tmp_path: Path, nodes: list[str]
) -> None:
    (tmp_path / "job.py").write_text(JOB)
    started, go = tmp_path / "started", tmp_path / "go"
    nodes.append("rlfix_node_a")
    _start_node(ray_head, "rlfix_node_a")
    client = _client(ray_head)
    original = client.submit_job(
        entrypoint=f"{sys.executable} job.py",
        runtime_env={"working_dir": str(tmp_path), "env_vars": {"RLFIX_STARTED": str(started), "RLFIX_GO": str(go)}},
        entrypoint_num_cpus=0.5,
        metadata={"team": "rl"},
    )
    follow = subprocess.Popen(
        [*rlfix_executable(), "ray", "job", original, "--follow", "--retry", "2", "--address", ray_head.dashboard_url],
        env={**ray_head.env, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(started, 120)
        _kill_node(ray_head, "rlfix_node_a")  # the machine is gone, with its raylet and workers
        # The task's worker names no tag on its command line: killed too, so that it never finishes the
        # task and hands its result to the driver directly (seen once in CI: the job then succeeded).
        _kill_pid(started)
        nodes.append("rlfix_node_b")
        _start_node(ray_head, "rlfix_node_b")  # its replacement joins
        go.touch()
        out, err = follow.communicate(timeout=300)
    finally:
        if follow.poll() is None:
            follow.kill()
    assert follow.returncode == 0, err[-3000:]
    assert f"rlfix: job {original} failed, retrying: ray-node-died is transient" in err
    retries = [j for j in client.list_jobs() if (j.metadata or {}).get("rlfix_retry_of") == original]
    assert len(retries) == 1, [(j.submission_id, j.metadata) for j in retries]
    retry, first = retries[0], client.get_job_info(original)
    assert f"resubmitted as {retry.submission_id}" in err
    assert str(first.status).endswith("FAILED") and str(retry.status).endswith("SUCCEEDED")
    assert retry.entrypoint == first.entrypoint
    assert _stored(ray_head, retry.submission_id)["entrypoint_num_cpus"] == 0.5
    assert retry.runtime_env.get("working_dir") == first.runtime_env.get("working_dir")
    assert retry.metadata["team"] == "rl" and retry.metadata["rlfix_attempt"] == "1"
    # The report printed is the last attempt's: it succeeded.
    assert "no failure recognised" in out or "ray-node-died" not in out.split("\n", 1)[0]


def test_a_config_error_is_not_resubmitted(ray_head: RayHead, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import argparse\nparser = argparse.ArgumentParser(prog='train.py')\nparser.parse_args()\n"
    )
    client = _client(ray_head)
    job = client.submit_job(
        entrypoint=f"{sys.executable} train.py --lr 1e-5", runtime_env={"working_dir": str(tmp_path)}
    )
    done = subprocess.run(
        [*rlfix_executable(), "ray", "job", job, "--follow", "--retry", "2", "--address", ray_head.dashboard_url],
        env={**ray_head.env, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "config-error" in done.stdout
    assert f"rlfix: job {job} failed, not retrying: config-error calls for fix-config" in done.stderr
    assert not [j for j in client.list_jobs() if (j.metadata or {}).get("rlfix_retry_of") == job]
