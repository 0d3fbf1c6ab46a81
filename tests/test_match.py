from __future__ import annotations

import io

import pytest

import rlfix.match.lines as lines_mod
import rlfix.match.matcher as match_mod
from rlfix.kb.load import KnowledgeBase
from rlfix.match.engines import available_engines
from rlfix.match.matcher import Hit, Matcher

ENGINES = available_engines()


def _scan(kb: KnowledgeBase, data: bytes, engine: str) -> list[tuple[str, int, str]]:
    matcher = Matcher.for_knowledge(kb, engine=engine)
    hits: list[Hit] = []
    matcher.scan_stream(io.BytesIO(data), "x.log", hits.append)
    return [(h.probe.owner, h.line.number, h.line.message) for h in hits]


@pytest.mark.parametrize("engine", ENGINES)
def test_line_numbers_survive_small_blocks(
    mini_kb: KnowledgeBase, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [f"step {i} loss 0.1" for i in range(500)]
    lines[123] = "RuntimeError: CUDA error: an illegal memory access was encountered"
    lines[377] = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
    data = ("\n".join(lines) + "\n").encode()
    monkeypatch.setattr(match_mod, "BLOCK_SIZE", 97)
    found = _scan(mini_kb, data, engine)
    assert ("t-illegal-access", 124, lines[123]) in found
    assert ("t-child-failed", 378, lines[377].strip()) in found


@pytest.mark.parametrize("engine", ENGINES)
def test_carriage_return_redraws_are_split(mini_kb: KnowledgeBase, engine: str) -> None:
    data = (
        b" 50%|##   | 5/10\r 60%|###  | 6/10\r[rank3]: RuntimeError: an illegal memory access was encountered\r 70%\n"
    )
    found = _scan(mini_kb, data, engine)
    assert found == [("t-illegal-access", 1, "RuntimeError: an illegal memory access was encountered")]


@pytest.mark.parametrize("engine", ENGINES)
def test_huge_line_without_newline_is_scanned_in_bounded_pieces(
    mini_kb: KnowledgeBase, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(match_mod, "BLOCK_SIZE", 64 * 1024)
    monkeypatch.setattr(match_mod, "MAX_LINE", 256 * 1024)
    data = b"x" * 3_000_000 + b" an illegal memory access was encountered " + b"y" * 1_000_000
    found = _scan(mini_kb, data, engine)
    assert [f[:2] for f in found] == [("t-illegal-access", 1)]
    assert len(found[0][2]) < 40_000


def test_engines_agree(mini_kb: KnowledgeBase) -> None:
    data = (
        b"ok\n[rank1]: an illegal memory access was encountered\nx device-side assert triggered\nValueError: bad\n" * 50
    )
    results = {engine: _scan(mini_kb, data, engine) for engine in ENGINES}
    first = next(iter(results.values()))
    assert len(first) == 150  # 3 matching lines x 50; the 'ok' lines never become candidates
    assert all(r == first for r in results.values())


def test_invalid_utf8_and_nul_bytes_do_not_break_matching(mini_kb: KnowledgeBase) -> None:
    data = b"\xff\xfe\x00garbage\n\x00\x00 an illegal memory access was encountered \xc3\x28\n"
    assert [f[:2] for f in _scan(mini_kb, data, "python")] == [("t-illegal-access", 2)]


@pytest.mark.parametrize("numpy", [False, True])
def test_block_lines_count_between_any_offsets(monkeypatch: pytest.MonkeyPatch, numpy: bool) -> None:
    """Marked once per block (numpy) or counted each time: the same counts, block after block,
    small blocks and the stretch before the first newline included."""
    if numpy:
        pytest.importorskip("numpy")
    else:
        monkeypatch.setattr(lines_mod, "_numpy", False)
    counter = lines_mod.BlockLines()
    small = b"x\n" * 10
    for block in (bytearray(b"no newline here " * 9000), bytearray(b"ab\n\ncd\r\n" * 30_000), small):
        end = len(block) - 3
        counter.start(block, end, fast=True)
        for start, stop in ((0, end), (0, 0), (5, 17), (1000, end), (end - 1, end), (7, 7)):
            assert counter.count(start, stop) == block.count(b"\n", start, stop), (start, stop)
    block = bytearray(b"\n" * (lines_mod.MARK_MIN * 2))
    counter.start(block, len(block), fast=True)
    assert counter.count(0, len(block)) == len(block)
    assert (counter._marks is not None) == numpy  # marked with numpy exactly when it is there


@pytest.mark.parametrize("fast", [False, True])
def test_line_numbers_between_far_apart_candidates(mini_kb: KnowledgeBase, fast: bool) -> None:
    """With `fast`, numpy counts the long stretches between two candidate lines; same numbers."""
    if fast:
        pytest.importorskip("numpy")
    lines = [f"step {i} loss 0.{i % 7}" for i in range(20_000)]
    wanted = {5: 0, 6: 1, 4_000: 0, 4_001: 0, 19_999: 1}  # line index -> which failure; some adjacent
    failures = [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    ]
    for index, which in wanted.items():
        lines[index] = failures[which]
    data = ("\n".join(lines) + "\n").encode()
    matcher = Matcher.for_knowledge(mini_kb)
    hits: list[Hit] = []
    matcher.scan_stream(io.BytesIO(data), "x.log", hits.append, fast=fast)
    assert sorted(h.line.number for h in hits) == [i + 1 for i in sorted(wanted)]
