"""Score one wave of the blind set ONCE and record what rlfix said, before anything is fixed.

    python scripts/record_first_pass.py wave1

Writes the wave's outcomes into fixtures/blind/first_pass.yaml: per log, the ids rlfix ranked
first, with the commit it ran on. A wave already recorded is never overwritten (that would make
the first pass a second pass): the script refuses. docs/accuracy.md reads this file for the
first-pass columns and runs rlfix again for the final ones.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rlfix.tools.evaluate import evaluate  # noqa: E402

BLIND = ROOT / "fixtures" / "blind"
RECORD = BLIND / "first_pass.yaml"


def main(wave: str) -> None:
    record = yaml.safe_load(RECORD.read_text()) if RECORD.exists() else {"waves": {}}
    if wave in record["waves"]:
        sys.exit(f"{wave} was scored on {record['waves'][wave]['date']}: a first pass happens once")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    result = evaluate(BLIND).subset(lambda c: c.wave == wave)
    if not result.outcomes:
        sys.exit(f"no cases in {wave}")
    record["waves"][wave] = {
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "got": {o.case.file: list(o.got[:3]) for o in result.outcomes},
    }
    header = "# First-pass results of the blind waves, recorded once by scripts/record_first_pass.py. Never edited.\n"
    RECORD.write_text(header + yaml.safe_dump(record, sort_keys=False, width=110))
    print(result.to_text(), end="")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "wave1")
