"""Offline, a submission's job id is the one Ray wrote in its driver log, never a neighbour's.

`fixtures/ray-session/overlap` is a real Ray 2.60 session folder (made by
fixtures/generate/ray/make_session.py): seven submissions run at once, and `truth.json` holds what
the Jobs API said of each. The folder alone must pair each submission with its own job id, or say
the id is unknown; it must never give one submission another's id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlfix.integrations.ray_jobs import session_jobs
from rlfix.integrations.ray_links import (
    FROM_ACTOR_ID,
    FROM_EXPORT,
    FROM_WORKER_OUTPUT,
    NO_DRIVER,
    UNKNOWN,
    driver_link,
    pid_jobs,
    session_links,
)
from tests.conftest import ROOT, RunCli

SESSION = ROOT / "fixtures" / "ray-session" / "overlap"
TRUTH = json.loads((SESSION / "truth.json").read_text())["jobs"]
LOGS = SESSION / "logs"


def test_the_fixture_is_a_real_overlapping_session() -> None:
    """Seven submissions, five with a driver that registered a job id, all running at once."""
    assert len(TRUTH) == 7 and sum(1 for t in TRUTH.values() if t["job_id"]) == 5
    drivers = sorted(LOGS.glob("job-driver-raysubmit_*.log"))
    assert {p.name[len("job-driver-") : -len(".log")] for p in drivers} == {t["submission_id"] for t in TRUTH.values()}


def test_every_submission_gets_its_own_job_id_or_none_never_another() -> None:
    spans = {s.submission_id: s for s in session_jobs(LOGS) if s.submission_id}
    assert set(spans) == {t["submission_id"] for t in TRUTH.values()}
    for name, truth in TRUTH.items():
        span = spans[truth["submission_id"]]
        assert span.job_id in (None, truth["job_id"]), (name, span.job_id, truth["job_id"])
    how = {name: spans[t["submission_id"]].job_id_from for name, t in TRUTH.items()}
    assert how == {
        "actor_sigkill": FROM_WORKER_OUTPUT,  # `(Learner pid=N) train step 0`
        "healthy_a": FROM_WORKER_OUTPUT,  # `(rollout pid=N) rollout 0`
        "bad_env": NO_DRIVER,  # the runtime_env failed: no `Running entrypoint` line
        "actor_exception": FROM_ACTOR_ID,  # `RayTaskError(ValueError): … actor_id=…04000000`
        "bare_exit": UNKNOWN,  # never called ray.init (the API says none; the folder cannot tell)
        "quiet_exit": UNKNOWN,  # its driver log names nothing of its job
        "healthy_b": FROM_WORKER_OUTPUT,
    }
    # The quiet driver's job id is a job of its own, not given to a neighbour that overlaps it.
    quiet = TRUTH["quiet_exit"]["job_id"]
    alone = [s for s in session_jobs(LOGS) if s.job_id == quiet]
    assert len(alone) == 1 and alone[0].submission_id is None


def test_a_job_id_selects_its_own_submission_and_reads_its_own_workers() -> None:
    from rlfix.integrations.ray import diagnose_session_jobs

    kill = TRUTH["actor_sigkill"]
    reports = diagnose_session_jobs(LOGS, job=kill["job_id"])
    assert [s.job for s in reports.sections] == [kill["submission_id"]]
    section = reports.sections[0]
    assert section.info["job_id_from"] == FROM_WORKER_OUTPUT
    workers = [s.name for s in section.report.sources if s.name.startswith("worker-")]
    assert workers and all(f"-{kill['job_id']}-" in name for name in workers), workers
    # A submission whose job id is unknown reads no worker file: none can be shown to be its.
    bare = diagnose_session_jobs(LOGS, job=TRUTH["bare_exit"]["submission_id"]).sections[0]
    assert "(job id unknown)" in bare.heading
    assert not [s.name for s in bare.report.sources if s.name.startswith("worker-")]


# --- the rules, one at a time ----------------------------------------------------------------


def _driver(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "job-driver-raysubmit_X.log"
    path.write_text("".join(line + "\n" for line in lines))
    return path


ENTRY = "Running entrypoint for job raysubmit_X: python train.py"
PIDS = {"101": "02000000", "202": "03000000"}


def test_forwarded_worker_lines_name_the_job(tmp_path: Path) -> None:
    link = driver_link(_driver(tmp_path, ENTRY, "\x1b[36m(Learner pid=101)\x1b[0m train step 1"), PIDS)
    assert (link.job_id, link.how) == ("02000000", FROM_WORKER_OUTPUT)
    assert driver_link(_driver(tmp_path, ENTRY, "(pid=101) hello"), PIDS).job_id == "02000000"


def test_a_worker_on_another_node_or_an_unknown_pid_names_nothing(tmp_path: Path) -> None:
    # `ip=` marks a worker of another node: its pid is not one of this folder's files.
    assert driver_link(_driver(tmp_path, ENTRY, "(Learner pid=101, ip=10.0.0.7) step"), PIDS).how == UNKNOWN
    assert driver_link(_driver(tmp_path, ENTRY, "(Learner pid=999) step"), PIDS).how == UNKNOWN


def test_two_jobs_named_is_no_link(tmp_path: Path) -> None:
    link = driver_link(_driver(tmp_path, ENTRY, "(a pid=101) x", "(b pid=202) y"), PIDS)
    assert (link.job_id, link.how) == (None, UNKNOWN)


def test_actor_ids_in_rays_errors_count_only_without_forwarded_lines(tmp_path: Path) -> None:
    raised = "ray.exceptions.RayTaskError(ValueError): ray::R.f() (pid=7, ip=192.0.2.2, actor_id=7a7206f14b1f27191c0c11c604000000)"
    assert driver_link(_driver(tmp_path, ENTRY, raised), PIDS).job_id == "04000000"
    died = "\tactor_id: 27cf6c0c7ce00bb0bfca9a1702000000"
    assert driver_link(_driver(tmp_path, ENTRY, "ActorDiedError: …", died), PIDS).job_id == "02000000"
    # Another job's named actor died; the driver's own workers printed: they decide.
    assert driver_link(_driver(tmp_path, ENTRY, "(b pid=202) y", raised), PIDS).job_id == "03000000"
    # A report the driver printed (rlfix's hook quotes lines, indented) is no Ray error line.
    echoed = "     job-driver-raysubmit_Y.log:20  " + raised
    assert driver_link(_driver(tmp_path, ENTRY, echoed), PIDS).how == UNKNOWN


def test_internal_jobs_are_never_a_submissions(tmp_path: Path) -> None:
    link = driver_link(_driver(tmp_path, ENTRY, "(a pid=101) x"), PIDS, frozenset({"02000000"}))
    assert link.how == UNKNOWN


def test_no_driver_only_when_the_job_manager_says_it_was_setting_up(tmp_path: Path) -> None:
    setting_up = "2026-11-26 11:08:01,301\tINFO job_manager.py:581 -- Runtime env is setting up."
    assert driver_link(_driver(tmp_path, setting_up, "runtime_env setup failed: …"), PIDS).how == NO_DRIVER
    assert driver_link(_driver(tmp_path, setting_up, ENTRY), PIDS).how == UNKNOWN
    assert driver_link(_driver(tmp_path, "something else"), PIDS).how == UNKNOWN
    assert driver_link(tmp_path / "missing.log", PIDS).how == UNKNOWN


def test_a_pid_two_jobs_reused_names_neither() -> None:
    names = ["worker-aa-02000000-101.out", "worker-bb-03000000-101.out", "worker-cc-03000000-202.err", "x.log"]
    assert pid_jobs(names) == {"202": "03000000"}
    assert pid_jobs(["worker-aa-ffffffff-5.out"]) == {}  # an idle worker has no job


def test_a_job_id_two_submissions_claim_is_neithers(tmp_path: Path) -> None:
    for sub in ("raysubmit_A", "raysubmit_B"):
        (tmp_path / f"job-driver-{sub}.log").write_text(f"{ENTRY}\n(a pid=101) x\n")
    (tmp_path / "worker-aa-02000000-101.out").write_text("x\n")
    links = session_links(tmp_path, ["raysubmit_A", "raysubmit_B"])
    assert {link.how for link in links.values()} == {UNKNOWN}


@pytest.mark.parametrize("name", ["actor_sigkill", "actor_exception"])
def test_the_cli_json_says_how_each_id_is_known(name: str, run_cli: RunCli) -> None:
    proc = run_cli(["ray", "logs", str(LOGS), "--job", TRUTH[name]["submission_id"], "-f", "json"])
    doc = json.loads(proc.stdout)
    assert doc["jobs"][0]["job_id"] == TRUTH[name]["job_id"]
    assert doc["jobs"][0]["job_id_from"] in (FROM_WORKER_OUTPUT, FROM_ACTOR_ID)


# --- the sections of the real session: each its own cause, by identity before time -----------


@pytest.fixture
def recorded_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Read the fixture's local stamps in the zone they were written in (truth.json), as on its machine."""
    import time

    monkeypatch.setenv("TZ", json.loads((SESSION / "truth.json").read_text())["timezone"])
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("recorded_zone")
def test_each_overlapping_job_of_the_real_session_has_its_own_cause() -> None:
    from rlfix.integrations.ray import diagnose_session_jobs

    reports = diagnose_session_jobs(LOGS)
    top = {name: reports.get(t["submission_id"]) for name, t in TRUTH.items()}
    ids = {name: (r.top.id if r is not None and r.top is not None else None) for name, r in top.items()}
    assert ids["actor_sigkill"] == "ray-actor-died", ids
    assert ids["bad_env"] == "ray-runtime-env-failed", ids
    assert ids["actor_exception"] == "python-exception", ids
    assert ids["healthy_a"] is None and ids["healthy_b"] is None, ids
    # The runtime_env failure names the dashboard's job (the bad submission's supervisor): it is no
    # neighbour's, not even of the submissions whose job id is unknown (their drivers started).
    for name in ("actor_sigkill", "healthy_a", "actor_exception", "bare_exit", "quiet_exit", "healthy_b"):
        report = top[name]
        assert report is not None and "ray-runtime-env-failed" not in report.ids, (name, report.ids)
        assert "ray-runtime-env-failed" not in [d.id for d in report.notes], name
    # The bare exit quotes its own driver-log line first (issue 22 item 2); the raylet's "Disconnecting
    # client …" in its window names no job and comes after it (left to time).
    bare = top["bare_exit"]
    assert bare is not None and bare.top is not None and bare.top.id == "unrecognized-failure", ids
    first = bare.top.evidence[0]
    assert first.source == f"job-driver-{TRUTH['bare_exit']['submission_id']}.log", bare.top.evidence
    assert first.text == "ERROR: reward model endpoint unreachable", first


