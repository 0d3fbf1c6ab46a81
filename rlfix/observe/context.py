"""What the log says about the job itself: frameworks, versions, hardware, configuration.

Context is gathered by observer probes that run in the same scan as the signatures, so it
costs nothing on lines that hold none of their anchors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from rlfix.job import JobContext
from rlfix.match.matcher import Hit, Probe, ProbeKind, observer_pattern
from rlfix.model import bounded_int
from rlfix.redact import redact_secrets, redact_setting

CONTEXT = "@context"


class Fact(Enum):
    """What a context probe looks for."""

    FRAMEWORK = "framework"
    VERSION = "version"
    SETTING = "setting"
    GPU = "gpu"
    DUMP = "dump"
    WORLD = "world"
    LAUNCH = "launch"


@dataclass(frozen=True)
class ContextDetail:
    """A context probe's question: a fact, and for framework sightings which framework."""

    fact: Fact
    framework: str | None = None


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
#: Bytes at the start of each input in which context probes look. A chatty job prints framework
#: words on every line; past its head, the job's context is known and those words cost nothing.
CONTEXT_BYTES = 4 * 1024 * 1024


def _probe(
    fact: Fact, source: str, anchors: tuple[str, ...] = (), max_hits: int | None = None, framework: str | None = None
) -> Probe:
    owner = f"{CONTEXT}:{fact.value}" + (f":{framework}" if framework else "")
    return Probe(
        owner,
        observer_pattern(source, anchors),
        max_hits=max_hits,
        max_lines=CONTEXT_LINES,
        head_bytes=CONTEXT_BYTES,
        kind=ProbeKind.CONTEXT,
        detail=ContextDetail(fact, framework),
    )


def context_probes() -> list[Probe]:
    """Observer probes that feed a `ContextTracker`."""
    # A framework is known after a few sightings; the rest of the log need not be examined for it.
    probes = [_probe(Fact.FRAMEWORK, p, a, max_hits=3, framework=name) for name, p, a in _FRAMEWORK_PATTERNS]
    probes += [_probe(Fact.VERSION, p, a) for p, a in _VERSION_PATTERNS]
    probes += [_probe(Fact.SETTING, p, a) for p, a in _SETTING_PATTERNS]
    probes.append(_probe(Fact.GPU, _GPU, max_hits=64))
    probes.append(_probe(Fact.DUMP, _DUMP_LEAF, ("': ", '": ')))
    probes.append(_probe(Fact.WORLD, _WORLD, ("world_size", "world size"), max_hits=16))
    probes.append(_probe(Fact.LAUNCH, _LAUNCH, ("python", "torchrun", "accelerate launch", "deepspeed"), max_hits=1))
    return probes


#: Bound on how many settings are remembered, so a pathological log cannot grow memory.
MAX_SETTINGS = 2000


class ContextTracker:
    """Accumulates what context probes find; `snapshot()` hands out a frozen `JobContext`."""

    def __init__(self, redact: bool = False) -> None:
        #: Mask credentials as they are recorded, so no output (text, JSON, HTML, remedies) can show them.
        self.redact = redact
        self.frameworks: dict[str, int] = {}
        self.versions: dict[str, str] = {}
        self.settings: dict[str, str] = {}
        self.gpus: dict[str, int] = {}
        self.dumped: dict[str, str] = {}
        self.world_size: int | None = None
        self.command: str | None = None

    def observe(self, hit: Hit) -> None:
        """Record what one context probe found."""
        detail = hit.probe.detail
        if not isinstance(detail, ContextDetail):
            return
        fact, message = detail.fact, hit.line.message
        if fact is Fact.FRAMEWORK and detail.framework is not None:
            self.frameworks[detail.framework] = self.frameworks.get(detail.framework, 0) + 1
        elif fact is Fact.VERSION:
            self._version(hit)
        elif fact is Fact.SETTING:
            self._settings(message)
        elif fact is Fact.GPU:
            gpu = hit.match.group("gpu")
            self.gpus[gpu] = self.gpus.get(gpu, 0) + 1
        elif fact is Fact.DUMP:
            key = hit.match.group("key")
            if len(self.dumped) < MAX_SETTINGS and key not in self.dumped:
                self.dumped[key] = self._keep(key, hit.match.group("value").strip().strip("'\""))
        elif fact is Fact.LAUNCH:
            if self.command is None:
                command = hit.match.group("cmd")
                # Masked before it is cut, like evidence; its flags are settings too.
                self.command = (redact_secrets(command) if self.redact else command)[:500]
                self._settings(command[:500])
        elif fact is Fact.WORLD:
            world = bounded_int(hit.match.group("world"))
            if world is not None:
                self.world_size = max(self.world_size or 0, world)

    def _version(self, hit: Hit) -> None:
        groups = {k: v for k, v in hit.match.groupdict().items() if v}
        if "name" in groups and "version" in groups:
            self.versions.setdefault(_canonical(groups["name"]), groups["version"])
        for key, value in groups.items():
            if key not in ("name", "version"):
                self.versions.setdefault(key, value)

    def _keep(self, key: str, value: str) -> str:
        return redact_setting(key, value) if self.redact else value

    def _settings(self, text: str) -> None:
        if len(self.settings) < MAX_SETTINGS:
            for key, value in _CLI_FLAG.findall(text) + _HYDRA.findall(text):
                if key not in self.settings:
                    self.settings[key] = self._keep(key, value.strip("'\","))

    def snapshot(self) -> JobContext:
        """A frozen copy of everything seen so far: later lines cannot change it."""
        return JobContext(
            frameworks=dict(self.frameworks),
            versions=dict(self.versions),
            settings=dict(self.settings),
            gpus=dict(self.gpus),
            dumped=dict(self.dumped),
            world_size=self.world_size,
            command=self.command,
        )


def _canonical(name: str) -> str:
    name = name.lower().replace("_", "-")
    return {"flash-attn": "flash-attn"}.get(name, name)
