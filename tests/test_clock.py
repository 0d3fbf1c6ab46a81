"""rlfix.clock: every timestamp shape rlfix peels, read from real lines of the fixtures, on one clock."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlfix.clock import (
    BOOT,
    LOCAL,
    UTC,
    YEARLESS,
    Moment,
    difference,
    epoch,
    parse,
    to_datetime,
    wall,
    with_year,
)
from rlfix.kb.load import load_knowledge
from rlfix.match.normalize import normalize
from rlfix.model import Evidence
from rlfix.observe.tally import MAX_SAMPLES, Tally

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "fixtures" / "logs"
BLIND = ROOT / "fixtures" / "blind"


def _real(path: Path, needle: str) -> str:
    """The first line of a fixture that contains `needle` (so the test reads what the software wrote)."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if needle in line:
            return line
    raise AssertionError(f"{needle!r} is not in {path}")


# (fixture, a piece of the line, clock, the wall time it names; year 2000 when it has none)
REAL_LINES = [
    # Ray's Python logging (driver): `2026-11-22 00:57:52,958\tINFO worker.py:2038 -- ...`
    (LOGS / "ray-actor-died--sigkill-mid-task.log", "Started a local Ray instance", LOCAL, "2026-11-22 00:57:52.958"),
    # Ray's C++ logging (raylet.out): `[2026-11-22 01:10:26,546 I 30021 30021] (raylet) ...`
    (LOGS / "ray-oom-killer--raylet-out.log", "Killing 1 worker(s)", LOCAL, "2026-11-22 01:10:26.546"),
    # Ray's log monitor forwarding a raylet line to the driver: `(raylet) [2025-03-28 04:02:17,904 E ...]`
    (LOGS / "ray-oom-killer--simplerl-verl.log", "killed due to memory pressure", LOCAL, "2025-03-28 04:02:17.904"),
    # DeepSpeed: `[2026-11-22 01:05:33,766] [ERROR] [launch.py:259:sigkill_handler] ...`
    (LOGS / "host-oom-sigkill--deepspeed-launcher-cgroup.log", "return code = -9", LOCAL, "2026-11-22 01:05:33.766"),
    # Python logging with a logger name (torch.distributed.elastic, old torchrun)
    (LOGS / "gpu-hardware-fault--ecc-buried.log", "failed (exitcode: -6)", LOCAL, "2024-05-03 04:41:20.118"),
    # glog from torchrun: `E1122 01:04:53.015000 21530 torch/.../api.py:1002] failed (exitcode: -9) ...`
    (
        LOGS / "host-oom-sigkill--torchrun-cgroup-rank1.log",
        "failed (exitcode: -9)",
        YEARLESS,
        "2000-11-22 01:04:53.015",
    ),
    # glog from ProcessGroupNCCL, unpadded month and nanoseconds: `[rank0]:[E304 16:41:49.012233412 ...]`
    (
        LOGS / "sampling-invalid-probabilities--accelerate-buried.log",
        "Watchdog caught collective operation timeout",
        YEARLESS,
        "2000-03-04 16:41:49.012233",
    ),
    # vLLM: `(EngineCore_DP0 pid=2381) ERROR 08-14 10:21:33 [core.py:1586] ...`
    (
        LOGS / "vllm-engine-dead--engine-core-fatal.log",
        "EngineCore encountered a fatal error",
        YEARLESS,
        "2000-08-14 10:21:33",
    ),
    # vLLM behind a Ray actor prefix
    (
        BLIND / "wave2" / "b048-vllm-qwen3-235b-nccl-cuda-oom-worker-died.log",
        "died unexpectedly",
        YEARLESS,
        "2000-05-21 09:27:46",
    ),
    # dmesg -T: `[Tue Mar 12 10:00:07 2024] ray::ActorModelR invoked oom-killer: ...`
    (LOGS / "host-oom-sigkill--openrlhf-save.log", "invoked oom-killer", LOCAL, "2024-03-12 10:00:07"),
]


@pytest.mark.parametrize(("path", "needle", "clock", "when"), REAL_LINES, ids=lambda v: getattr(v, "name", None))
def test_real_stamps_parse_on_their_clock(path: Path, needle: str, clock: str, when: str) -> None:
    line = normalize(_real(path, needle), source=path.name)
    moment = parse(line.timestamp, line.source)
    assert moment is not None, line.timestamp
    assert moment.clock == clock
    assert wall(moment) == datetime.fromisoformat(when)
    # Stamps that only mean something within their input say which input.
    assert moment.scope == (path.name if clock == YEARLESS else "")


