"""match/engines.py: every prefilter finds every anchor occurrence, the same on both engines."""

from __future__ import annotations

import pytest

from rlfix.match.engines import available_engines, make_prefilter

ANCHORS = [(b"illegal memory", False), (b"killed", True), (b"NCCL", False), (b"xx", False)]
BLOCKS = [
    b"RuntimeError: CUDA error: an illegal memory access\n",
    b"Process was KILLED by signal\nNCCL WARN x\n",
    b"xxxx\n",
    b"",
    b"nothing here\n" * 50,
]


def _expected(block: bytes) -> list[tuple[int, int]]:
    hits = []
    for index, (anchor, caseless) in enumerate(ANCHORS):
        hay, needle = (block.lower(), anchor.lower()) if caseless else (block, anchor)
        start = hay.find(needle)
        while start >= 0:
            hits.append((start + len(needle), index))
            start = hay.find(needle, start + 1)
    return sorted(hits)


@pytest.mark.parametrize("engine", available_engines())
@pytest.mark.parametrize("block", BLOCKS)
def test_prefilter_reports_every_occurrence(engine: str, block: bytes) -> None:
    prefilter = make_prefilter(ANCHORS, engine)
    got = sorted(set(prefilter.scan(block, len(block))))
    want = sorted(set(_expected(block)))
    # An engine may report an anchor once per line instead of once per occurrence; every line
    # with an occurrence must be reported.
    lines = {block.rfind(b"\n", 0, end - 1) for end, _ in want}
    assert {block.rfind(b"\n", 0, end - 1) for end, _ in got} == lines
    assert {i for _, i in got} == {i for _, i in want}


def test_unknown_engine_is_a_usage_error() -> None:
    from rlfix.errors import UsageError

    with pytest.raises(UsageError):
        make_prefilter(ANCHORS, "nonsense")