#: A driver's export event as Ray 2.60 writes it (`RAY_enable_export_api_write_config=EXPORT_DRIVER_JOB`,
#: one `ray job submit`; the entrypoint's path made neutral): the job id is base64 of its 4 bytes.
EXPORTED = (
    '{"event_data":{"config":{"metadata":{"job_name":"%(sub)s","job_submission_id":"%(sub)s"},'
    '"runtime_env_info":{"runtime_env_config":{"eager_install":true,"log_files":[],"setup_timeout_seconds":600},'
    '"serialized_runtime_env":"{\\"working_dir\\": \\"gcs://_ray_pkg_68d765cd6e4d9c64.zip\\"}",'
    '"uris":{"py_modules_uris":[],"working_dir_uri":"gcs://_ray_pkg_68d765cd6e4d9c64.zip"}}},'
    '"driver_ip_address":"192.0.2.2","driver_pid":"8852","end_time":"0",'
    '"entrypoint":"/home/user/.venv/bin/python j.py","is_dead":false,"job_id":"%(job)s",'
    '"start_time":"1795703612589"},"event_id":"0b99d5df892f9f7cc3c57b489710e7d977fc",'
    '"source_type":"EXPORT_DRIVER_JOB","timestamp":1795703612}\n'
)


def test_rays_export_event_of_a_driver_links_a_quiet_submission(tmp_path: Path) -> None:
    """A driver that names nothing of its job keeps its job id unknown, unless the cluster wrote Ray's
    own record of the driver (the export API, off by default): its job config names the submission."""
    import base64
    import shutil

    logs = tmp_path / "logs"
    shutil.copytree(LOGS, logs)
    quiet, bare = TRUTH["quiet_exit"], TRUTH["bare_exit"]
    (logs / "export_events").mkdir(exist_ok=True)
    job = base64.b64encode(bytes.fromhex(quiet["job_id"])).decode()
    lines = [
        EXPORTED % {"sub": quiet["submission_id"], "job": job},
        "not json\n",
        # Two job ids for one submission: neither is believed.
        EXPORTED % {"sub": bare["submission_id"], "job": base64.b64encode(bytes.fromhex("07000000")).decode()},
        EXPORTED % {"sub": bare["submission_id"], "job": base64.b64encode(bytes.fromhex("08000000")).decode()},
    ]
    (logs / "export_events" / "event_EXPORT_DRIVER_JOB.log").write_text("".join(lines))
    spans = {s.submission_id: s for s in session_jobs(logs) if s.submission_id}
    linked = spans[quiet["submission_id"]]
    assert (linked.job_id, linked.job_id_from) == (quiet["job_id"], FROM_EXPORT)
    assert spans[bare["submission_id"]].job_id_from == UNKNOWN
    # Its job id is no longer a section of its own; every other link is as the driver logs say.
    assert [s for s in session_jobs(logs) if s.job_id == quiet["job_id"] and s.submission_id is None] == []
    for name, truth in TRUTH.items():
        assert spans[truth["submission_id"]].job_id in (None, truth["job_id"]), name


