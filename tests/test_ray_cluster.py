"""The Ray integration against a real local Ray head (CPU only, Jobs API on), with jobs that really fail.

One head serves the module; its memory monitor threshold is set a few GiB above the machine's
current use, so the OOM job is killed by Ray for real after allocating a few GiB at most (it
also stops by itself when less than 6 GiB would be left). Never skipped in CI: with CI set and
Ray missing, the module fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunCli, rlfix_executable

if os.environ.get("CI"):
    import ray  # noqa: F401 - in CI a missing Ray must fail the run, not skip it
else:
    pytest.importorskip("ray")

from tests.ray_cluster import RayHead

pytestmark = [pytest.mark.ray, pytest.mark.slow]

#: Job ids by script name, so later tests can reuse a job instead of submitting it again.
SUBMITTED: dict[str, str] = {}
#: Seconds a test job may take before the test gives up on it.
JOB_TIMEOUT = 120

#: The unwatched-OOM job's driver is busy until this file exists (the test makes it once it has its
#: alerts), or for at most DRIVER_BUSY_S seconds.
GO_FILE = Path(tempfile.gettempdir()) / f"rlfix-go-{os.getpid()}"
DRIVER_BUSY_S = 90

PRELUDE = (
    f"DRIVER_BUSY_S, GO_FILE = {DRIVER_BUSY_S}, {str(GO_FILE)!r}\n"
    + """
import hashlib, os, signal, sys, time
import ray
from rlfix.integrations.ray import diagnose_on_failure
ray.init()

def mark(report):
    # What the hook found, for the test: ids and places only. Quoting the evidence here would put it
    # in this job's driver log, where `rlfix ray job` would find it a second time.
    top = report.top
    places = [
        f"{e.source}|{e.line}|{hashlib.sha1(e.text.lstrip('… ')[:40].encode()).hexdigest()[:12]}"
        for e in (top.evidence if top else ())
    ]
    print("RLFIX-HOOK", top.id if top else "none", "\t".join(places), flush=True)

hook = diagnose_on_failure(cluster=True, stream=open(os.devnull, "w"), on_report=mark)
"""
)

JOBS = {
    # Succeeds, printing what healthy jobs print and what reads as fatal out of context: Ray's
    # autoscaler warning (autoscaler/_private/resource_demand_scheduler.py and the driver's
    # "(autoscaler +Ns)" prefix), the tokenizer's length warning (transformers
    # tokenization_utils_base.py), and an exception's text printed, not raised.
    "healthy_noisy": """
@ray.remote
def rollout(i):
    print("(autoscaler +12s) Warning: The following resource request cannot be scheduled right now: "
          "{'GPU': 1.0}. This is likely due to all cluster resources being claimed by actors. "
          "Consider creating fewer actors or adding more nodes to this Ray cluster.", flush=True)
    print("Token indices sequence length is longer than the specified maximum sequence length for this "
          "model (2048 > 1024). Running this sequence through the model will result in indexing errors", flush=True)
    return i

print("rollouts:", sum(ray.get([rollout.remote(i) for i in range(4)])), flush=True)
print("skipped a sample: RuntimeError: CUDA error: an illegal memory access was encountered", flush=True)
print("training finished", flush=True)
""",
    "unschedulable": """
@ray.remote(num_gpus=1)
def generate_rollouts(n):
    return n

print("waiting for a GPU task on a CPU-only cluster", flush=True)
with hook:
    ray.get(generate_rollouts.remote(8), timeout=15)
""",
    "oom": """
@ray.remote(max_retries=0)
def generate_sequences():
    import psutil
    held = []
    # Grow until Ray's memory monitor kills us; stop by ourselves long before the host is at risk.
    while psutil.virtual_memory().available > (6 << 30) and len(held) < 32:
        held.append(b"\\x01" * (256 << 20))
        time.sleep(0.05)
    return f"stopped safely with {len(held) * 256} MiB held"

with hook:
    print(ray.get(generate_sequences.remote()))
""",
    "sigkill": """
@ray.remote(max_restarts=0)
class Learner:
    def pid(self):
        return os.getpid()
    def train(self, steps):
        for i in range(steps):
            print(f"train step {i} loss={2.0 / (i + 1):.4f}", flush=True)
            time.sleep(0.5)
        return steps

learner = Learner.remote()
pid = ray.get(learner.pid.remote())
with hook:
    ref = learner.train.remote(600)
    time.sleep(3)
    print(f"sending SIGKILL to actor pid {pid}", flush=True)
    os.kill(pid, signal.SIGKILL)
    ray.get(ref)
