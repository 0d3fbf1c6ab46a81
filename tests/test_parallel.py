"""`--jobs N`: regular files prefiltered in worker processes give the report of a serial run."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest

import rlfix.match.parallel as parallel
import rlfix.match.ranges as ranges
from rlfix.api import diagnose
from rlfix.core import Triage
from rlfix.match.engines import available_engines
from rlfix.match.ranges import cut
from tests.conftest import FIXTURES, ROOT, rlfix_executable
from tests.test_scan_cost import _runs_of_the_same_warning

BLIND = ROOT / "fixtures" / "blind"


@pytest.fixture
def tiny_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers from the first byte, and ranges of a few KiB, so every fixture is cut in pieces."""
    monkeypatch.setattr(parallel, "PARALLEL_AFTER", 0)
    monkeypatch.setattr(ranges, "RANGE_BYTES", 3000)
    monkeypatch.setattr(ranges, "BATCH_FILES", 7)


def _logs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".log", ".txt", ".out", ".err"))


@pytest.mark.parametrize("engine", available_engines())
@pytest.mark.parametrize("folder", [FIXTURES, BLIND / "wave1", BLIND / "wave2"], ids=["fixtures", "wave1", "wave2"])
def test_every_fixture_gives_the_same_json_with_two_processes(engine: str, folder: Path, tiny_ranges: None) -> None:
    logs = _logs(folder)
    assert len(logs) > 20
    serial = diagnose(logs, engine=engine, jobs=1, strict=False).to_dict()
    split = diagnose(logs, engine=engine, jobs=2, strict=False).to_dict()
    assert split == serial


def test_each_largest_fixture_alone_is_the_same_in_pieces(tiny_ranges: None) -> None:
    # One input at a time: its head window, lookback and ending are judged within the file.
    largest = sorted(_logs(FIXTURES) + _logs(BLIND), key=lambda p: p.stat().st_size)[-12:]
    for log in largest:
        assert len(cut(str(log), 0, log.stat().st_size)) > 2, log
        assert diagnose(log, jobs=2).to_dict() == diagnose(log, jobs=1).to_dict(), log


