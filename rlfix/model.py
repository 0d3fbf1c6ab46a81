"""The typed objects every stage passes along: signatures in, diagnoses out."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:  # the `regex` module is imported only when a pattern is first used
    import regex

from rlfix.clock import Moment, difference
from rlfix.errors import Location


class Kind(str, Enum):
    """Whether a signature names a cause a user can act on, or a downstream effect."""

    ROOT = "root"
    SYMPTOM = "symptom"


class Severity(str, Enum):
    """How bad a matched line is for the job."""

    FATAL = "fatal"
    ERROR = "error"
    WARNING = "warning"

    @property
    def weight(self) -> int:
        return {"fatal": 2, "error": 1, "warning": 0}[self.value]


class FlagForm(str, Enum):
    """How a remediation is applied."""

    ARG = "arg"  # command-line flag, e.g. --grad_accum_dtype bf16
    SET = "set"  # Hydra / OmegaConf override, e.g. a.b.c=False
    ENV = "env"  # environment variable, e.g. CUDA_LAUNCH_BLOCKING=1
    CONFIG = "config"  # config object/file field, e.g. vllm_gpu_memory_utilization=0.3
    COMMAND = "command"  # a different command, e.g. accelerate launch train.py


class Action(str, Enum):
    """What to do with a job that failed this way (the `action:` of a signature)."""

    RETRY = "retry"  # transient: a lost node, a preemption, a network flake; resubmit as it is
    FIX_CONFIG = "fix-config"  # change a flag or a setting and resubmit (the flags are the remedy)
    FIX_CODE = "fix-code"  # the job's own code (training script, reward function, data) is wrong
    FIX_ENVIRONMENT = "fix-environment"  # packages, drivers, images, files, permissions
    CORDON_NODE = "cordon-node"  # the hardware is at fault: take the node (or GPU) out of service
    REPORT_UPSTREAM = "report-upstream"  # a framework bug with a known issue
    INVESTIGATE = "investigate"  # not known well enough to act on: read the evidence; never retried


class Owner(str, Enum):
    """Who has to act on a failure (the `owner:` of a signature)."""

    USER_CODE = "user-code"
    CONFIG = "config"
    FRAMEWORK = "framework"
    ENVIRONMENT = "environment"
    PLATFORM = "platform"
    HARDWARE = "hardware"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Decision:
    """An action, who owns it, and one line saying why."""

    #: The project's (or a --kb folder's) own text, not log text: the output gate leaves it alone.
    __rlfix_unmasked__ = True

    action: Action
    owner: Owner
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"action": self.action.value, "owner": self.owner.value, "reason": self.reason}


#: The decision for what rlfix knows only by its shape (an uncaught exception, an inferred death,
#: a failure no signature names): nothing is known well enough to retry or to blame anyone.
INVESTIGATE = Decision(
    Action.INVESTIGATE, Owner.UNKNOWN, "known only by its shape, not by a line that names the cause: read the evidence"
)


FRAMEWORKS = (
    "any",
    "pytorch",
    "deepspeed",
    "vllm",
    "ray",
    "openrlhf",
    "verl",
    "trl",
    "simplerl",
    "transformers",
    "accelerate",
    "nccl",
)


#: The second try of a search that timed out gets this many times the time.
RETRY_FACTOR = 10
#: Searches abandoned on their second try, in this process (a line that had one is never taken
#: as known to match nothing).
SEARCH_TIMEOUTS = [0]
#: Abandoned searches after which a pattern is given up for the rest of the process: a pattern
#: that backtracks on this log would otherwise cost half a second on every candidate line
#: (hours on a large log). A bundled pattern never gets here (`rlfix kb lint` checks them).
GIVE_UP_AFTER = 3
#: Abandoned searches in this process, all patterns together, after which a search that runs out
#: of time once is abandoned without its longer second try: many slow patterns share one budget.
SHARED_BUDGET = 12
#: Abandoned searches per pattern (keyed by where it is defined), in this process.
_ABANDONED: dict[str, int] = {}


def patterns_given_up() -> list[str]:
    """Where the patterns given up in this process are defined (`file:line`), for a warning."""
    return sorted(where for where, count in _ABANDONED.items() if count >= GIVE_UP_AFTER)


#: A match of a pattern in a line (`re` for literal patterns, `regex` for the others: same API).
Match = Union["regex.Match[str]", "re.Match[str]"]


@lru_cache(maxsize=4096)
def _literal_regex(literal: str) -> re.Pattern[str]:
    return re.compile(re.escape(literal))


class LazyRegex:
    """A `regex` pattern compiled on first use.

    Most patterns never meet a candidate line in a given log, and compiling all of them up front
    was most of rlfix's start-up time.
    """

    __slots__ = ("_compiled", "ignore_case", "pattern")

    def __init__(self, pattern: str, ignore_case: bool = False) -> None:
        self.pattern = pattern
        self.ignore_case = ignore_case
        self._compiled: regex.Pattern[str] | None = None

    def get(self) -> regex.Pattern[str]:
        if self._compiled is None:
            import regex

            self._compiled = regex.compile(self.pattern, regex.V0 | (regex.IGNORECASE if self.ignore_case else 0))
        return self._compiled

    def search(self, text: str, timeout: float | None = None) -> regex.Match[str] | None:
        return self.get().search(text, timeout=timeout)

    @property
    def groups(self) -> int:
        return self.get().groups

    @property
    def groupindex(self) -> Mapping[str, int]:
        return self.get().groupindex

    def __repr__(self) -> str:
        return f"LazyRegex({self.pattern!r})"


@dataclass(frozen=True)
class Pattern:
    """One way a signature shows in a line; `anchors` are literals every match contains."""

    #: The project's (or a --kb folder's) own text, not log text: the output gate leaves it alone.
    __rlfix_unmasked__ = True

    source: str
    literal: bool
    anchors: tuple[str, ...]
    ignore_case: bool
    compiled: LazyRegex = field(compare=False, repr=False)
    location: Location = field(compare=False, repr=False)

    def search(self, text: str, timeout: float) -> Match | None:
        """Find this pattern in one normalised line, giving up after `timeout` seconds."""
        if self.literal and not self.ignore_case:
            # A plain substring test is exact for literals and much cheaper than the engine; the
            # match itself comes from stdlib `re`, which needs no timeout for a literal (the
            # `regex` timeout costs more than the search on a line that repeats all run long).
            return _literal_regex(self.source).search(text) if self.source in text else None
        where = str(self.location) if self.location.line else self.source[:80]
        if _ABANDONED.get(where, 0) >= GIVE_UP_AFTER:
            return None
        try:
            return self.compiled.search(text, timeout=timeout)
        except TimeoutError:
            if SEARCH_TIMEOUTS[0] >= SHARED_BUDGET:
                SEARCH_TIMEOUTS[0] += 1
                _ABANDONED[where] = _ABANDONED.get(where, 0) + 1
                return None
        except (MemoryError, RecursionError):  # a pattern the compiler cannot build: never again
            _ABANDONED[where] = GIVE_UP_AFTER
            return None
        # The timeout is wall-clock time: a process that was only descheduled (other processes,
        # `--jobs`) gets one more, longer try, so the answer does not depend on the machine's load.
        try:
            return self.compiled.search(text, timeout=timeout * RETRY_FACTOR)
        except TimeoutError:
            SEARCH_TIMEOUTS[0] += 1
            _ABANDONED[where] = _ABANDONED.get(where, 0) + 1
            return None


@dataclass(frozen=True)
class Flag:
    """A setting that fixes, mitigates or helps diagnose a failure in one framework."""

    #: The project's (or a --kb folder's) own text, not log text: the output gate leaves it alone.
    __rlfix_unmasked__ = True

    framework: str
    form: FlagForm
    value: str
    purpose: str
    versions: str | None = None
    cost: str | None = None
    note: str | None = None

    @property
    def key(self) -> str:
        """The name a user sets: `--vllm.enforce_eager`, `a.b.c`, `CUDA_LAUNCH_BLOCKING`."""
        if self.form is FlagForm.COMMAND:
            return self.value
        if self.form is FlagForm.ARG:
            return self.value.split(None, 1)[0].split("=", 1)[0]
        return self.value.split("=", 1)[0].strip().lstrip("+")

    @property
    def suggested(self) -> str | None:
        """The value the flag sets, when it names one."""
        if self.form is FlagForm.COMMAND:
            return None
        if self.form is FlagForm.ARG:
            head = self.value.split(None, 1)
            if len(head) == 2:
                return head[1]
            return self.value.split("=", 1)[1] if "=" in self.value else None
        return self.value.split("=", 1)[1].strip() if "=" in self.value else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "framework": self.framework,
            "versions": self.versions,
            "form": self.form.value,
            "value": self.value,
            "key": self.key,
            "suggested": self.suggested,
            "purpose": self.purpose,
            "cost": self.cost,
            "note": self.note,
        }


@dataclass(frozen=True)
class Remediation:
    """Ordered steps plus framework flags."""

    #: The project's (or a --kb folder's) own text, not log text: the output gate leaves it alone.
    __rlfix_unmasked__ = True

    steps: tuple[str, ...] = ()
    flags: tuple[Flag, ...] = ()


@dataclass(frozen=True)
class Examples:
    """Lines a signature must match, and near misses it must not."""

    #: The project's (or a --kb folder's) own text, not log text: the output gate leaves it alone.
    __rlfix_unmasked__ = True

    match: tuple[str, ...] = ()
    no_match: tuple[str, ...] = ()


@dataclass(frozen=True)
class Concept:
    """A cause named by its vocabulary rather than by one wording: each cue set must have a term in
    the line (case-insensitive literals; short terms only as whole words), and no `none_of` term may.

    A concept speaks only for an error-shaped line that no exact pattern matched (docs/ranking.md),
    and its finding is less sure than the signature's patterns (`confidence`, below the signature's).
    """

    #: The project's (or a --kb folder's) own text, not log text: the output gate leaves it alone.
    __rlfix_unmasked__ = True

    #: Shown in reports: "named by concept: out-of-memory + GPU allocator".
    name: str
    cues: tuple[tuple[str, ...], ...]
    confidence: float
    none_of: tuple[str, ...] = ()
    examples: Examples = Examples()
    location: Location = field(default=Location("<memory>"), compare=False)


#: How sure a finding named by a known message is: its label was read from the message's source,
#: so surer than a concept's vocabulary, but less than a curated pattern (which also saw real logs).
KNOWN_MESSAGE_CONFIDENCE = 0.7


@dataclass(frozen=True)
class KnownMessage:
    """A message a framework's source prints, as a template, with the cause its raise site means
    (`knowledge/messages/`, generated from the mined catalogue `fixtures/messages/`).

    `parts` are the template's literal text between its placeholders; a line is this message when
    it holds every part, in order (rlfix/match/messages.py). `words` are the whole words of that
    text, lowercased, which the index files it under (worked out once, when the file is parsed, and
    cached with it). Like a concept, a known message speaks only for an error-shaped line that no
    exact pattern matched.
    """

    #: The project's own text, not log text: the output gate leaves it alone.
    __rlfix_unmasked__ = True

    sig_id: str
    template: str
    parts: tuple[str, ...]
    words: tuple[str, ...]
    project: str
    version: str
    #: Where the source prints it: `peft/config.py:98 [PeftConfigMixin.__post_init__]`.
    source: str
    location: Location = field(default=Location("<memory>"), compare=False)

    @property
    def name(self) -> str:
        """How reports cite it: `peft 0.21.2, peft/config.py:98 [PeftConfigMixin.__post_init__]`."""
        return f"{self.project} {self.version}, {self.source}"

    @property
    def confidence(self) -> float:
        return KNOWN_MESSAGE_CONFIDENCE


#: Languages the knowledge base and the reports speak.
LANGUAGES = ("en", "zh")


@dataclass(frozen=True)
class LocalizedFlag:
    """A flag's cost and note in one language (None where the English has none)."""

    #: The project's (or a --kb folder's) own text, not log text: the output gate leaves it alone.
    __rlfix_unmasked__ = True

    cost: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Localized:
    """A signature's words for people in one language: title, summary, steps, flag cost and note."""

    #: The project's (or a --kb folder's) own text, not log text: the output gate leaves it alone.
    __rlfix_unmasked__ = True

    title: str
    summary: str
    steps: tuple[str, ...] = ()
    #: The one line saying why the action fits (`reason:`), None where the language has none.
    reason: str | None = None
    #: (position in `remediation.flags`, its words); flags without cost or note are left out.
    flags: tuple[tuple[int, LocalizedFlag], ...] = ()

    def flag(self, index: int) -> LocalizedFlag:
        """The words for the flag at `index` (empty when there are none)."""
        return dict(self.flags).get(index, LocalizedFlag())