""",
    # The driver does not wait on the task: only the raylet's log says it was killed, until the driver looks.
    "oom_unwatched": """
@ray.remote(max_retries=0)
def generate_sequences():
    import psutil
    held = []
    while psutil.virtual_memory().available > (6 << 30) and len(held) < 32:
        held.append(b"\\x01" * (256 << 20))
        time.sleep(0.05)
    return f"stopped safely with {len(held) * 256} MiB held"

ref = generate_sequences.remote()
busy_until = time.monotonic() + DRIVER_BUSY_S
while not os.path.exists(GO_FILE) and time.monotonic() < busy_until:
    time.sleep(0.2)  # busy elsewhere (a learner step, say)
try:
    ray.get(ref)
except Exception as exc:
    print("DRIVER-NOTICED", time.time(), type(exc).__name__, flush=True)
    raise
""",
    "exception": """
@ray.remote
class RewardWorker:
    def score(self, batch):
        raise ValueError(f"reward shape mismatch: got {len(batch)} scores for 8 prompts")

time.sleep(2)
with hook:
    ray.get(RewardWorker.remote().score.remote([0.0] * 7))
""",
}


@pytest.fixture(scope="module")
def head(ray_head: RayHead) -> RayHead:
    """The session's token-auth head (tests/conftest.py)."""
    return ray_head


@pytest.fixture(scope="module")
def jobs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("jobs")
    for name, body in JOBS.items():
        (folder / f"{name}.py").write_text(PRELUDE + textwrap.dedent(body))
    return folder


@pytest.fixture(autouse=True)
def _ray_home(head: RayHead, monkeypatch: pytest.MonkeyPatch) -> None:
    # Talk to the token-auth head as its user does (RAY_AUTH_MODE and RAY_AUTH_TOKEN_PATH: conftest.py).
    monkeypatch.setenv("HOME", str(head.home))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


SETTLE_SECONDS = 5


#: Each job's own cause, by job name; `badenv` runs exception.py in a conda env that does not exist.
CAUSES = {
    "badenv": "ray-runtime-env-failed",
    "unschedulable": "ray-unschedulable",
    "sigkill": "ray-actor-died",
    "exception": "python-exception",
    "oom": "ray-oom-killer",
}
#: A conda env that does not exist fails in a few seconds without the network (a pip package would
#: be looked up on an index first, and retried for a minute).
BAD_ENV = {"conda": "rlfix-no-such-env"}


def submit(head: RayHead, jobs_dir: Path, name: str, *, wait: bool = True, expect: str = "FAILED") -> str:
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(head.dashboard_url)
    script, env = ("exception", BAD_ENV) if name == "badenv" else (name, {})
    deadline = time.monotonic() + 60
    while True:
        try:
            job_id: str = client.submit_job(
                entrypoint=f"{sys.executable} {script}.py", runtime_env={"working_dir": str(jobs_dir), **env}
            )
            break
        except RuntimeError as exc:
            # Right after `ray start` the dashboard is up before the node's job agent is.
            if "No available agent" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(1)
    if wait:
        deadline = time.monotonic() + JOB_TIMEOUT
        while not client.get_job_status(job_id).is_terminal():
            assert time.monotonic() < deadline, f"job {name} did not end in {JOB_TIMEOUT} s"
            time.sleep(1)
        assert str(client.get_job_status(job_id)) in (expect, f"JobStatus.{expect}")
        # The raylet reports about a job (an infeasible lease it is still dropping, a kill) a moment
        # after the job ends; rlfix attributes shared node logs by each job's time window, so let
        # those reports land before the next job starts (docs/ray.md: limits).
        time.sleep(SETTLE_SECONDS)
    SUBMITTED[name] = job_id
    return job_id


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def file_line(head: RayHead, source: str, line: int) -> str | None:
    """Line `line` of the session file an evidence source names (`raylet.out`, `127.0.0.1:raylet.out`);
    None for sources that are no file (the state API, the driver's exception, the Jobs API)."""
    name = source.split(":", 1)[1] if source.startswith("127.0.0.1:") else source
    path = head.logs_dir / name
    if ":" in name or " " in name or not path.is_file():
        return None
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, text in enumerate(fh, start=1):
            if number == line:
                # Evidence quotes a line as a terminal shows it: without colour codes.
                return ANSI.sub("", text.rstrip("\n"))
    raise AssertionError(f"{source} has no line {line}")