def test_identity_reads_rays_other_ways_of_naming_a_job_and_a_supervisor() -> None:
    from rlfix.integrations.ray_owners import Ownership

    owners = Ownership({}, {}, frozenset({"01000000"}))
    env = b"(raylet) runtime_env_agent_client.cc:387: Failed to create runtime env for job 01000000, error message: x"
    assert owners.named(env) == ("job", "01000000")
    assert owners.named(b"(raylet) worker_pool.cc:811: Job 05000000 already started in worker pool.") == (
        "job",
        "05000000",
    )
    kill = b"Selected to kill: (Task: job ID=01000000, task name=_ray_internal_job_actor_raysubmit_R44Jz:JobSupervisor.__init__"
    assert owners.named(kill) == ("submission", "raysubmit_R44Jz")
    # A supervisor's kill is its submission's alone; a line naming only the dashboard's job is read by
    # time for a submission without a driver, and is another job's for one whose driver started.
    assert owners.identity(None, submission="raysubmit_R44Jz")(kill) is True
    assert owners.identity("02000000", submission="raysubmit_other")(kill) is False
    assert owners.identity(None, submission="raysubmit_bad", supervised=True)(env) is None
    assert owners.identity(None, submission="raysubmit_quiet")(env) is False
    assert owners.identity("02000000", submission="raysubmit_x")(env) is False
    # The node's section: a line naming a known submission's supervisor is that submission's.
    assert owners.identity(None, submissions=["raysubmit_R44Jz"])(kill) is False
    assert owners.identity(None, ["02000000"])(env) is None


def test_a_huge_line_is_read_in_bounded_pieces(tmp_path: Path) -> None:
    """A driver log holding one enormous line (no newline for megabytes) is still read line by line."""
    from rlfix.integrations.ray_logs import text_lines

    path = tmp_path / "job-driver-raysubmit_X.log"
    path.write_text(ENTRY + "\n" + "x" * 3_000_000 + "\n(a pid=101) after the huge line\n")
    lines = list(text_lines(path, limit=1000))
    assert [len(line) for line in lines] == [len(ENTRY) + 1, 1001, len("(a pid=101) after the huge line") + 1]
    assert driver_link(path, PIDS).job_id == "02000000"
