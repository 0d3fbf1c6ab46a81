"""The version of rlfix: one number, kept in pyproject.toml and read here from the package metadata.

Reports, pages, the JSON schema's tool block and the knowledge-base cache key all read it from here.
A source tree that was never installed has no metadata; it then says so instead of guessing.
"""

from __future__ import annotations

import importlib.metadata

try:
    __version__: str = importlib.metadata.version("rlfix")
except importlib.metadata.PackageNotFoundError:  # pragma: no cover - only an uninstalled checkout
    __version__ = "0+unknown"
