"""Rewrite tests/golden/: the JSON report of every fixture log, as the JSON contract pins it.

Run after a change that is meant to change diagnoses (a new signature, a ranking rule), then read
`git diff tests/golden` before committing: every changed line is a user-visible change.

    python scripts/update_golden.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rlfix  # noqa: E402

FIXTURES = ROOT / "fixtures" / "logs"
GOLDEN = ROOT / "tests" / "golden"
#: Chinese text reports of a few fixtures (issue 15): a seed case, a cascade, a buried one, a healthy one.
GOLDEN_ZH = ROOT / "tests" / "golden_zh"
ZH_FIXTURES = (
    "cuda-device-side-assert--bare-generate.log",
    "cuda-oom--verl-fsdp-update.log",
    "cuda-illegal-memory-access--nccl-cascade.log",
    "host-oom-sigkill--openrlhf-save.log",
    "healthy--nccl-info.log",
)


def golden_json(log: Path) -> str:
    """The report of `log` as JSON, with what differs between machines (engine, version) blanked."""
    # Named relative to the checkout, so no golden holds the path of the machine that wrote it.
    triage = rlfix.Triage()
    with log.open("rb") as stream:
        triage.feed_stream(stream, log.relative_to(ROOT).as_posix())
    doc = triage.report().to_dict()
    doc["tool"] = {"name": "rlfix", "version": "*", "engine": "*"}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def golden_zh(log: Path) -> str:
    """The text report of `log` in Chinese, as a terminal without colour shows it (rlfix's version,
    which differs between releases, written as `rlfix *`)."""
    triage = rlfix.Triage()
    with log.open("rb") as stream:
        triage.feed_stream(stream, log.relative_to(ROOT).as_posix())
    text = triage.report().render("text", lang="zh", color=False)
    return text.replace(f"\nrlfix {rlfix.__version__}\n", "\nrlfix *\n")


def write_zh() -> None:
    GOLDEN_ZH.mkdir(exist_ok=True)
    for name in ZH_FIXTURES:
        (GOLDEN_ZH / (name + ".txt")).write_text(golden_zh(FIXTURES / name), encoding="utf-8")
    print(f"wrote {len(ZH_FIXTURES)} Chinese reports to {GOLDEN_ZH.relative_to(ROOT)}")


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    wanted = set()
    for log in sorted(FIXTURES.glob("*.log")):
        name = log.name + ".json"
        wanted.add(name)
        (GOLDEN / name).write_text(golden_json(log), encoding="utf-8")
    for stale in GOLDEN.glob("*.json"):
        if stale.name not in wanted:
            stale.unlink()
    print(f"wrote {len(wanted)} golden reports to {GOLDEN.relative_to(ROOT)}")
    write_zh()


if __name__ == "__main__":
    main()
