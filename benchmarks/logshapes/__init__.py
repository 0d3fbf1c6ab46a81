"""Deterministic benchmark logs built from real line shapes (see benchmarks/README.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import chatty, quiet, session
from .common import parse_size

__all__ = ["PROFILES", "Profile", "parse_size"]


@dataclass(frozen=True)
class Profile:
    name: str
    generate: Callable[[Path, int, int, int], Path]
    default_size: str
    failure: str | None  # the signature rlfix must diagnose, None for a healthy log
    directory: bool = False
    default_files: int = 0


PROFILES = {
    p.name: p
    for p in (
        Profile("quiet", quiet.generate, "1GB", "cuda-illegal-memory-access"),
        Profile("chatty", chatty.generate, "1GB", "cuda-oom"),
        Profile("many-files", session.generate, "2GB", "cuda-oom", directory=True, default_files=5000),
        Profile("healthy", chatty.generate_healthy, "1GB", None),
    )
}