@dataclass(frozen=True)
class Signature:
    """One failure the knowledge base knows: how it looks, what it means, how to fix it."""

    #: The project's (or a --kb folder's) own text, not log text: the output gate leaves it alone.
    __rlfix_unmasked__ = True

    id: str
    title: str
    kind: Kind
    severity: Severity
    summary: str
    patterns: tuple[Pattern, ...]
    confidence: float
    #: What to do and who owns it (`action`, `owner`, `reason` in the YAML; no default).
    decision: Decision
    extract: tuple[tuple[str, LazyRegex], ...] = field(default=(), compare=False)
    explains: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    fallback: bool = False
    #: Evidence comes from system logs (dmesg) pasted after the job's output, so its position in
    #: the file says nothing about when it happened: it explains roots whatever their order.
    order_free: bool = False
    remediation: Remediation = Remediation()
    references: tuple[str, ...] = ()
    examples: Examples = Examples()
    location: Location = field(default=Location("<memory>"), compare=False)
    #: The same words in Simplified Chinese (`zh:` in the YAML); None when the file has none.
    zh: Localized | None = None
    #: The cause's vocabulary, for error lines no pattern knows (`concepts:` in the YAML).
    concepts: tuple[Concept, ...] = ()

    @property
    def is_root(self) -> bool:
        return self.kind is Kind.ROOT

    def localized(self, lang: str = "en") -> Localized:
        """Title, summary, steps and flag words in `lang`, the English where that language is missing."""
        if lang == "zh" and self.zh is not None:
            return self.zh
        flags = tuple(
            (i, LocalizedFlag(f.cost, f.note)) for i, f in enumerate(self.remediation.flags) if f.cost or f.note
        )
        return Localized(self.title, self.summary, self.remediation.steps, self.decision.reason, flags)

    def flag_words(self, flag: Flag, lang: str = "en") -> LocalizedFlag:
        """A flag's cost and note in `lang` (a flag not of this signature keeps its own words)."""
        if lang == "en" or flag not in self.remediation.flags:
            return LocalizedFlag(flag.cost, flag.note)
        words = self.localized(lang).flag(self.remediation.flags.index(flag))
        return LocalizedFlag(words.cost or flag.cost, words.note or flag.note)


