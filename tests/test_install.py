"""The wheel carries the knowledge base: rlfix works from any directory once installed."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT


@pytest.mark.slow
def test_wheel_ships_the_knowledge_base_and_works_from_anywhere(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("rlfix-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {Path(n).name for n in names if n.startswith("rlfix/knowledge/")}
    assert {p.name for p in (ROOT / "knowledge").glob("*.yaml")} <= shipped
    assert "signature.schema.json" in shipped and "rlfix/py.typed" in names

    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    log = FIXTURES / "cuda-illegal-memory-access--openrlhf-vllm072-buried.log"
    probe = (
        "import rlfix, rlfix.kb.load, sys\n"
        "assert rlfix.__file__.startswith(sys.argv[1]), rlfix.__file__\n"
        "print(rlfix.kb.builtin_dir(), len(rlfix.load_knowledge()), rlfix.diagnose(sys.argv[2]).top.id)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", probe, str(site), str(log)],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    assert out[0].startswith(str(site)) and int(out[1]) >= 34 and out[2] == "cuda-illegal-memory-access"


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