def assert_true_lines(head: RayHead, evidence: list[tuple[str, int, str]]) -> int:
    """Every (source, line, text) naming a session file quotes that file's own line; returns how many did."""
    checked = 0
    for source, line, text in evidence:
        actual = file_line(head, source, line)
        if actual is not None:
            # A long line is quoted around its match: "… worker id = …".
            core = text.lstrip("… ")[:40]
            assert core in actual, f"{source}:{line} is {actual[:120]!r}, evidence {text[:120]!r}"
            checked += 1
    return checked


def hook_said(head: RayHead, job_id: str) -> tuple[str, list[tuple[str, int, str]]]:
    """What `diagnose_on_failure(cluster=True)` found inside the job (its RLFIX-HOOK line of the driver log)."""
    from ray.job_submission import JobSubmissionClient

    logs = JobSubmissionClient(head.dashboard_url).get_job_logs(job_id)
    marks = [line.split(" ", 2) for line in logs.splitlines() if line.startswith("RLFIX-HOOK ")]
    assert len(marks) == 1, logs[-3000:]
    places = []
    for place in marks[0][2].split("\t") if len(marks[0]) > 2 else ():
        source, line, digest = place.rsplit("|", 2)
        places.append((source, int(line), digest))
    return marks[0][1], places


def assert_hook(head: RayHead, job_id: str, cause: str) -> None:
    top, places = hook_said(head, job_id)
    assert top == cause, places
    for source, line, digest in places:
        actual = file_line(head, source, line)
        if actual is not None:
            # The hook printed a digest of the quote's first 40 characters: they are somewhere in the line.
            digests = {hashlib.sha1(actual[i : i + 40].encode()).hexdigest()[:12] for i in range(len(actual))}
            assert digest in digests, f"{source}:{line}: {actual!r}"


def test_bad_runtime_env_fails_before_the_driver_and_reads_no_other_job(head: RayHead, jobs_dir: Path) -> None:
    from rlfix.integrations.ray import diagnose_job

    report = diagnose_job(submit(head, jobs_dir, "badenv"), address=head.dashboard_url)
    assert report.top is not None and report.top.id == "ray-runtime-env-failed", report.render("text")
    # No job id, so no worker file can be its own (before, every job's worker files were read).
    assert not any("worker-" in s.name for s in report.sources), [s.name for s in report.sources]
    assert_true_lines(head, [(e.source, e.line, e.text) for e in report.top.evidence])


def test_gpu_task_on_cpu_cluster_is_unschedulable(head: RayHead, jobs_dir: Path) -> None:
    from rlfix.integrations.ray import diagnose_job

    report = diagnose_job(submit(head, jobs_dir, "unschedulable"), address=head.dashboard_url)
    assert report.top is not None, report.render("text")
    assert report.top.id == "ray-unschedulable", report.render("text")
    # The proof is the raylet's infeasible-lease warning, read from the node over the dashboard.
    assert any("raylet.out" in e.source for e in report.top.evidence)
    assert_hook(head, SUBMITTED["unschedulable"], "ray-unschedulable")


def test_sigkilled_actor_is_ray_actor_died(head: RayHead, jobs_dir: Path) -> None:
    from rlfix.integrations.ray import diagnose_job

    report = diagnose_job(submit(head, jobs_dir, "sigkill"), address=head.dashboard_url)
    assert report.top is not None, report.render("text")
    # A plain SIGKILL is not an OOM: nothing in the logs proves one, so no host-oom-sigkill.
    assert report.top.id == "ray-actor-died", report.render("text")
    assert report.get("host-oom-sigkill") is None
    # The state API saw the worker die with a system error; its evidence is named as such.
    assert any(s.name.startswith("ray-state:") for s in report.sources), [s.name for s in report.sources]
    assert_hook(head, SUBMITTED["sigkill"], "ray-actor-died")


