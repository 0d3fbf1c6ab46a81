"""The package's layering, as docs/design.md states it: dependencies point one way, no cycles,
no private name imported across modules, and every module imports on its own."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rlfix"

#: Lowest first. A module may import from its own layer or a lower one, never a higher one.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "rlfix.errors",
        "rlfix.version",
        "rlfix.safe",
        "rlfix.redact",
        "rlfix.i18n",
        "rlfix.clock",
        "rlfix.process_pool",
        "rlfix.gate",
        "rlfix.output",
    ),
    ("rlfix.model", "rlfix.templates", "rlfix.details", "rlfix.job"),
    ("rlfix.alerts",),
    ("rlfix.report",),
    ("rlfix.kb", "rlfix.read"),
    ("rlfix.match",),
    ("rlfix.observe",),
    ("rlfix.conclude",),
    ("rlfix.render",),
    ("rlfix.core",),
    ("rlfix.api", "rlfix.retry"),
    ("rlfix.tools", "rlfix.integrations", "rlfix.fleet"),
    ("rlfix.cli", "rlfix.__main__", "rlfix"),
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _layer(module: str) -> int:
    best = (-1, -1)  # (prefix length, layer) so that rlfix.kb.load is in rlfix.kb, not rlfix
    for index, names in enumerate(LAYERS):
        for name in names:
            if module == name or module.startswith(name + "."):
                best = max(best, (len(name), index))
    assert best[1] >= 0, f"{module} is in no layer: add it to LAYERS and docs/design.md"
    return best[1]


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _imports(path: Path) -> list[tuple[str, tuple[str, ...], int]]:
    """(module, names, line) for every rlfix import, at module or function level, outside TYPE_CHECKING."""
    tree = ast.parse(path.read_text())
    skipped = {
        id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking(node) for n in ast.walk(node)
    }
    out = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.split(".")[0] == "rlfix"
        ):
            names = tuple(a.name for a in node.names)
            # `from rlfix.kb import anchors` imports a module, not a name.
            subs = tuple(n for n in names if f"{node.module}.{n}" in MODULES)
            out.extend((f"{node.module}.{n}", (), node.lineno) for n in subs)
            if len(subs) < len(names):
                out.append((node.module, tuple(n for n in names if n not in subs), node.lineno))
        elif isinstance(node, ast.Import):
            out.extend((a.name, (), node.lineno) for a in node.names if a.name.split(".")[0] == "rlfix")
    return out


GRAPH = {name: _imports(path) for name, path in MODULES.items()}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_the_layers(module: str) -> None:
    mine = _layer(module)
    for target, _names, line in GRAPH[module]:
        if target == module or (module.startswith(target + ".") and target != "rlfix"):
            continue  # a package's own __init__ runs first anyway
        assert _layer(target) <= mine, f"{module}:{line} imports {target}, a higher layer"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_is_imported_across_modules(module: str) -> None:
    for target, names, line in GRAPH[module]:
        private = [n for n in names if n.startswith("_") and n != "__version__"]
        assert not private, f"{module}:{line} imports private {private} from {target}"


def test_no_import_cycles() -> None:
    edges = {m: {t for t, _n, _l in GRAPH[m] if t in MODULES and t != m} for m in MODULES}
    # A package's __init__ re-exporting its own modules is not a cycle of design.
    for m in edges:
        edges[m] = {
            t
            for t in edges[m]
            if not (m.startswith(t + ".") or (t.startswith(m + ".") and MODULES[m].name == "__init__.py"))
        }
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)


def test_every_module_imports_on_its_own() -> None:
    # One interpreter per module would take seconds; a fresh interpreter per batch that imports each
    # module first (before anything else of rlfix) is the same check.
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    for module in sorted(MODULES):
        if module.startswith("rlfix.integrations.ray") or module == "rlfix.__main__":
            continue
        proc = subprocess.run([sys.executable, "-c", code, module], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"import {module} alone failed:\n{proc.stderr[-2000:]}"