def test_dmesg_seconds_since_boot() -> None:
    text = _real(LOGS / "host-oom-sigkill--cgroup-bash-dmesg.log", "invoked oom-killer")
    assert text.startswith("[  893.260703] ")
    line = normalize(text, source="dmesg.txt")
    moment = parse(line.timestamp, line.source)
    assert moment == Moment(893.260703, BOOT, "dmesg.txt")
    assert wall(moment) is None and to_datetime(moment) is None


def test_iso_8601_without_and_with_zone() -> None:
    # Slurm writes ISO 8601 without a zone in the middle of its line (not a prefix: parsed as given).
    slurm = _real(LOGS / "job-cancelled-by-scheduler--slurm-time-limit.log", "CANCELLED AT")
    stamp = slurm.split("CANCELLED AT ")[1].split()[0]
    assert parse(stamp) == parse("2026-08-14 10:21:33")
    assert parse(stamp) is not None and parse(stamp).clock == LOCAL  # type: ignore[union-attr]
    # `kubectl logs --timestamps` puts the kubelet's RFC 3339 time (UTC, nanoseconds) before each
    # line; Docker's `--timestamps` may write an offset. Zoned stamps are converted to UTC.
    ray = _real(LOGS / "ray-actor-died--sigkill-mid-task.log", "Started a local Ray instance")
    line = normalize("2026-11-22T00:57:52.958123456Z " + ray, source="pod.log")
    assert line.timestamp == "2026-11-22T00:57:52.958123456Z"
    utc = parse(line.timestamp)
    assert utc is not None and utc.clock == UTC
    assert to_datetime(utc) == datetime(2026, 11, 22, 0, 57, 52, 958123, tzinfo=timezone.utc)
    offset = parse("2026-11-22T02:57:52.958123456+02:00")
    assert offset is not None and difference(utc, offset) == pytest.approx(0.0, abs=1e-6)
    assert parse("2026-11-22T00:57:52+0000") == Moment(utc.seconds - 0.958123456, UTC)


def test_a_year_from_the_nearest_dated_stamp() -> None:
    glog = parse("1122 01:04:53.015000", "torchrun.log")
    raylet = parse("2026-11-22 01:10:26,229")
    assert glog is not None and raylet is not None
    dated = with_year(glog, raylet)
    assert dated.clock == LOCAL and wall(dated) == datetime(2026, 11, 22, 1, 4, 53, 15000)
    assert difference(dated, raylet) == pytest.approx(333.214)
    # A job that ran over New Year: late December next to early January is the year before.
    december = parse("12-31 23:59:58", "vllm.log")
    assert december is not None
    assert wall(with_year(december, parse("2025-01-01 00:00:03") or raylet)) == datetime(2024, 12, 31, 23, 59, 58)
    # 29 February takes the nearest year that has one.
    leap = parse("0229 12:00:00.000000", "a.log")
    assert leap is not None
    assert wall(with_year(leap, parse("2025-03-01 00:00:00") or raylet)) == datetime(2024, 2, 29, 12)
    # Only yearless moments take a year, and only from an absolute one.
    assert with_year(raylet, raylet) is raylet
    assert with_year(glog, Moment(5.0, BOOT, "dmesg")) is glog


def test_which_moments_compare() -> None:
    a = parse("2026-11-22 01:05:33,766")
    b = parse("2026-11-22 01:10:26,229")
    assert difference(a, b) == pytest.approx(292.463)
    assert difference(b, a) == pytest.approx(-292.463)
    # Seconds since boot and yearless stamps compare only within their own input.
    assert difference(parse("893.260703", "x"), parse("893.260973", "x")) == pytest.approx(0.00027)
    assert difference(parse("893.260703", "x"), parse("893.260973", "y")) is None
    assert difference(parse("08-14 10:21:33", "x"), parse("08-14 10:21:34", "x")) == 1.0
    assert difference(parse("08-14 10:21:33", "x"), parse("08-14 10:21:34", "y")) is None
    assert difference(parse("893.260703", "x"), a) is None
    assert difference(parse("08-14 10:21:33", "x"), a) is None
    assert difference(None, a) is None and difference(a, None) is None


