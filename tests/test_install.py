"""What users install is what the source tree holds.

Three checks, none of which can pass through an editable install's import hook:
- the console script the CLI tests run belongs to a regular (non-editable) install outside the
  checkout, whose files are the source tree's, byte for byte (else: reinstall);
- the wheel and sdist that `.ci/run` built with `python -m build` (RLFIX_DIST) hold every package,
  module, knowledge file and static asset of the source tree, and nothing the tree does not hold;
- the wheel, installed into a folder of its own, works from a directory outside the checkout in a
  fresh interpreter that cannot see the checkout (`-I`, no PYTHONPATH).

The build itself stays in `.ci/run`: it fetches build dependencies, which a test should not do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, RunCli, rlfix_executable

SOURCE = ROOT / "rlfix"
KNOWLEDGE = ROOT / "knowledge"
REINSTALL = "reinstall: pip install '.[test]' (not -e), then run the tests again"


def _source_files() -> dict[str, Path]:
    """Every file a wheel must carry, by its name inside the wheel."""
    files: dict[str, Path] = {}
    for path in SOURCE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files[path.relative_to(ROOT).as_posix()] = path
    for path in [*KNOWLEDGE.iterdir(), *(KNOWLEDGE / "messages").iterdir()]:
        if path.is_file() and path.suffix in (".yaml", ".json"):
            files[f"rlfix/knowledge/{path.relative_to(KNOWLEDGE).as_posix()}"] = path
    return files


def _source_packages() -> set[str]:
    """Every directory under rlfix/ that holds a .py file, as a dotted package name."""
    return {".".join(p.parent.relative_to(ROOT).parts) for p in SOURCE.rglob("*.py") if "__pycache__" not in p.parts}


def test_the_source_tree_is_what_the_checks_expect() -> None:
    # Guards the checks below against passing on an empty or misread tree.
    files = _source_files()
    assert {"rlfix/__init__.py", "rlfix/fleet/__init__.py", "rlfix/py.typed", "rlfix/knowledge/cuda.yaml"} <= set(files)
    assert "rlfix/knowledge/messages/vllm.yaml" in files
    assert {"rlfix/render/static/report.css", "rlfix/render/static/report.js"} <= set(files)
    assert {"rlfix", "rlfix.fleet", "rlfix.render", "rlfix.integrations"} <= _source_packages()


def _installed() -> dict[str, str]:
    """Where the console script's interpreter imports rlfix from, and how it was installed."""
    (script,) = rlfix_executable()
    python = Path(script).with_name(Path(sys.executable).name)
    if not python.exists():
        python = Path(sys.executable)
    probe = (
        "import json, importlib.metadata as m, rlfix\n"
        "d = m.distribution('rlfix')\n"
        "print(json.dumps({'file': rlfix.__file__, 'version': d.version,"
        " 'direct_url': d.read_text('direct_url.json') or ''}))\n"
    )
    # -I: the checkout on the path (cwd, PYTHONPATH) must not stand in for the installed package.
    out = subprocess.run(
        [str(python), "-I", "-c", probe], cwd=Path(script).parent, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, f"the installed rlfix does not import ({out.stderr.strip()[-500:]}); {REINSTALL}"
    return dict(json.loads(out.stdout))


def test_the_cli_tests_run_a_regular_install_that_matches_the_source_tree() -> None:
    installed = _installed()
    package = Path(installed["file"]).parent
    editable = json.loads(installed["direct_url"] or "{}").get("dir_info", {}).get("editable", False)
    # A venv may live inside the checkout; the package itself must not be the source folder.
    assert not editable and package.resolve() != SOURCE.resolve(), (
        f"the rlfix console script runs {package} (an editable install or the checkout itself); {REINSTALL}"
    )
    expected = {name.removeprefix("rlfix/"): path for name, path in _source_files().items()}
    shipped = {
        p.relative_to(package).as_posix()
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    missing, extra = sorted(set(expected) - shipped), sorted(shipped - set(expected))
    stale = sorted(n for n in set(expected) & shipped if (package / n).read_bytes() != expected[n].read_bytes())
    assert not (missing or extra or stale), (
        f"the installed rlfix at {package} is not the source tree (missing {missing[:5]}, extra {extra[:5]},"
        f" changed {stale[:5]}); {REINSTALL}"
    )


def _dist() -> Path:
    """The folder of `python -m build`'s output that `.ci/run` names, or a skip outside CI."""
    named = os.environ.get("RLFIX_DIST")
    if not named:
        if os.environ.get("CI"):
            pytest.fail("CI must build the wheel and sdist and name their folder in RLFIX_DIST (see .ci/run)")
        pytest.skip("no built distribution: python -m build -o dist && RLFIX_DIST=dist pytest tests/test_install.py")
    return Path(named).resolve()


def _one(dist: Path, pattern: str) -> Path:
    (found,) = dist.glob(pattern)
    return found


def test_the_wheel_holds_every_package_module_knowledge_file_and_asset() -> None:
    wheel = _one(_dist(), "rlfix-*.whl")
    names = {n for n in zipfile.ZipFile(wheel).namelist() if not n.startswith("rlfix-")}
    expected = set(_source_files())
    assert not expected - names, f"{wheel.name} lacks {sorted(expected - names)}"
    assert not names - expected, f"{wheel.name} holds files the source tree does not: {sorted(names - expected)}"
    packages = {".".join(Path(n).parent.parts) for n in names if n.endswith(".py")}
    assert packages == _source_packages()


def test_the_sdist_builds_the_same_wheel_contents() -> None:
    sdist = _one(_dist(), "rlfix-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    needed = {"pyproject.toml", "setup.py", "README.md", "LICENSE", "CHANGELOG.md"}
    needed |= {name.replace("rlfix/knowledge/", "knowledge/", 1) for name in _source_files()}
    assert not needed - names, f"{sdist.name} lacks {sorted(needed - names)}"


@pytest.mark.slow
def test_the_wheel_installed_alone_works_from_anywhere(tmp_path: Path) -> None:
    wheel = _one(_dist(), "rlfix-*.whl")
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    log = FIXTURES / "cuda-illegal-memory-access--openrlhf-vllm072-buried.log"
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import pkgutil, importlib, rlfix\n"
        "assert rlfix.__file__.startswith(sys.argv[1]), rlfix.__file__\n"
        "for m in pkgutil.walk_packages(rlfix.__path__, 'rlfix.'): importlib.import_module(m.name)\n"
        "kb = rlfix.load_knowledge()\n"
        "print(rlfix.kb.builtin_dir(), len(kb), len(kb.messages), rlfix.diagnose(sys.argv[2]).top.id)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(site), str(log)],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    where, count, messages, top = out.stdout.split()
    assert where.startswith(str(site)) and int(count) >= 46 and top == "cuda-illegal-memory-access"
    assert int(messages) >= 2000, "the wheel lacks knowledge/messages/"


def test_one_version_from_the_package_metadata(run_cli: RunCli) -> None:
    """pyproject.toml holds the version; the package, the CLI and the changelog all say the same."""
    import re

    import rlfix

    declared = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert declared is not None
    assert rlfix.__version__ == declared[1] == _installed()["version"], REINSTALL
    assert run_cli(["--version"]).stdout.strip() == f"rlfix {declared[1]}"
    assert f"## {declared[1]}" in (ROOT / "CHANGELOG.md").read_text()


def test_the_fast_engine_is_a_regular_dependency_where_it_has_wheels() -> None:
    """`pip install rlfix` (no extras) brings Hyperscan on Linux x86_64/aarch64, macOS and Windows amd64."""
    import importlib.metadata
    import platform

    packaging_markers = pytest.importorskip("packaging.markers")
    requires = importlib.metadata.requires("rlfix") or []
    (hyperscan,) = [r for r in requires if r.startswith("hyperscan") and "extra ==" not in r]
    marker = packaging_markers.Marker(hyperscan.split(";", 1)[1])
    for system, machine, expected in [
        ("Linux", "x86_64", True),
        ("Linux", "aarch64", True),
        ("Darwin", "arm64", True),
        ("Windows", "AMD64", True),
        ("Linux", "ppc64le", False),
    ]:
        assert marker.evaluate({"platform_system": system, "platform_machine": machine}) is expected
    if platform.system() == "Linux" and platform.machine() in ("x86_64", "aarch64"):
        from rlfix.match.engines import available_engines

        assert "hyperscan" in available_engines()
