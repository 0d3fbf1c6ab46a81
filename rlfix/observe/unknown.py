"""Failures the knowledge base may not know: error-looking lines grouped by template, and the
lines that say the job ended badly. The streaming half; `rlfix.conclude.unrecognized` concludes."""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass

from rlfix.details import ErrorTemplate
from rlfix.match.matcher import Hit, Probe, ProbeKind, observer_pattern
from rlfix.model import Evidence
from rlfix.observe.shapes import PROBE, error_shape
from rlfix.templates import template

ERRORLINE = "@error"
TERMINATION = "@exit"
STOP = "@stop"
MAX_TEMPLATES = 500

_ERROR = PROBE
_TERMINATIONS = (
    r"(?i)\bexit(?:ed)?(?: with)? (?:status|code)[ :=]+(?P<code>-?[1-9]\d{0,2})\b",
    r"returned non-zero exit status (?P<code>\d+)",
    r"(?i)\bexitcode\s*:\s*(?P<code>-?[1-9]\d{0,2})\b",
    r"exits with return code = (?P<code>-?[1-9]\d{0,2})",
    r"(?i)\bjob '[^']{1,200}' failed\b",
    r"Error executing job with overrides",
    r"(?:Aborted|Segmentation fault|Bus error) \(core dumped\)",
    r": line \d+: +\d+ Killed\b",
    r"\bKilling subprocess \d+",
)

#: A stop asked for from outside (an operator, a scheduler, Ctrl-C): what the process prints after
#: it (children killed with -15, "one child failed", cleanup) is its teardown, not a crash.
_STOPS = (
    r"\b(?:SIGTERM|SIGINT|SIGHUP) received\b",
    r"(?i)\breceived (?:signal )?(?:SIGTERM|SIGINT|SIGHUP|signal (?:15|2)\b)",
    r"(?i)\bDraining requests and shutting down\b",
    r"^KeyboardInterrupt\s*$",
    # A launcher stopping its own processes (AReaL's local scheduler, and the like).
    r"(?i)\bStopping (?:\w+ ){0,2}process(?:es)?\b.{0,40}\bwith signal SIG(?:TERM|INT|KILL)\b",
)
#: A stop's teardown is what a process prints within this many lines after it.
TEARDOWN_LINES = 50
#: Stop lines remembered (the last ones).
MAX_STOPS = 64

#: Error-looking lines examined per log for templates (a crash log that prints more is grouped
#: well enough by its first this-many).
ERROR_LINES = 100_000
#: Recent templates an unrecognised failure shows; frequent ones the insights list.
RECENT_TEMPLATES = 5
FREQUENT_TEMPLATES = 20


#: Lines their own program logged at ERROR or FATAL by a native prefix, whatever words follow:
#: Ray's C++ processes (`[2026-11-26 14:10:50,123 E 12345 12400] (raylet) ...`) and glog
#: (`E1126 14:10:50.123000 2417 file.cpp:76] ...`). No word of the message is needed, so the prefix
#: is the anchor: the level letter between spaces, or the letter and the month.
_NATIVE_LEVELS = (
    (r",\d{3} [EF] \d{1,10} \d{1,10}\] ", (" E ", " F ")),
    (
        r"(?:^|[\s\[:])[EF](?:0[1-9]|1[0-2])\d\d \d\d:\d\d:\d\d\.\d",
        tuple(f"{lv}{m:02d}" for lv in "EF" for m in range(1, 13)),
    ),
)


def unknown_probes() -> list[Probe]:
    """Observer probes for error-looking lines and the lines that say a job ended."""
    probes = [Probe(ERRORLINE, observer_pattern(_ERROR), max_lines=ERROR_LINES, kind=ProbeKind.ERROR_LINE)]
    probes += [
        Probe(ERRORLINE, observer_pattern(p, anchors), max_lines=ERROR_LINES, kind=ProbeKind.ERROR_LINE)
        for p, anchors in _NATIVE_LEVELS
    ]
    probes += [Probe(TERMINATION, observer_pattern(p), kind=ProbeKind.TERMINATION) for p in _TERMINATIONS]
    probes += [Probe(STOP, observer_pattern(p), kind=ProbeKind.TERMINATION) for p in _STOPS]
    return probes


