"""What the log says about the job: a frozen snapshot that a `Report` carries.

The streaming side (`rlfix.observe.context.ContextTracker`) accumulates while lines arrive and
hands out copies of this, so a report never changes after it was made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

# When several frameworks show, the one that drives the job names the flags a user changes.
PRECEDENCE = ("simplerl", "openrlhf", "verl", "trl", "deepspeed", "vllm", "ray", "pytorch")


@dataclass(frozen=True)
class JobContext:
    """Frameworks, versions, GPUs and settings the log reveals."""

    frameworks: Mapping[str, int] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, str] = field(default_factory=dict)
    gpus: Mapping[str, int] = field(default_factory=dict)
    #: Leaf keys of printed config dumps (`'free_cache_engine': True`), used when the full key is absent.
    dumped: Mapping[str, str] = field(default_factory=dict)
    world_size: int | None = None
    #: The command line that launched the job, when the log shows it.
    command: str | None = None
    #: framework -> version ranges whose flag spellings the log itself uses (OpenRLHF renamed its
    #: flags in 0.10.2, so `--zero_stage` in a command line dates the job without a version banner).
    eras: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def framework(self) -> str | None:
        """The framework that drives the job (the one whose flags the user would change)."""
        for name in PRECEDENCE:
            if name in self.frameworks:
                return name
        return None

    def framework_version(self, name: str) -> str | None:
        """The version of `name` the log shows, if any."""
        return self.versions.get(name)

    def active_frameworks(self) -> list[str]:
        """Detected frameworks, the driving one first; simpleRL-reason also runs verl's flags."""
        found = [n for n in PRECEDENCE if n in self.frameworks]
        if "simplerl" in found and "verl" not in found:
            found.insert(1, "verl")
        return found

    def with_eras(self, flags: Iterable[tuple[str, str, str]]) -> JobContext:
        """A copy that knows which versioned flag spellings (framework, versions, key) the log uses."""
        eras: dict[str, set[str]] = {}
        for framework, versions, key in flags:
            if framework not in self.versions and key in self.settings:
                eras.setdefault(framework, set()).add(versions)
        return replace(self, eras={k: frozenset(v) for k, v in eras.items()})

    def setting(self, key: str) -> str | None:
        """The value of a flag or override as the log shows it, trying `--a.b` and `--a_b` forms."""
        for candidate in _spellings(key):
            if candidate in self.settings:
                return self.settings[candidate]
        leaf = key.lstrip("+-").rsplit(".", 1)[-1]
        if "." in key and leaf in self.dumped:
            return self.dumped[leaf]
        return None

    def to_dict(self) -> dict[str, Any]:
        """The `context` object of the JSON contract."""
        return {
            "framework": self.framework,
            "frameworks": self.active_frameworks(),
            "versions": dict(sorted(self.versions.items())),
            "gpus": dict(sorted(self.gpus.items())),
            "world_size": self.world_size,
            "command": self.command,
            "settings": dict(sorted(self.settings.items())),
            "config_dump": dict(sorted(self.dumped.items())),
        }

    @property
    def named(self) -> bool:
        """True when the log names a framework, a version or a GPU (what the one-line job summary says)."""
        return bool(self.frameworks or self.versions or self.gpus)

    @property
    def empty(self) -> bool:
        """True when the log revealed nothing about the job."""
        return not (self.frameworks or self.versions or self.settings or self.gpus or self.dumped)


def _spellings(key: str) -> Iterable[str]:
    yield key
    bare = key.lstrip("+")
    if bare != key:
        yield bare
    if key.startswith("--"):
        yield key.replace("_", "-")
        yield key.replace("-", "_").replace("__", "--", 1)
