"""The culprit in a collective hang (issue 10, item 7): in text, JSON and HTML."""

from __future__ import annotations

import rlfix
from rlfix.details import CollectiveHang


def _watchdog(rank: int, op: str, seq: int) -> str:
    return (
        f"[rank{rank}]:[E602 11:29:52.1 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600066 "
        "milliseconds before timing out."
    )


def test_the_rank_in_another_collective_is_named() -> None:
    log = "\n".join([_watchdog(0, "ALLREDUCE", 89), _watchdog(1, "ALLREDUCE", 89), _watchdog(2, "BROADCAST", 88),
                     _watchdog(3, "ALLREDUCE", 89)]) + "\n"  # fmt: skip
    report = rlfix.diagnose(log)
    hang = report.get("nccl-timeout").details.hang  # type: ignore[union-attr]
    assert hang is not None and hang.culprits == (2,)
    said = "rank 2 is at BROADCAST #88 while ranks 0, 1, 3 wait in ALLREDUCE #89: look at rank 2"
    assert said in report.render("text")
    assert said in report.render("html")
    assert report.to_dict()["diagnoses"][0]["details"]["hang"]["culprits"] == [2]


def test_a_rank_that_never_reported_is_named_when_the_world_size_is_known() -> None:
    log = "world_size=4\n" + "\n".join(_watchdog(r, "ALLREDUCE", 7) for r in (0, 1, 3)) + "\n"
    hang = rlfix.diagnose(log).get("nccl-timeout").details.hang  # type: ignore[union-attr]
    assert hang is not None and hang.silent == (2,) and hang.culprits == (2,)
    assert "rank 2 never reported a timeout" in hang.describe()


def test_all_ranks_in_the_same_collective_say_the_cause_is_outside_it() -> None:
    hang = CollectiveHang("ALLREDUCE", 5, (0, 1))
    assert not hang.culprits and "outside it" in hang.describe()


def test_a_single_report_is_not_a_comparison() -> None:
    assert rlfix.diagnose(_watchdog(0, "ALLREDUCE", 7) + "\n").get("nccl-timeout").details.hang is None  # type: ignore[union-attr]
