"""Small functions: none in rlfix or benchmarks is 50 lines or longer (docstring included)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = [ROOT / "rlfix", ROOT / "benchmarks"]
LIMIT = 50


def test_every_function_is_under_the_limit() -> None:
    long = []
    for path in sorted(p for package in PACKAGES for p in package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                size = node.end_lineno - node.lineno + 1
                if size >= LIMIT:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({size} lines)")
    assert not long, "split these functions:\n" + "\n".join(long)
