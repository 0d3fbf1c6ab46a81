"""What the log says about the job itself: frameworks, versions, hardware, configuration.

Context is gathered by observer probes that run in the same scan as the signatures, so it
costs nothing on lines that hold none of their anchors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rlfix.match.matcher import Hit, Probe, observer_pattern
from rlfix.model import bounded_int
from rlfix.redact import redact_secrets, redact_setting

CONTEXT = "@context"

# Frameworks are named by what their own code prints or by how they are launched.
# (name, regex, anchors): anchors are explicit where the derived literal would be a common word.
_FRAMEWORK_PATTERNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("openrlhf", r"(?i)\bopenrlhf\b", ()),
    ("simplerl", r"(?i)\bsimple_?rl\b", ("simplerl", "simple_rl")),
    ("verl", r"\bverl[./](?:trainer|workers|single_controller|utils|models)\b", ("verl.", "verl/")),
    ("verl", r"(?:^|\s)\+?actor_rollout_ref\.[\w.]+=", ()),
    ("trl", r"\btrl[./](?:trainer|scripts|models|extras)\b", ("trl.", "trl/")),
    ("trl", r"\b(?:GRPOTrainer|GRPOConfig|PPOTrainer|RLOOTrainer|DPOTrainer)\b", ()),
    ("deepspeed", r"(?i)\bdeepspeed\b", ()),
    ("vllm", r"(?i)\bvllm\b", ()),
    ("ray", r"\bray[./](?:_private|util|exceptions|worker|remote_function|actor)\b", ("ray.", "ray/")),
    ("ray", r"(?:^|\s)(?:raylet|RayTaskError|RayActorError|ActorDiedError|ray start|ray job)\b", ()),
    ("pytorch", r"\btorch[./](?:distributed|nn|cuda|autograd|utils)\b", ("torch.", "torch/")),
    ("pytorch", r"\btorchrun\b", ()),
)

_VERSIONED = ("vllm", "torch", "ray", "deepspeed", "transformers", "trl", "openrlhf", "verl", "accelerate")
# `name==1.2.3` (pip freeze) and the banners frameworks print.
_VERSION_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        r"(?i)\b(?P<name>vllm|torch|ray|deepspeed|transformers|trl|openrlhf|verl|accelerate|flash[-_]attn)"
        r"==(?P<version>\d+\.\d+(?:\.\d+)?(?:[.+-]?(?:post|rc|dev|a|b)\d*)?)",
        tuple(f"{name}==" for name in (*_VERSIONED, "flash-attn", "flash_attn")),
    ),
    (r"Initializing an? (?:V\d )?LLM engine \(v(?P<vllm>\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)\)", ()),
    (r"vLLM API server version (?P<vllm>\d+\.\d+(?:\.\d+)?)", ()),
    (r"DeepSpeed info: version=(?P<deepspeed>\d+\.\d+(?:\.\d+)?)", ()),
    (r"NCCL version (?P<nccl>\d+\.\d+\.\d+)", ()),
)

# Settings from command lines (`--flag value`, `--flag=value`) and Hydra overrides (`a.b.c=v`).
_CLI_FLAG = re.compile(r"(?:^|\s)(--[A-Za-z][\w.\-]*)(?:=|\s+)(?!--)([^\s\\]+)")
_HYDRA = re.compile(r"(?:^|\s)\+{0,2}((?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*)=([^\s\\]+)")
_HYDRA_ROOTS = ("actor_rollout_ref", "critic", "data", "trainer", "algorithm", "reward_model", "ray_kwargs", "ray_init")
_SETTING_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # "--" alone would make every "-----" table rule a candidate line; "--" plus a letter does not.
    (r"(?i)(?:^|\s)--[a-z][\w.\-]*(?:=|\s+)[^\s\\-]", tuple(f"--{c}" for c in "abcdefghijklmnopqrstuvwxyz")),
    (
        r"(?:^|\s)\+{0,2}(?:" + "|".join(_HYDRA_ROOTS) + r")\.[\w.]+=",
        tuple(f"{root}." for root in _HYDRA_ROOTS),
    ),
)
# One key of a printed config dict (verl pprints its whole config, one key a line).
_DUMP_LEAF = r"^['\"](?P<key>[A-Za-z_]\w*)['\"]: (?P<value>[^{}\[\],]+?),?$"
# How the job was launched: the first command line that starts a Python process or a launcher.
_LAUNCH = r"^(?:[$#+>] )?(?P<cmd>(?:python3?|torchrun|accelerate launch|deepspeed|ray job submit)\s.{1,2000})$"
_WORLD = r"(?i)\bworld[_ ]size\s*[=:]\s*(?P<world>\d+)"
_GPU = r"(?P<gpu>NVIDIA (?:A100|H100|H800|H20|A800|A10G?|L40S?|L4|V100|RTX \w+|GeForce \w+ \w+)[\w-]*)"

#: Candidate lines each context probe may examine per log. Job context is printed near the start
#: (banners, command lines, config dumps); past this many lines a probe stops costing anything.
CONTEXT_LINES = 20_000


def _probe(kind: str, source: str, anchors: tuple[str, ...] = (), max_hits: int | None = None) -> Probe:
    return Probe(f"{CONTEXT}:{kind}", observer_pattern(source, anchors), max_hits=max_hits, max_lines=CONTEXT_LINES)


def context_probes() -> list[Probe]:
    """Observer probes that feed a `JobContext`."""
    # A framework is known after a few sightings; the rest of the log need not be examined for it.
    probes = [_probe(f"framework:{name}", p, a, max_hits=3) for name, p, a in _FRAMEWORK_PATTERNS]
    probes += [_probe("version", p, a) for p, a in _VERSION_PATTERNS]
    probes += [_probe("setting", p, a) for p, a in _SETTING_PATTERNS]
    probes.append(_probe("gpu", _GPU, max_hits=64))
    probes.append(_probe("dump", _DUMP_LEAF, ("': ", '": ')))
    probes.append(_probe("world", _WORLD, ("world_size", "world size"), max_hits=16))
    probes.append(_probe("launch", _LAUNCH, ("python", "torchrun", "accelerate launch", "deepspeed"), max_hits=1))
    return probes


#: Bound on how many settings are remembered, so a pathological log cannot grow memory.
MAX_SETTINGS = 2000

# When several frameworks show, the one that drives the job names the flags a user changes.
_PRECEDENCE = ("simplerl", "openrlhf", "verl", "trl", "deepspeed", "vllm", "ray", "pytorch")


@dataclass
class JobContext:
    """Frameworks, versions, GPUs and settings the log reveals, with the line each came from."""

    frameworks: dict[str, int] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    gpus: dict[str, int] = field(default_factory=dict)
    #: Leaf keys of printed config dumps (`'free_cache_engine': True`), used when the full key is absent.
    dumped: dict[str, str] = field(default_factory=dict)
    world_size: int | None = None
    #: The command line that launched the job, when the log shows it.
    command: str | None = None
    #: framework -> version ranges whose flag spellings the log itself uses (OpenRLHF renamed its
    #: flags in 0.10.2, so `--zero_stage` in a command line dates the job without a version banner).
    eras: dict[str, set[str]] = field(default_factory=dict)
    #: Mask credentials as they are recorded, so no output (text, JSON, HTML, remedies) can show them.
    redact: bool = field(default=False, repr=False, compare=False)

    def _keep(self, key: str, value: str) -> str:
        return redact_setting(key, value) if self.redact else value

    def _set(self, pairs: Iterable[tuple[str, str]]) -> None:
        for key, value in pairs:
            if key not in self.settings:
                self.settings[key] = self._keep(key, value.strip("'\","))

    def observe(self, hit: Hit) -> None:
        """Record what one context probe found."""
        kind = hit.probe.owner.split(":", 2)[1]
        message = hit.line.message
        if kind == "framework":
            name = hit.probe.owner.rsplit(":", 1)[1]
            self.frameworks[name] = self.frameworks.get(name, 0) + 1
        elif kind == "version":
            groups = {k: v for k, v in hit.match.groupdict().items() if v}
            if "name" in groups and "version" in groups:
                self.versions.setdefault(_canonical(groups["name"]), groups["version"])
            for key, value in groups.items():
                if key not in ("name", "version"):
                    self.versions.setdefault(key, value)
        elif kind == "setting":
            if len(self.settings) < MAX_SETTINGS:
                self._set(_CLI_FLAG.findall(message) + _HYDRA.findall(message))
        elif kind == "gpu":
            gpu = hit.match.group("gpu")
            self.gpus[gpu] = self.gpus.get(gpu, 0) + 1
        elif kind == "dump":
            if len(self.dumped) < MAX_SETTINGS:
                key = hit.match.group("key")
                if key not in self.dumped:
                    self.dumped[key] = self._keep(key, hit.match.group("value").strip().strip("'\""))
        elif kind == "launch":
            if self.command is None:
                command = hit.match.group("cmd")
                # Masked before it is cut, like evidence; its flags are settings too.
                self.command = (redact_secrets(command) if self.redact else command)[:500]
                self._set(_CLI_FLAG.findall(command[:500]) + _HYDRA.findall(command[:500]))
        elif kind == "world":
            world = bounded_int(hit.match.group("world"))
            if world is not None:
                self.world_size = max(self.world_size or 0, world)

    @property
    def framework(self) -> str | None:
        """The framework that drives the job (the one whose flags the user would change)."""
        for name in _PRECEDENCE:
            if name in self.frameworks:
                return name
        return None

    def framework_version(self, name: str) -> str | None:
        return self.versions.get(name)

    def active_frameworks(self) -> list[str]:
        """Detected frameworks, the driving one first; simpleRL-reason also runs verl's flags."""
        found = [n for n in _PRECEDENCE if n in self.frameworks]
        if "simplerl" in found and "verl" not in found:
            found.insert(1, "verl")
        return found

    def infer_eras(self, flags: Iterable[tuple[str, str, str]]) -> None:
        """Record which versioned flag spellings (framework, versions, key) the log uses."""
        self.eras = {}
        for framework, versions, key in flags:
            if framework not in self.versions and key in self.settings:
                self.eras.setdefault(framework, set()).add(versions)

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
    def empty(self) -> bool:
        return not (self.frameworks or self.versions or self.settings or self.gpus or self.dumped)


def _canonical(name: str) -> str:
    name = name.lower().replace("_", "-")
    return {"flash-attn": "flash-attn"}.get(name, name)


def _spellings(key: str) -> Iterable[str]:
    yield key
    bare = key.lstrip("+")
    if bare != key:
        yield bare
    if key.startswith("--"):
        yield key.replace("_", "-")
        yield key.replace("-", "_").replace("__", "--", 1)
