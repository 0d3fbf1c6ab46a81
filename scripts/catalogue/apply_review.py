"""Apply a second reader's review (scripts/catalogue/review_native.yaml) to catalogue entries.

A review row names one entry by project, source and the start of its shown line, and gives the
id it should have, or `drop` to remove it (not a failure, or a fragment of a longer report). The
miner applies the review after the cap (mine_native.py), so a regeneration keeps the reviewed
labels; this script applies it to the committed fixtures/messages files, whose sources are not on
every machine:

    python -m scripts.catalogue.apply_review [--review scripts/catalogue/review_native.yaml]

It fails when a row matches no entry or more than one of its project's entries (a review that
no longer fits the files), and prints the changes per file. Running it twice changes nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path

import yaml

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from scripts.catalogue.common import CATALOGUE, Entry

REVIEW = Path(__file__).resolve().parent / "review_native.yaml"
DROP = "drop"


def load_review(path: Path = REVIEW) -> list[dict[str, str]]:
    """The review rows of `path` (project, source, line_startswith, expect, why)."""
    rows = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    for row in rows:
        missing = {"project", "source", "line_startswith", "expect", "why"} - set(row)
        if missing:
            raise ValueError(f"review row lacks {sorted(missing)}: {row}")
    return rows


def _matches(row: dict[str, str], entry: Entry) -> bool:
    return (
        entry.project == row["project"]
        and entry.source == row["source"]
        and entry.line.startswith(row["line_startswith"])
    )


def apply(entries: list[Entry], review: list[dict[str, str]], strict: bool = True) -> list[Entry]:
    """`entries` with each reviewed entry relabelled (why `review: ...`) or removed.

    An entry already carrying the reviewed id keeps its label and why. With `strict`, a row of one
    of the entries' projects that matches no entry, or several, raises ValueError; rows of other
    projects are ignored (the miner applies the review one project at a time).
    """
    projects = {e.project for e in entries}
    decided: dict[int, dict[str, str]] = {}
    for row in review:
        if row["project"] not in projects:
            continue
        hits = [i for i, entry in enumerate(entries) if _matches(row, entry)]
        if strict and len(hits) != 1:
            raise ValueError(f"review row matches {len(hits)} entries: {row['project']} {row['source']}")
        for i in hits:
            decided[i] = row
    kept = []
    for i, entry in enumerate(entries):
        row = decided.get(i)
        if row is None or row["expect"] == entry.expect:
            kept.append(entry)
        elif row["expect"] != DROP:
            kept.append(replace(entry, expect=row["expect"], why=f"review: {row['why']}"))
    return kept


def apply_to_files(review: list[dict[str, str]], directory: Path = CATALOGUE) -> Counter[tuple[str, str]]:
    """Rewrite the catalogue files the review names (header kept); the (old, new) label changes."""
    changes: Counter[tuple[str, str]] = Counter()
    for project in sorted({row["project"] for row in review}):
        path = directory / f"{project}.yaml"
        text = path.read_text(encoding="utf-8")
        header = "".join(line for line in text.splitlines(keepends=True)[:3] if line.startswith("#"))
        entries = [Entry(**{k: str(v) for k, v in row.items()}) for row in yaml.safe_load(text) or []]
        kept = apply(entries, review, strict=False)
        after = {(e.source, e.line): e.expect for e in kept}
        for entry in entries:
            new = after.get((entry.source, entry.line), DROP)
            if new != entry.expect:
                changes[(entry.expect, new)] += 1
        body = yaml.safe_dump([asdict(e) for e in kept], allow_unicode=True, sort_keys=False, width=1_000_000)
        path.write_text(header + body, encoding="utf-8")
        reviewed = sum(1 for e in kept if e.why.startswith("review:"))
        print(f"{path.name}: {len(entries)} -> {len(kept)} entries, {reviewed} reviewed labels")
    return changes


def main(argv: list[str] | None = None) -> int:
    """Apply the review to the committed files and print the label changes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--review", type=Path, default=REVIEW, help="review file (default: review_native.yaml)")
    parser.add_argument("--catalogue", type=Path, default=CATALOGUE, help="folder of the catalogue files")
    args = parser.parse_args(argv)
    review = load_review(args.review)
    unmatched = []
    for project in sorted({row["project"] for row in review}):
        text = (args.catalogue / f"{project}.yaml").read_text(encoding="utf-8")
        entries = [Entry(**{k: str(v) for k, v in row.items()}) for row in yaml.safe_load(text) or []]
        for row in review:
            if row["project"] == project and sum(_matches(row, e) for e in entries) > 1:
                raise SystemExit(f"ambiguous review row: {project} {row['source']} {row['line_startswith']!r}")
            if row["project"] == project and not any(_matches(row, e) for e in entries):
                unmatched.append(row)
    changes = apply_to_files(review, args.catalogue)
    for (old, new), count in sorted(changes.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{count:4d}  {old} -> {new}")
    # A dropped entry's row matches nothing on a rerun: that is the review already applied.
    print(f"{len(review)} review rows, {len(unmatched)} match no entry (dropped before, or stale)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
