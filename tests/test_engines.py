"""match/engines.py: every prefilter finds every anchor occurrence, the same on both engines."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlfix.match.engines import PythonPrefilter, available_engines, make_prefilter

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


# --- property tests: exact answers on random anchors and blocks ------------------------------

# A small alphabet, so anchors overlap, share pivots, repeat inside lines, and straddle the block
# end; digits and `\r` because the Python engine masks them; upper case for caseless anchors.
ALPHABET = b"aAbB01 \r\n:x"
needles = st.binary(min_size=1, max_size=5).map(lambda b: bytes(ALPHABET[c % len(ALPHABET)] for c in b))
anchor_sets = st.lists(st.tuples(needles, st.booleans()), min_size=1, max_size=12)
texts = st.binary(max_size=300).map(lambda b: bytes(ALPHABET[c % len(ALPHABET)] for c in b))


def _reference(anchors: list[tuple[bytes, bool]], block: bytes, end: int) -> list[tuple[int, int]]:
    """Every (end offset, index) occurrence in `block[:end]`, overlapping ones too."""
    hits = []
    for index, (anchor, caseless) in enumerate(anchors):
        hay = block[:end].lower() if caseless else block[:end]
        needle = anchor.lower() if caseless else anchor
        start = hay.find(needle)
        while start >= 0:
            hits.append((start + len(needle), index))
            start = hay.find(needle, start + 1)
    return sorted(hits)


def _python_scan(anchors: list[tuple[bytes, bool]], block: bytes, end: int, skip: frozenset[int] = frozenset()):
    prefilter = make_prefilter(anchors, "python", skip=skip)
    # The engine is given a buffer larger than `end` (as the matcher does): bytes past it never count.
    buffer = bytearray(block) + bytearray(b"aA0\n" * 4)
    return sorted(prefilter.scan(buffer, end))


@settings(max_examples=300, deadline=None)
@given(anchor_sets, texts, st.integers(min_value=0, max_value=300))
def test_python_engine_is_exact_on_random_blocks(anchors: list[tuple[bytes, bool]], block: bytes, cut: int) -> None:
    end = min(cut, len(block))
    assert _python_scan(anchors, block, end) == _reference(anchors, block, end)


@settings(max_examples=60, deadline=None)
@given(anchor_sets, st.lists(texts, min_size=1, max_size=6), st.lists(st.integers(0, 99), min_size=50, max_size=50))
def test_python_engine_is_exact_on_repetitive_blocks(
    anchors: list[tuple[bytes, bool]], pool: list[bytes], numbers: list[int]
) -> None:
    """Blocks big enough to be scanned by distinct masked lines: the same few lines with other numbers."""
    lines = [pool[k % len(pool)] + b" step %d\n" % n for k, n in enumerate(numbers)]
    block = b"".join(lines) * (PythonPrefilter.DEDUPE_MIN // max(len(b"".join(lines)), 1) + 1)
    end = len(block) - 3
    assert _python_scan(anchors, block, end) == _reference(anchors, block, end)


@settings(max_examples=100, deadline=None)
@given(anchor_sets, texts, st.sets(st.integers(0, 11)))
def test_skipped_anchors_are_never_reported(anchors: list[tuple[bytes, bool]], block: bytes, skip: set[int]) -> None:
    want = [hit for hit in _reference(anchors, block, len(block)) if hit[1] not in skip]
    assert _python_scan(anchors, block, len(block), frozenset(skip)) == want


def test_mostly_distinct_lines_are_scanned_as_they_are() -> None:
    """A block of distinct lines takes the direct scan, and the next blocks too; answers stay exact."""
    anchors = [(b"Error 4", False), (b"killed", True), (b"x\ny", False)]
    # Digits are masked, so lines differ by letters: the number written in letters a-j.
    words = [str(n).translate(str.maketrans("0123456789", "abcdefghij")).encode() for n in range(5000)]
    block = b"".join(b"line %s Error 4%d KILLED x\ny\n" % (w, n % 7) for n, w in enumerate(words))
    assert len(block) > PythonPrefilter.DEDUPE_MIN
    prefilter = PythonPrefilter(list(enumerate(anchors)))
    for _ in range(3):
        assert sorted(prefilter.scan(block, len(block))) == _reference(anchors, block, len(block))
        assert prefilter._wait > 0  # the distinct lines were too many: scanned directly


@pytest.mark.skipif("hyperscan" not in available_engines(), reason="needs Hyperscan")
@settings(max_examples=200, deadline=None)
@given(anchor_sets, texts)
def test_python_and_hyperscan_agree(anchors: list[tuple[bytes, bool]], block: bytes) -> None:
    python = set(make_prefilter(anchors, "python").scan(block, len(block)))
    assert python == set(make_prefilter(anchors, "hyperscan").scan(block, len(block)))
