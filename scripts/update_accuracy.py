"""Rewrite docs/accuracy.md from the fixtures, the blind waves and the mined wordings.

python scripts/update_accuracy.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rlfix.tools.accuracy import accuracy_markdown  # noqa: E402

if __name__ == "__main__":
    (ROOT / "docs" / "accuracy.md").write_text(accuracy_markdown(ROOT), encoding="utf-8")
    print("wrote docs/accuracy.md")
