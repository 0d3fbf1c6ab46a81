"""The mined message catalogue (fixtures/messages/*.yaml) is well formed.

Reads the committed files only (the miners run at development time): every file parses, every
field is filled, every `expect` is a listed id, no template appears twice in the whole catalogue,
no build-machine path leaks, and the catalogue is as large and as broad as issue 25 asks.
Nothing here runs rlfix on the messages.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
MESSAGES = ROOT / "fixtures" / "messages"
FIELDS = ("project", "version", "source", "kind", "template", "line", "expect", "why")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _common():
    spec = importlib.util.spec_from_file_location("catalogue_common", ROOT / "scripts" / "catalogue" / "common.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("catalogue_common", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def catalogue() -> dict[str, list[dict]]:
    # first_pass.yaml is the record of the first scoring, not a project.
    files = sorted(p for p in MESSAGES.glob("*.yaml") if p.name != "first_pass.yaml")
    assert files, "no catalogue files in fixtures/messages"
    return {p.name: yaml.load(p.read_text(encoding="utf-8"), Loader=_LOADER) for p in files}


def _ids() -> set[str]:
    text = (MESSAGES / "LABELLING-ids.md").read_text(encoding="utf-8")
    return set(re.findall(r"^- ([a-z0-9-]+) \(", text, re.MULTILINE)) | set(_common().GENERIC_IDS)


def test_every_file_is_a_list_of_complete_entries(catalogue):
    for name, rows in catalogue.items():
        assert isinstance(rows, list) and rows, name
        for row in rows:
            assert set(row) == set(FIELDS), (name, row)
            empty = [f for f in FIELDS if not str(row[f]).strip()]
            assert not empty, (name, row["source"], empty)
            assert row["project"] == Path(name).stem, (name, row["source"])


def test_every_expect_is_a_listed_id(catalogue):
    ids = _ids()
    assert "cuda-oom" in ids and "python-exception" in ids
    unknown = {(n, r["expect"]) for n, rows in catalogue.items() for r in rows} - {
        (n, i) for n in catalogue for i in ids
    }
    assert not unknown, sorted(unknown)[:20]


def test_no_template_twice_in_the_whole_catalogue(catalogue):
    key = _common().template_key
    seen: dict[str, str] = {}
    twice = []
    for name, rows in catalogue.items():
        for row in rows:
            k = key(str(row["template"]))
            if k in seen:
                twice.append((k, seen[k], f"{name}:{row['source']}"))
            seen[k] = f"{name}:{row['source']}"
    assert not twice, twice[:20]


def test_no_build_machine_path(catalogue):
    leak = re.compile(r"/(work|tmp|root)/")
    bad = [
        (name, row["source"], field)
        for name, rows in catalogue.items()
        for row in rows
        for field in FIELDS
        if leak.search(str(row[field])) and not _in_template(str(row["template"]), field)
    ]
    assert not bad, bad[:20]


def _in_template(template: str, field: str) -> bool:
    """A path the project's own message names (e.g. `/tmp/ray` in Ray's text) is its fact, not a leak."""
    return field in ("template", "line") and bool(re.search(r"/(work|tmp|root)/", template))


def test_catalogue_is_large_and_broad(catalogue):
    rows = [row for rows in catalogue.values() for row in rows]
    projects = {row["project"] for row in rows}
    assert len(rows) >= 3000, len(rows)
    assert len(projects) >= 15, sorted(projects)