def test_epoch_seconds_of_absolute_moments() -> None:
    # With a zone: UTC. Without: this machine's local time, as `datetime.timestamp()` reads it.
    assert epoch(parse("2026-11-23T18:43:08.104+02:00")) == pytest.approx(
        datetime(2026, 11, 23, 16, 43, 8, 104000, tzinfo=timezone.utc).timestamp()
    )
    assert epoch(parse("2026-11-23 18:43:08,104")) == pytest.approx(
        datetime(2026, 11, 23, 18, 43, 8, 104000).timestamp()
    )
    assert epoch(parse("893.260703", "x")) is None and epoch(parse("08-14 10:21:33", "x")) is None
    assert epoch(None) is None


@pytest.mark.parametrize(
    "junk",
    ["", " ", "[]", "2024-13-45 00:00:00", "2024-02-30 10:00:00", "1332 10:00:00.1", "99-99 99:99:99",
     "Mon Foo  1 12:00:03 2024", "2024-05-01 25:00:00", "9" * 200, "2024-05-01T10:00:00+99:99",
     "12345678901.1", "step 12 loss 0.3", "\x00\x1b[31m", "２０２４-05-01 12:00:00"],
)  # fmt: skip
def test_junk_is_no_time(junk: str) -> None:
    assert parse(junk, "x") is None


STAMP_ALPHABET = "0123456789-:., TZ+[]IWEFMonTueMarMay\t"


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=80), st.text(alphabet=STAMP_ALPHABET, max_size=40)), st.text(max_size=10))
def test_parsing_never_raises(text: str, scope: str) -> None:
    moment = parse(text, scope)
    if moment is None:
        return
    assert math.isfinite(moment.seconds)
    assert moment.clock in (UTC, LOCAL, YEARLESS, BOOT)
    # Whatever parsed can be compared, dated, shown and converted without an exception.
    near = parse("2026-11-22 01:10:26,229")
    assert near is not None
    difference(moment, near)
    difference(with_year(moment, near), near)
    wall(moment)
    to_datetime(moment)


@given(st.integers(min_value=1, max_value=9999), st.integers(1, 12), st.integers(1, 28), st.integers(0, 23))
def test_dated_stamps_round_trip(year: int, month: int, day: int, hour: int) -> None:
    moment = parse(f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:07:09,250")
    assert moment is not None and wall(moment) == datetime(year, month, day, hour, 7, 9, 250000)


def test_every_peeled_stamp_of_the_fixtures_parses() -> None:
    """Every timestamp normalize peels off a fixture line is one the clock reads (no shape left out)."""
    unread: list[str] = []
    for path in sorted([*LOGS.glob("*.log"), *BLIND.glob("*/*.log")]):
        for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
            stamp = normalize(text, source=path.name).timestamp
            if stamp is not None and parse(stamp, path.name) is None:
                unread.append(f"{path.name}: {stamp!r}")
    assert not unread, unread[:10]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=STAMP_ALPHABET + "()=rankpid", max_size=60), st.text(max_size=40))
def test_any_peeled_prefix_parses_or_is_no_time(prefix: str, rest: str) -> None:
    line = normalize(prefix + " " + rest, source="x.log")
    moment = parse(line.timestamp, line.source)
    assert moment is None or math.isfinite(moment.seconds)


def test_a_finding_keeps_its_earliest_line_first_and_stays_bounded() -> None:
    sig = load_knowledge().get("ray-oom-killer")
    assert sig is not None
    raylet = LOGS / "ray-oom-killer--raylet-out.log"
    lines = [normalize(t, source="a/raylet.out") for t in raylet.read_text(encoding="utf-8").splitlines()[:9]]

    def evidence(i: int, source: str, order: int) -> Evidence:
        line = lines[i]
        return Evidence(source, line.number, line.text, line.message, order=order, time=parse(line.timestamp, source))

    tally = Tally(sig)
    # Five different lines of one raylet.out (the later ones), then the same file of another node,
    # read after it: its first line is earlier by the clock and becomes the finding's first line.
    for order, i in enumerate((3, 4, 5, 6, 7), 1):
        tally.add(evidence(i, "a/raylet.out", order))
    assert len(tally.samples) == MAX_SAMPLES
    tally.add(evidence(0, "b/raylet.out", 10))
    assert (tally.first.source, tally.first.order) == ("b/raylet.out", 10)
    assert len(tally.samples) == MAX_SAMPLES and tally.count == 6
    # A line of that same input later in the file does not move ahead: file order within an input.
    tally.add(evidence(1, "b/raylet.out", 11))
    assert tally.first.order == 10
