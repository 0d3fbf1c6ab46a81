"""Score catalogue projects ONCE, before any pattern is written for their messages.

    python scripts/record_catalogue_first_pass.py            # every project not yet recorded
    python scripts/record_catalogue_first_pass.py vllm nccl  # just these

Each project's first pass is what the knowledge base (exact patterns, concepts, structural rules)
said of its messages while it had learnt nothing from them: leave-one-project-out. The counts and
the misses go into fixtures/messages/first_pass.yaml with the commit they ran on; a project already
recorded is never scored again (the script refuses), and rlfix/ and knowledge/ must be committed,
so that the commit named is the code that ran.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rlfix.tools.messages import FIRST_PASS, ProjectScore, load_messages, score  # noqa: E402

CATALOGUE = ROOT / "fixtures" / "messages"
RECORD = CATALOGUE / FIRST_PASS


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def main(asked: list[str]) -> None:
    if _git("status", "--porcelain", "--", "rlfix", "knowledge"):
        sys.exit("rlfix/ or knowledge/ has uncommitted changes: commit first, so the record names the code that ran")
    record = yaml.safe_load(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else {"projects": {}}
    messages = load_messages(CATALOGUE)
    projects = sorted({m.project for m in messages})
    todo = asked or [p for p in projects if p not in record["projects"]]
    for project in todo:
        if project in record["projects"]:
            sys.exit(f"{project} was scored on {record['projects'][project]['date']}: a first pass happens once")
        if project not in projects:
            sys.exit(f"{project}: no such project in {CATALOGUE.name}/")
    commit, today = _git("rev-parse", "HEAD"), datetime.date.today().isoformat()
    for project in todo:
        scored = score([m for m in messages if m.project == project])
        counts = ProjectScore()
        for s in scored:
            counts.add(s)
        record["projects"][project] = {
            "date": today,
            "commit": commit,
            "specific": counts.specific,
            "specific_right": counts.specific_right,
            "generic": counts.generic,
            "generic_agree": counts.generic_agree,
            "misses": {s.message.key: [s.message.expect, s.alone, s.in_traceback] for s in scored if not s.right},
        }
        specific, generic = f"{counts.specific_right}/{counts.specific}", f"{counts.generic_agree}/{counts.generic}"
        print(f"{project}: specific {specific}, generic {generic}")
    header = (
        "# First pass of each catalogue project, recorded once by scripts/record_catalogue_first_pass.py\n"
        "# before any pattern was written for its messages. Never edited.\n"
        "# misses: key -> [expect, got alone, got in a traceback]\n"
    )
    RECORD.write_text(header + yaml.safe_dump(record, sort_keys=False, width=200), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
