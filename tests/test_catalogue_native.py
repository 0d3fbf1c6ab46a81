"""The native half of the message catalogue (fixtures/messages, made by scripts/catalogue/mine_native.py):
its files are whole and well-formed, its labels are ids that exist, and the miner's parsing and
label rules do what the catalogue relies on. Reads YAML and the scripts' source only: fast, no rlfix run.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = ROOT / "fixtures" / "messages"
#: Each native project and the fewest entries a whole regeneration gives (a truncated run fails);
#: the writer keeps at most 150 specific and 100 generic entries per project (common.cap), and the
#: second reader's review (scripts/catalogue/review_native.yaml) then drops notices and fragments:
#: 43 NCCL INFO/fallback lines (160 -> 117) and 34 notices and continuation lines of kernel reports (137 -> 103).
NATIVE = {
    "pytorch-cpp": 200,
    "ray-cpp": 140,
    "nccl": 110,
    "slurm": 110,
    "linux-kernel": 100,
    "kubernetes": 110,
    "nvidia-xid": 150,
    "cuda-runtime": 110,
    "cuda-driver": 90,
}


def _module(name: str) -> ModuleType:
    """A module of scripts/catalogue loaded from its file (scripts/ is not an installed package)."""
    if f"scripts.catalogue.{name}" in sys.modules:
        return sys.modules[f"scripts.catalogue.{name}"]
    sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location(
        f"scripts.catalogue.{name}", ROOT / "scripts" / "catalogue" / f"{name}.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _ids() -> set[str]:
    """The ids LABELLING-ids.md lists, and the two generic ones."""
    text = (MESSAGES / "LABELLING-ids.md").read_text(encoding="utf-8")
    return set(re.findall(r"(?m)^- ([a-z0-9-]+) \(", text)) | {"python-exception", "unrecognized-failure"}


@pytest.mark.parametrize("project", sorted(NATIVE))
def test_file_is_whole_and_labelled(project: str) -> None:
    rows = yaml.safe_load((MESSAGES / f"{project}.yaml").read_text(encoding="utf-8"))
    assert len(rows) >= NATIVE[project]
    ids = _ids()
    key = _module("common").template_key
    assert len({key(r["template"]) for r in rows}) == len(rows), "entries are deduplicated by template"
    for row in rows:
        assert row["project"] == project and row["version"] and row["why"]
        assert re.fullmatch(r"[\w./+-]+:\d+", row["source"]), row["source"]
        assert row["expect"] in ids, (row["source"], row["expect"])
        assert not re.search(r"/work/|/root/|/tmp/venv|/tmp/nsrc", row["line"] + row["template"])


def test_specific_ids_are_present_where_the_sources_name_causes() -> None:
    """Each project whose sources name causes has specific labels, not only the generic ids."""
    for project in NATIVE:
        rows = yaml.safe_load((MESSAGES / f"{project}.yaml").read_text(encoding="utf-8"))
        specific = [r for r in rows if r["expect"] not in ("python-exception", "unrecognized-failure")]
        assert len(specific) >= 5, project


def test_printf_and_stream_messages_become_templates() -> None:
    parse = _module("native_parse")
    pieces = parse.format_pieces(
        ['"Detected %" PRIu64 " oom_kill event%s in %ps: %m"', "n", "s", "&step->step_id"], printf=True
    )
    assert parse.template_of(pieces) == "Detected {} oom_kill event{} in {}: {}"
    assert "StepId=" in parse.line_of(pieces) and "Invalid argument" in parse.line_of(pieces)
    chain = parse.split_top('RAY_LOG(ERROR) << "Worker " << id << " died, code " << f(a, b)', "<<")[1:]
    assert parse.template_of(parse.stream_pieces(chain)) == "Worker {} died, code {}"


def test_comments_are_blanked_without_moving_lines() -> None:
    parse = _module("native_parse")
    text = 'a(); /* one\ntwo */ b("// kept"); // gone\nc();'
    out = parse.strip_comments(text)
    assert out.count("\n") == text.count("\n") and '"// kept"' in out and "gone" not in out


@pytest.mark.parametrize(
    ("row", "expect"),
    [
        (
            {
                "project": "pytorch-cpp",
                "kind": "TORCH_CHECK_WITH(OutOfMemoryError)",
                "template": "CUDA out of memory. Tried to allocate {}.",
            },
            "cuda-oom",
        ),
        (
            {"project": "slurm", "kind": "error()", "template": "*** {} ON {} CANCELLED AT {} DUE TO TIME LIMIT ***"},
            "job-cancelled-by-scheduler",
        ),
        (
            {
                "project": "nvidia-xid",
                "kind": "Xid 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS)",
                "template": "Xid ({}): 79, GPU has fallen off the bus.",
            },
            "gpu-hardware-fault",
        ),
        (
            {
                "project": "ray-cpp",
                "kind": "RAY_LOG(ERROR)",
                "template": "Task was killed due to the node running low on memory. {}",
            },
            "ray-oom-killer",
        ),
        ({"project": "pytorch-cpp", "kind": "TORCH_CHECK", "template": "expected a 2-D weight"}, "python-exception"),
        (
            {"project": "slurm", "kind": "error()", "template": "unable to read the spool directory"},
            "unrecognized-failure",
        ),
    ],
)
def test_label_rules(row: dict[str, str], expect: str) -> None:
    exc = "RuntimeError: " if row["project"] == "pytorch-cpp" else ""
    full = {"version": "v", "source": "x.cc:1", "line": exc + row["template"], **row}
    assert _module("labels_native").label(full)[0] == expect


def test_review_is_applied_to_the_committed_files() -> None:
    """Every row of review_native.yaml fits one entry, and the committed files already carry it."""
    review_mod = _module("apply_review")
    common = _module("common")
    review = review_mod.load_review()
    for project in sorted({row["project"] for row in review}):
        entries = [
            common.Entry(**{k: str(v) for k, v in row.items()})
            for row in yaml.safe_load((MESSAGES / f"{project}.yaml").read_text(encoding="utf-8"))
        ]
        assert review_mod.apply(entries, review, strict=False) == entries, project
        for row in review:
            if row["project"] != project:
                continue
            hits = [e for e in entries if review_mod._matches(row, e)]
            if row["expect"] == review_mod.DROP:
                assert not hits, (project, row["source"])
            else:
                assert len(hits) == 1 and hits[0].expect == row["expect"], (project, row["source"])
