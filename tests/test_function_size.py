"""Small functions: none in rlfix is 50 lines or longer (docstring included)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "rlfix"
LIMIT = 50


def test_every_function_is_under_the_limit() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                size = node.end_lineno - node.lineno + 1
                if size >= LIMIT:
                    long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({size} lines)")
    assert not long, "split these functions:\n" + "\n".join(long)