@dataclass(frozen=True)
class Line:
    """One normalised log line: the message plus what its prefixes said about where it came from."""

    source: str
    number: int
    text: str
    message: str
    rank: int | None = None
    worker: str | None = None
    pid: int | None = None
    node: str | None = None
    level: str | None = None
    timestamp: str | None = None
    repeat: int = 1


@dataclass(frozen=True)
class Evidence:
    """A line that matched a signature, with where it came from."""

    source: str
    line: int
    text: str
    message: str
    rank: int | None = None
    worker: str | None = None
    node: str | None = None
    pid: int | None = None
    timestamp: str | None = None
    repeat: int = 1
    values: Mapping[str, str] = field(default_factory=dict)
    order: int = 0
    #: `timestamp` on a clock (`rlfix.clock`), when it parsed; the string stays for display.
    time: Moment | None = None

    def before(self, other: Evidence) -> bool:
        """Whether this line happened before `other`: by their times when both have one on the same
        clock (and they differ), else by the order the lines were read in."""
        gap = difference(self.time, other.time)
        if gap:
            return gap > 0
        return self.order < other.order

    @property
    def where(self) -> str:
        """`rank 3`, `WorkerDict pid=12 @10.0.0.3`, or empty when the line had no prefix."""
        parts: list[str] = []
        if self.rank is not None:
            parts.append(f"rank {self.rank}")
        if self.worker:
            parts.append(self.worker + (f" pid={self.pid}" if self.pid else ""))
        elif self.pid:
            parts.append(f"pid={self.pid}")
        if self.node:
            parts.append(f"@{self.node}")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "line": self.line,
            "text": self.text,
            "rank": self.rank,
            "worker": self.worker,
            "node": self.node,
            "pid": self.pid,
            "timestamp": self.timestamp,
            "repeat": self.repeat,
            "values": dict(self.values),
        }


#: Digits an extracted number may have and still be read as one (beyond: kept as text).
MAX_DIGITS = 18


def bounded_int(text: str | None) -> int | None:
    """`text` as an int when it is a plain number of sane size, else None (never raises).

    Logs are data: a 5000-digit "world size" must not trip Python's int-conversion limit.
    """
    if text is None:
        return None
    digits = text.strip()
    if not digits.isascii() or not digits.lstrip("+-").isdigit() or len(digits) > MAX_DIGITS:
        return None
    return int(digits)