@dataclass
class _Count:
    template: str
    count: int
    first: Evidence
    last_seq: int

    def frozen(self) -> ErrorTemplate:
        return ErrorTemplate(self.template, self.count, self.first.source, self.first.line)


@dataclass(frozen=True)
class UnknownErrors:
    """A frozen view of the error lines seen so far."""

    termination: Evidence | None = None
    exit_code: str | None = None
    #: The last lines that asked a process to stop (SIGTERM received, Ctrl-C, a launcher stopping them).
    stops: tuple[Evidence, ...] = ()
    #: The most recent templates, last first (the end of a log is where it died), with first evidence.
    recent: tuple[tuple[ErrorTemplate, Evidence], ...] = ()
    #: The most frequent templates, most first.
    frequent: tuple[ErrorTemplate, ...] = ()

    @property
    def crashed(self) -> bool:
        """A line said the job ended badly (exit status, core dump, launcher failure), and not as
        the teardown of a stop asked for from outside."""
        return self.termination is not None and not self.after_stop(self.termination)

    def after_stop(self, evidence: Evidence) -> bool:
        """Whether `evidence` is part of a stop's teardown: in the same input, within
        `TEARDOWN_LINES` lines after a line that asked a process to stop."""
        return any(
            s.source == evidence.source and s.order < evidence.order and evidence.line - s.line <= TEARDOWN_LINES
            for s in self.stops
        )


class UnknownTracker:
    """Error-looking lines grouped by template, and the lines that say the job ended badly."""

    def __init__(self) -> None:
        self.templates: OrderedDict[str, _Count] = OrderedDict()
        self.termination: Evidence | None = None
        self.exit_code: str | None = None
        self.stops: deque[Evidence] = deque(maxlen=MAX_STOPS)

    def wants(self, kind: ProbeKind, message: str) -> bool:
        """Whether a line would be kept as quoted evidence (not just counted)."""
        if kind is ProbeKind.TERMINATION:
            return self.termination is None
        return len(self.templates) < MAX_TEMPLATES and template(message) not in self.templates

    def observe(self, hit: Hit, evidence: Evidence) -> str | None:
        """Count one error-looking or job-ending line; its template when its form says an error
        happened (not just the word: see `rlfix.observe.shapes`), else None."""
        if hit.probe.owner == STOP:
            self.stops.append(evidence)
            return None
        if hit.probe.kind is ProbeKind.TERMINATION:
            if self.termination is None:
                self.termination = evidence
            code = hit.match.groupdict().get("code")
            if code and self.exit_code is None:
                self.exit_code = code
            return None
        key = template(evidence.message)
        entry = self.templates.get(key)
        if entry is not None:
            entry.count += evidence.repeat
            entry.last_seq = evidence.order
        elif len(self.templates) < MAX_TEMPLATES:
            self.templates[key] = _Count(key, evidence.repeat, evidence, evidence.order)
        return key if error_shape(hit.line.message, hit.line.level) is not None else None

    def snapshot(self) -> UnknownErrors:
        """What was seen so far, frozen."""
        recent = sorted(self.templates.values(), key=lambda t: -t.last_seq)[:RECENT_TEMPLATES]
        frequent = sorted(self.templates.values(), key=lambda t: -t.count)[:FREQUENT_TEMPLATES]
        return UnknownErrors(
            termination=self.termination,
            exit_code=self.exit_code,
            stops=tuple(self.stops),
            recent=tuple((t.frozen(), t.first) for t in recent),
            frequent=tuple(t.frozen() for t in frequent),
        )