def test_pieces_end_at_line_ends_and_cover_the_file(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_bytes(b"".join(b"line %d %s\n" % (i, b"x" * (i % 97)) for i in range(3000)) + b"no newline at end")
    data = log.read_bytes()
    pieces = cut(str(log), 0, len(data), target=4096)
    assert pieces[0].start == 0 and pieces[-1].stop == len(data)
    for left, right in itertools.pairwise(pieces):
        assert left.stop == right.start and data[left.stop - 1 : left.stop] == b"\n"


def test_a_line_longer_than_a_range_stays_whole(tmp_path: Path) -> None:
    log = tmp_path / "long.log"
    log.write_bytes(b"start\n" + b"y" * 20_000 + b" RuntimeError: CUDA error: an illegal memory access\nend\n")
    pieces = cut(str(log), 0, log.stat().st_size, target=1000)
    assert len(pieces) == 2
    assert diagnose(log, jobs=2).to_dict() == diagnose(log, jobs=1).to_dict()


def _big_log(path: Path, megabytes: int) -> None:
    """A healthy job's chatter with a root cause in the middle and its symptoms near the end."""
    chatter = b"".join(
        b"(WorkerDict pid=%d, ip=10.0.0.%d) INFO 03-14 10:%02d:11 metrics.py:412] Avg prompt throughput: "
        b"%d.1 tokens/s, Running: %d reqs, GPU KV cache usage: %d.0%%\n"
        % (4000 + i % 8, i % 4, i % 60, i, i % 64, i % 90)
        for i in range(2000)
    )
    with path.open("wb") as fh:
        for block in range(megabytes * 1024 * 1024 // len(chatter)):
            fh.write(chatter)
            if block == 150:
                fh.write(
                    b"(WorkerDict pid=4002, ip=10.0.0.2) RuntimeError: CUDA error: an illegal memory access was encountered\n"
                )
        fh.write(b"torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n")


def test_cli_jobs_2_on_a_large_log_prints_the_serial_json(tmp_path: Path) -> None:
    # Large enough that worker processes start (64 MiB) and the file is cut in several ranges.
    log = tmp_path / "big.log"
    _big_log(log, 80)
    outputs = []
    for jobs in ("1", "2"):
        proc = subprocess.run(
            [*rlfix_executable(), "diagnose", str(log), "-f", "json", "--jobs", jobs, "--stats"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 1, proc.stderr
        stats = json.loads(proc.stderr.split("rlfix: stats ", 1)[1].splitlines()[0])
        assert stats["bytes"] == log.stat().st_size and stats["lines"] > 500_000
        outputs.append(json.loads(proc.stdout))
    assert outputs[0] == outputs[1]
    assert outputs[0]["top"] == "cuda-illegal-memory-access"


def test_stdin_and_gzip_are_read_in_order_among_files(tmp_path: Path, tiny_ranges: None) -> None:
    import gzip

    plain = sorted(FIXTURES.glob("*.log"))[:6]
    packed = tmp_path / "packed.log.gz"
    packed.write_bytes(gzip.compress(plain[0].read_bytes()))
    inputs = [*plain[1:3], packed, *plain[3:]]
    assert diagnose(inputs, jobs=2).to_dict() == diagnose(inputs, jobs=1).to_dict()


def test_runs_of_one_warning_counted_at_once_give_the_serial_report(tmp_path: Path) -> None:
    # Workers mark runs of the same line (digits aside); this process counts the rest of a run at
    # once after its first line is counted. Ranges of 64 KiB: runs end at piece ends too.
    logs = []
    for n, text in enumerate(_runs_of_the_same_warning()):
        logs.append(tmp_path / f"driver-{n}.log")
        logs[-1].write_text(text * 8)
    pieces = cut(str(logs[1]), 0, logs[1].stat().st_size, target=64 * 1024)
    matcher = Triage().matcher
    scans = [ranges.scan_piece(matcher, p, frozenset()) for p in pieces]
    runs = [c.same for s in scans for c in s.candidates if c.same]
    assert len(pieces) > 3 and len(runs) >= len(pieces) and sum(runs) > 6000
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parallel, "PARALLEL_AFTER", 0)
        patch.setattr(ranges, "RANGE_BYTES", 64 * 1024)
        split = diagnose(logs, jobs=2).to_dict()
    assert split == diagnose(logs, jobs=1).to_dict()
    unschedulable = next(d for d in split["diagnoses"] if d["id"] == "ray-unschedulable")
    assert unschedulable["count"] == 8 * (452 + 900)


def test_a_pieces_candidates_survive_pickling_as_they_were_found(tmp_path: Path) -> None:
    """The compact `Candidates` a worker sends: each line's place, bytes and hits as found, runs
    marked on their first line, the members of a run sharing its hits; indexing and slicing."""
    import pickle

    from rlfix.match.matcher import scan_buffers

    log = tmp_path / "driver.log"
    log.write_text(_runs_of_the_same_warning()[1] * 2)
    matcher = Triage().matcher
    piece = cut(str(log), 0, log.stat().st_size)[0]
    plain: list[tuple[bytes, list[tuple[int, int]], int, int]] = []
    with log.open("rb") as stream:
        collect = lambda d, h, n, p: plain.append((d, h, n, p))  # noqa: E731
        matcher.scan_stream(stream, "", None, first_line=0, collect=collect, buffers=scan_buffers())
    found = pickle.loads(pickle.dumps(ranges.scan_piece(matcher, piece, frozenset()).candidates))
    assert len(found) == len(plain) > 1000
    assert [(c.data, c.hits, c.nth, c.position) for c in found] == plain
    assert found[-1] == found[len(found) - 1] and list(found[3:9]) == [found[i] for i in range(3, 9)]
    runs = [(i, c.same) for i, c in enumerate(found) if c.same]
    assert runs and all(
        matcher.repeat_key(found[i + k].data, found[i + k].hits) == matcher.repeat_key(found[i].data, found[i].hits)
        for i, same in runs
        for k in range(same + 1)
    )
    for outside in (len(found), -len(found) - 1):
        with pytest.raises(IndexError):
            found[outside]


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_each_start_method_gives_the_serial_report_for_a_scan_and_a_triage(
    method: str, monkeypatch: pytest.MonkeyPatch, tiny_ranges: None
) -> None:
    """The pools pickle what workers need, so forkserver (3.14's default) and spawn work like fork."""
    import multiprocessing

    from rlfix.fleet.gather import triage
    from rlfix.process_pool import start_method

    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"{method} is not available on this platform")
    monkeypatch.setenv("RLFIX_START_METHOD", method)
    assert start_method() == method
    logs = _logs(FIXTURES)[:12]
    assert diagnose(logs, jobs=2, strict=False).to_dict() == diagnose(logs, jobs=1, strict=False).to_dict()
    assert triage(logs, jobs=2).to_dict() == triage(logs, jobs=1).to_dict()


def test_the_start_method_is_chosen_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    from rlfix import process_pool
    from rlfix.errors import UsageError
    from rlfix.process_pool import start_method

    monkeypatch.delenv("RLFIX_START_METHOD", raising=False)
    monkeypatch.setattr(process_pool, "_preferred", None)
    expected = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    assert start_method() == expected  # the library's default, whatever the interpreter's is
    if "fork" in multiprocessing.get_all_start_methods():
        process_pool.prefer("fork")  # what the rlfix command prefers
        assert start_method() == "fork"
    monkeypatch.setenv("RLFIX_START_METHOD", "threads")
    with pytest.raises(UsageError, match="RLFIX_START_METHOD='threads'"):
        start_method()