def test_watch_job_alerts_while_running_and_reports_the_actor_exception(head: RayHead, jobs_dir: Path) -> None:
    from rlfix.integrations.ray import watch_job

    job_id = submit(head, jobs_dir, "exception", wait=False)
    alerts: list[tuple[str, str]] = []
    failures: list[Any] = []
    report = watch_job(
        job_id,
        address=head.dashboard_url,
        on_alert=lambda ev, sig: alerts.append((sig, ev.source)),
        on_failure=failures.append,
        poll=0.5,
        timeout=JOB_TIMEOUT,
    )
    assert report.top is not None, report.render("text")
    assert report.top.id == "python-exception", report.render("text")
    assert report.top.values.get("exception") == "ValueError"
    assert ("python-exception", f"job-driver-{job_id}.log") in alerts
    assert len(failures) == 1 and failures[0].top.id == "python-exception"
    SUBMITTED["exception"] = job_id
    assert_hook(head, job_id, "python-exception")


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


# Jobs before this one must not be blamed for its kill: Ray's periodic raylet summary of OOM
# kills names no job, so a later job could not tell it apart. The tests below read its evidence.
def test_memory_monitor_kill_is_ray_oom_killer(head: RayHead, jobs_dir: Path) -> None:
    from rlfix.integrations.ray import diagnose_job

    report = diagnose_job(submit(head, jobs_dir, "oom"), address=head.dashboard_url)
    assert report.top is not None, report.render("text")
    assert report.top.id == "ray-oom-killer", report.render("text")
    assert_hook(head, SUBMITTED["oom"], "ray-oom-killer")


def test_session_logs_and_state_api(head: RayHead) -> None:
    from rlfix.integrations.ray import diagnose_session_logs

    report = diagnose_session_logs(head.logs_dir, address=head.gcs_address)
    assert "ray-oom-killer" in report.ids, report.render("text")
    names = [s.name for s in report.sources]
    assert "raylet.out" in names
    assert not any(n.startswith("dashboard") for n in names)  # healthy chatter is not read
    assert any(n.startswith("ray-state:worker") for n in names)


def test_cluster_scan_names_the_node_of_each_evidence_line(head: RayHead) -> None:
    from rlfix.integrations.ray import diagnose_cluster

    report = diagnose_cluster(address=head.gcs_address)
    nodes = report.insights.ray_nodes
    assert nodes is not None and len(nodes) == 1 and nodes[0].files > 0
    ip = nodes[0].ip
    oom = report.get("ray-oom-killer")
    assert oom is not None, report.render("text")
    assert all(e.source.startswith(f"{ip}:") for e in oom.evidence)
    # The node counted every matching line it read; the driver only re-reads the few it sent back
    # (the state API's dead worker, counted above, is no node's line: leave it out here).
    from_nodes = diagnose_cluster(address=head.gcs_address, state=False).get("ray-oom-killer")
    assert from_nodes is not None and nodes[0].counts["ray-oom-killer"] >= from_nodes.count


