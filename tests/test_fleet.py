"""`rlfix triage` and `rlfix.triage()`: many jobs, one table grouped by cause."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import re
from collections import Counter
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

import rlfix
from rlfix.errors import InputError, UsageError
from rlfix.fleet import Fleet
from rlfix.fleet.jobs import parse_since
from tests.conftest import FIXTURES, RunCli
from tests.ray_cluster import RayHead

ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered\n"


def _unknown(n: int) -> str:
    return f"step 5 loss 1.0\nFATAL: quux reactor {n} melted down\nexit code 3\n"


@pytest.fixture(scope="module")
def fixture_fleet() -> Fleet:
    return rlfix.triage(FIXTURES, jobs=2)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """A folder of jobs: two files and a job folder with the same root, two unknown failures that
    differ only in a number, one other unknown failure, a healthy job and a note (not a job)."""
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    (fleet / "a.log").write_text("2024-05-01 12:00:00 " + ILLEGAL)
    (fleet / "b.log").write_text("2024-05-03 08:30:00 " + ILLEGAL)
    folder = fleet / "c-job"
    folder.mkdir()
    (folder / "rank0.log").write_text("step 1\n")
    (folder / "rank1.log").write_text("[rank1]: " + ILLEGAL)
    (fleet / "u1.log").write_text(_unknown(17))
    (fleet / "u2.log").write_text(_unknown(42))
    (fleet / "u3.log").write_text("FATAL: the flux capacitor is gone\nexit code 4\n")
    (fleet / "ok.log").write_text("step 1 loss 2.0\nstep 2 loss 1.5\n")
    (fleet / "README.md").write_text(ILLEGAL)
    return fleet


def test_groups_by_cause_and_unknown_failures_by_template(small: Path) -> None:
    fleet = rlfix.triage(small, jobs=1)
    counts = {g.key: g.count for g in fleet.groups}
    assert counts == {
        "cuda-illegal-memory-access": 3,
        "unrecognized-failure: FATAL: quux reactor <N> melted down": 2,
        "unrecognized-failure: FATAL: the flux capacitor is gone": 1,
        "healthy": 1,
    }
    assert [g.count for g in fleet.groups] == sorted((g.count for g in fleet.groups), reverse=True)
    top = fleet.groups[0]
    assert top.example == str(small / "a.log") and top.evidence.endswith(ILLEGAL.strip())
    # Log timestamps where the log has them: a and b; c-job has none, so its file time counts.
    jobs = {Path(j.job).name: j for j in fleet.jobs}
    assert jobs["a.log"].seen_from == "log" and jobs["c-job"].seen_from == "mtime"
    assert top.first_seen == jobs["a.log"].seen
    assert "README.md" not in jobs and len(fleet.jobs) == 7 and fleet.failed == 6
    assert fleet.exit_code == 1


def test_since_keeps_recent_jobs(small: Path) -> None:
    cutoff = datetime(2024, 5, 2).astimezone(timezone.utc)
    old = (datetime.now() - timedelta(days=10)).timestamp()
    for name in ("u1.log", "u2.log", "u3.log", "ok.log"):
        os.utime(small / name, (old, old))
    fleet = rlfix.triage(small, since="2024-05-02", jobs=1)
    names = sorted(Path(j.job).name for j in fleet.jobs)
    # a.log failed on May 1st by its timestamp; b.log on May 3rd; the rest by file time (today or 10 days ago).
    assert names == ["b.log", "c-job", "ok.log", "u1.log", "u2.log", "u3.log"]
    assert fleet.filtered == 1 and fleet.since == cutoff.strftime("%Y-%m-%dT%H:%M:%SZ")
    recent = rlfix.triage(small, since="3d", jobs=1)
    assert sorted(Path(j.job).name for j in recent.jobs) == ["c-job"]
    assert recent.filtered == 6


def test_since_parsing() -> None:
    now = datetime(2024, 5, 10, 12, tzinfo=timezone.utc)
    assert parse_since("2h", now) == now - timedelta(hours=2)
    assert parse_since("3d", now) == now - timedelta(days=3)
    assert parse_since("2024-05-01T12:00Z") == datetime(2024, 5, 1, 12, tzinfo=timezone.utc)
    assert parse_since("2024-05-01 12:00:00+02:00") == datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
    for bad in ("yesterday", "2h ago", "2024-13-01"):
        with pytest.raises(UsageError):
            parse_since(bad)


def test_bad_input_is_one_error(tmp_path: Path, run_cli: RunCli) -> None:
    with pytest.raises(InputError):
        rlfix.triage(tmp_path / "missing")
    with pytest.raises(InputError):
        rlfix.triage(str(tmp_path / "*.log"))
    with pytest.raises(UsageError):
        rlfix.triage(tmp_path, jobs=0)
    for args in (["--since", "soon"], ["-j", "0"], ["-f", "pdf"]):
        proc = run_cli(["triage", str(tmp_path), *args])
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, args


def test_fleet_object(small: Path) -> None:
    fleet = rlfix.triage([str(small / "a.log"), str(small / "ok.log")], jobs=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fleet.jobs = ()  # type: ignore[misc]
    assert repr(fleet) == "<Fleet 2 jobs, 1 failed: cuda-illegal-memory-access=1, healthy=1>"
    assert '<table class="groups">' in fleet._repr_html_() and "<html" not in fleet._repr_html_()
    data = json.loads(fleet.to_json())
    assert data == fleet.to_dict() and data["jobs_total"] == 2 and data["jobs_failed"] == 1
    assert [j["cause"] for j in data["jobs"]] == ["cuda-illegal-memory-access", "healthy"]


def test_a_ray_session_folder_is_one_job(tmp_path: Path) -> None:
    session = tmp_path / "ray" / "session_2024-05-01_12-00-00_000000_1"
    logs = session / "logs"
    logs.mkdir(parents=True)
    (logs / "raylet.out").write_text("[2024-05-01 12:00:00,000 I 1 1] raylet started\n")
    (logs / "worker-0123abcd-01000000-4242.err").write_text(ILLEGAL)
    (tmp_path / "ray" / "session_latest").symlink_to(session)
    for target in (session, tmp_path / "ray"):
        fleet = rlfix.triage(target, jobs=1)
        assert [(Path(j.job).name, j.cause) for j in fleet.jobs] == [(session.name, "cuda-illegal-memory-access")]


def test_fixture_corpus_every_job_as_labelled(fixture_fleet: Fleet) -> None:
    labels = yaml.safe_load((FIXTURES / "labels.yaml").read_text())["cases"]
    accepted = {c["file"]: {c["expect"] or "healthy", *(c.get("also") or ())} for c in labels}
    causes = {Path(j.job).name: j.cause for j in fixture_fleet.jobs}
    assert set(causes) == set(accepted)
    wrong = {f: c for f, c in causes.items() if c not in accepted[f]}
    assert not wrong
    assert {g.cause: g.count for g in fixture_fleet.groups if g.template is None} == dict(
        Counter(c for c in causes.values() if c != "unrecognized-failure")
    )


def test_json_groups_match_per_log_diagnoses(fixture_fleet: Fleet) -> None:
    data = json.loads(fixture_fleet.render("json"))
    assert len(data["jobs"]) == len(list(FIXTURES.glob("*.log")))
    for job in data["jobs"]:
        report = rlfix.diagnose(job["job"])
        assert job["ids"] == report.ids, job["job"]
        assert job["cause"] == (report.top.id if report.top else "healthy")
    by_group = Counter(j["group"] for j in data["jobs"])
    assert {g["group"]: g["count"] for g in data["groups"]} == dict(by_group)
    for group in data["groups"]:
        example = next(j for j in data["jobs"] if j["group"] == group["group"])
        assert group["example"] == {"job": example["job"], "evidence": example["evidence"]["text"]}


def test_jobs_1_and_2_print_the_same(run_cli: RunCli) -> None:
    outputs = [run_cli(["triage", str(FIXTURES), "-j", n, "-f", "json"]) for n in ("1", "2")]
    assert outputs[0].returncode == outputs[1].returncode == 1
    assert outputs[0].stdout == outputs[1].stdout
    assert json.loads(outputs[0].stdout)["jobs_total"] == len(list(FIXTURES.glob("*.log")))


def test_cli_text_shows_every_id_with_its_count(run_cli: RunCli, fixture_fleet: Fleet) -> None:
    proc = run_cli(["triage", str(FIXTURES), "-j", "2"])
    assert proc.returncode == 1 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"rlfix triage: {len(fixture_fleet.jobs)} jobs")
    assert lines[-1].startswith("by action: fix-config ")
    header = lines[2]
    assert header.split()[:4] == ["cause", "action", "owner", "jobs"]
    evidence_at = header.index("evidence")
    for group in fixture_fleet.groups:
        row = next(line for line in lines[3:] if line.startswith(group.key[:60]))
        assert re.search(rf"\s{group.count}\s", row[:evidence_at]), row


def test_exit_status(run_cli: RunCli, small: Path) -> None:
    assert run_cli(["triage", str(small / "ok.log")]).returncode == 0
    assert run_cli(["triage", str(small / "a.log")]).returncode == 1
    missing = run_cli(["triage", str(small / "nope.log")])
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr
    assert run_cli(["triage"]).returncode == 2


def test_markdown_is_a_table_with_inert_cells(tmp_path: Path) -> None:
    (tmp_path / "evil.log").write_text("FATAL: a | b `x` <img src=x> [link](http://e.vil) @team\nexit code 3\n")
    text = rlfix.triage(tmp_path, jobs=1).render("markdown")
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert len(rows) == 3
    # Every row has exactly the columns of the header: no unescaped pipe splits a cell.
    assert {len(re.findall(r"(?<!\\)\|", row)) for row in rows} == {10}
    # Log text only ever stands inside code spans, where Markdown renders no HTML, link or mention.
    outside = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)
    assert "<img" not in outside and "](http" not in outside and "@team" not in outside


class _Balance(HTMLParser):
    VOID = frozenset({"meta", "br", "rect", "img", "input", "link"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        pass

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.problems.append(tag)


def test_html_is_well_formed_self_contained_and_escaped(tmp_path: Path) -> None:
    (tmp_path / "x.log").write_text('FATAL: <script>alert(1)</script> "q" & <b>\nexit code 3\n')
    (tmp_path / "y.log").write_text(ILLEGAL)
    page = rlfix.triage(tmp_path, jobs=1).render("html")
    checker = _Balance()
    checker.feed(page)
    checker.close()
    assert not checker.problems and not checker.stack
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"script-src &#x27;sha256-{digest}&#x27;" in page
    assert page.count('<g class="bar"') == 2 and page.count("<tr data-cause=") == 2


@pytest.mark.ray
def test_ray_tasks_give_the_same_table(ray_head: RayHead, run_cli: RunCli) -> None:
    # A slice of the corpus (a few batches): the table must be the one a local scan prints.
    pattern = str(FIXTURES / "[c-h]*.log")
    env = {**ray_head.env, "RAY_ADDRESS": ray_head.gcs_address}
    over_ray = run_cli(["triage", pattern, "--ray", "--address", ray_head.gcs_address, "-f", "json"], env=env)
    local = run_cli(["triage", pattern, "-j", "1", "-f", "json"])
    assert over_ray.returncode == local.returncode == 1, over_ray.stderr[-2000:]
    assert json.loads(over_ray.stdout) == json.loads(local.stdout)
    assert json.loads(local.stdout)["jobs_total"] > 8  # more than one Ray task's batch