def test_cli_ray_commands_as_a_user_runs_them(head: RayHead, jobs_dir: Path, run_cli: RunCli) -> None:
    env = {"HOME": str(head.home)}
    # The job of the watch test, which ran before the OOM job (see the note above that test).
    job_id = SUBMITTED.get("exception") or submit(head, jobs_dir, "exception")
    proc = run_cli(["ray", "job", job_id, "--address", head.dashboard_url], env=env)
    assert proc.returncode == 1, proc.stderr
    assert "1. python-exception" in proc.stdout
    proc = run_cli(["ray", "logs", str(head.temp_dir), "-f", "json"], env=env)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["failed"] is True
    proc = run_cli(["ray", "cluster", "--address", head.gcs_address, "-f", "json"], env=env)
    assert proc.returncode == 1, proc.stderr
    assert job_id in _sections(json.loads(proc.stdout))
    proc = run_cli(["ray", "job", "raysubmit_nope", "--address", head.dashboard_url], env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "rlfix: error: no Ray job 'raysubmit_nope'; `ray job list` shows the jobs"


def _sections(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {section["job"]: section["report"] for section in doc["jobs"]}


def test_every_job_names_its_own_cause_first_on_every_face(head: RayHead, run_cli: RunCli) -> None:
    """Five jobs failed five ways on one cluster: each face names each job's own cause first, at true lines."""
    assert set(SUBMITTED) >= set(CAUSES), SUBMITTED
    env = {"HOME": str(head.home)}
    faces = {
        "ray logs": ["ray", "logs", str(head.temp_dir), "-f", "json"],
        "ray cluster": ["ray", "cluster", "--address", head.gcs_address, "-f", "json"],
    }
    checked = 0
    for face, args in faces.items():
        proc = run_cli(args, env=env)
        assert proc.returncode == 1, proc.stderr
        doc = json.loads(proc.stdout)
        sections = _sections(doc)
        assert doc["node"] is not None
        if face == "ray cluster":  # each node's summary, as docs/ray.md promises
            assert len(doc["ray_nodes"]) == 1 and doc["ray_nodes"][0]["ip"] and doc["ray_nodes"][0]["files"] > 0
        for name, cause in CAUSES.items():
            report = sections.get(SUBMITTED[name])
            assert report is not None, (face, name, list(sections))
            assert report["diagnoses"][0]["id"] == cause, (face, name, [d["id"] for d in report["diagnoses"]])
            evidence = [(e["source"], e["line"], e["text"]) for e in report["diagnoses"][0]["evidence"]]
            checked += assert_true_lines(head, evidence)
    for name, cause in CAUSES.items():
        proc = run_cli(["ray", "job", SUBMITTED[name], "--address", head.dashboard_url, "-f", "json"], env=env)
        assert proc.returncode == 1, proc.stderr
        top = json.loads(proc.stdout)["diagnoses"][0]
        assert top["id"] == cause, (name, top["id"])
        checked += assert_true_lines(head, [(e["source"], e["line"], e["text"]) for e in top["evidence"]])
    # Most evidence quotes a node log (raylet.out, gcs_server.out, a worker's .err): those were compared.
    assert checked >= len(CAUSES), checked


def test_a_copied_folder_pairs_each_submission_with_its_own_job_id(head: RayHead, tmp_path: Path) -> None:
    """Offline, on a copy of this session's logs: every submission has the job id the Jobs API gives it,
    or none (its driver log names no job), never another submission's (issue 22, item 3)."""
    import shutil

    from ray.job_submission import JobSubmissionClient

    from rlfix.integrations.ray_jobs import session_jobs

    copy = tmp_path / "logs"
    shutil.copytree(head.logs_dir, copy, symlinks=True)
    offline = {s.submission_id: s for s in session_jobs(copy) if s.submission_id}
    listed = [j for j in JobSubmissionClient(head.dashboard_url).list_jobs() if j.submission_id]
    assert listed and {j.submission_id for j in listed} <= set(offline)
    for job in listed:
        span = offline[job.submission_id]
        assert span.job_id in (None, job.job_id), (job.submission_id, span.job_id, job.job_id)
    # The actor whose output reached its driver (`(Learner pid=N) train step …`) is linked for sure.
    sigkill = offline[SUBMITTED["sigkill"]]
    assert sigkill.job_id is not None and sigkill.job_id_from == "driver-log worker output", sigkill


def test_one_job_and_a_time_window(head: RayHead, run_cli: RunCli) -> None:
    env = {"HOME": str(head.home)}
    job = SUBMITTED["sigkill"]
    proc = run_cli(["ray", "logs", str(head.temp_dir), "--job", job, "-f", "json"], env=env)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert [s["job"] for s in doc["jobs"]] == [job] and doc["node"] is None
    proc = run_cli(["ray", "logs", str(head.temp_dir), "--since", "2000-01-01", "--until", "2000-01-02"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("rlfix: Ray session: 0 jobs, 0 failed")
    proc = run_cli(["ray", "logs", str(head.temp_dir), "--job", "raysubmit_nope"], env=env)
    assert proc.returncode == 2 and "no job 'raysubmit_nope'" in proc.stderr
    proc = run_cli(["ray", "job", "--last-failed", "--address", head.dashboard_url, "-f", "json"], env=env)
    assert proc.returncode == 1, proc.stderr
    last = max(SUBMITTED, key=_order)
    assert json.loads(proc.stdout)["diagnoses"][0]["id"] == CAUSES[last]
    # It names the job it picked (stderr: stdout stays the report's JSON).
    assert proc.stderr.startswith(f"rlfix: --last-failed: {SUBMITTED[last]}"), proc.stderr


def _order(name: str) -> int:
    return list(SUBMITTED).index(name)


def test_live_alert_comes_from_the_cluster_before_the_driver_notices(head: RayHead, jobs_dir: Path) -> None:
    """The memory monitor kills a task while its driver is busy: `watch_job` and `rlfix ray job --follow`
    alert from raylet.out (or the worker's files) before the driver hears of it, once per root cause.

    Last in the module: Ray's periodic raylet summary of an OOM kill comes up to a minute later and
    names no job, so another OOM job just before would be blamed too (docs/ray.md: limits).
    """
    import threading
    from collections import Counter

    from ray.job_submission import JobSubmissionClient

    from rlfix.integrations.ray import watch_job

    GO_FILE.unlink(missing_ok=True)
    job_id = submit(head, jobs_dir, "oom_unwatched", wait=False)
    SUBMITTED.pop("oom_unwatched", None)  # not one of the five jobs of the done-when test
    env = {**os.environ, "HOME": str(head.home), "NO_COLOR": "1"}
    env.pop("RAY_ADDRESS", None)
    cli = subprocess.Popen(
        [*rlfix_executable(), "ray", "job", job_id, "--follow", "--address", head.dashboard_url, "-f", "json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cli_alerts: list[tuple[float, str]] = []
    alerts: list[tuple[float, str, str]] = []

    def go_when_both_alerted() -> None:
        # The driver stays busy until both faces have alerted: then it looks, and learns of the kill.
        if any(sig == "ray-oom-killer" for _, sig, _ in alerts) and any(" ray-oom-killer " in x for _, x in cli_alerts):
            GO_FILE.touch()

    def read_cli() -> None:
        for line in cli.stderr or ():
            cli_alerts.append((time.time(), line))
            go_when_both_alerted()

    def on_alert(ev: Any, sig: str) -> None:
        alerts.append((time.time(), sig, ev.source))
        go_when_both_alerted()

    reader = threading.Thread(target=read_cli)
    reader.start()
    try:
        report = watch_job(job_id, address=head.dashboard_url, on_alert=on_alert, poll=0.5, timeout=JOB_TIMEOUT)
        out, _ = cli.communicate(timeout=JOB_TIMEOUT)
    finally:
        cli.kill()
        reader.join(timeout=10)
        GO_FILE.unlink(missing_ok=True)
    noticed = [
        float(line.split()[1])
        for line in JobSubmissionClient(head.dashboard_url).get_job_logs(job_id).splitlines()
        if line.startswith("DRIVER-NOTICED ")
    ]
    assert report.top is not None and report.top.id == "ray-oom-killer", report.render("text")
    assert len(noticed) == 1, "the driver never saw its task fail"
    oom = [(when, source) for when, sig, source in alerts if sig == "ray-oom-killer"]
    assert len(oom) == 1, alerts
    assert oom[0][1].endswith("raylet.out") or "worker-" in oom[0][1], oom
    assert oom[0][0] < noticed[0], (oom, noticed)
    assert max(Counter(sig for _, sig, _ in alerts).values()) == 1, alerts
    # The command line: the same one alert, printed while the driver was still busy.
    said = [(when, line) for when, line in cli_alerts if line.startswith("rlfix: ALERT ")]
    assert [line.split()[2] for _, line in said].count("ray-oom-killer") == 1, said
    assert Counter(line.split()[2] for _, line in said).most_common(1)[0][1] == 1, said
    assert next(when for when, line in said if " ray-oom-killer " in line) < noticed[0], (said, noticed)
    assert cli.returncode == 1 and json.loads(out)["diagnoses"][0]["id"] == "ray-oom-killer"


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


def test_a_succeeded_job_is_healthy_on_every_face_and_keeps_its_warnings(
    head: RayHead, jobs_dir: Path, run_cli: RunCli
) -> None:
    """The Jobs API's SUCCEEDED is evidence: never a failure, exit 0, what looked fatal kept as notes."""
    job_id = submit(head, jobs_dir, "healthy_noisy", expect="SUCCEEDED")
    env = {"HOME": str(head.home)}
    proc = run_cli(["ray", "job", job_id, "--address", head.dashboard_url, "-f", "json"], env=env)
    data = json.loads(proc.stdout)
    assert proc.returncode == 0, (data["failed"], data["top"], data["insights"].get("exit"), data["errors"])
    assert data["failed"] is False and data["diagnoses"] == []
    noted = {n["id"] for n in data["notes"]}
    assert "ray-unschedulable" in noted, noted
    assert any("succeeded" in r for n in data["notes"] for r in n.get("reasons", [])), data["notes"]
    for args in (
        ["ray", "logs", str(head.temp_dir), "--job", job_id, "-f", "json"],
        ["ray", "cluster", "--address", head.gcs_address, "--job", job_id, "-f", "json"],
    ):
        proc = run_cli(args, env=env)
        assert proc.returncode == 0, (args, proc.stdout[-3000:], proc.stderr[-2000:])
        (section,) = json.loads(proc.stdout)["jobs"]
        assert section["report"]["failed"] is False and section["report"]["diagnoses"] == [], (args, section)
