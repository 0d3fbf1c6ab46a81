"""What did not end the run: import failures a program reported as handled, and what processes
print while they are being stopped.

A stop asked for (SIGTERM received, Ctrl-C, a launcher "stopping local process with signal
SIGTERM") is followed by its teardown: a shell's "Killed" for a child that did not stop in time,
exit codes -15, "one child failed". A root all of whose lines are such teardown (within
`rlfix.observe.unknown.TEARDOWN_LINES` lines after a stop, in the same input) is a note: the kill
came from the stop, not from the OOM killer or a crash.

A line its own program logged as a warning (`WARNING` in its logger prefix, `NCCL WARN`) that
the run went far past (`WENT_ON_LINES` more lines in the same input) did not end it either: NCCL
warns that its RAS port is taken and trains on. Such a root is a note too; the same words at
ERROR level, or near the end, stay a root.

Import failures a program reported as handled: optional dependencies probed at start-up.

Frameworks probe optional packages and kernels while they start and carry on without them: vLLM
logs the whole `ImportError` of a missing `deep_gemm` library at WARNING level, SGLang prints
"Ignore import error when loading <model>". The words match the signatures of a broken install
(`package-version-mismatch`, `cuda-runtime-library-missing`), but the program said, on the same
line, that it went on. A root whose every sampled line is such a probe did not end the run: it
becomes a note, with the reason. Once the same failure is raised for real (a traceback's last
line, an ERROR-level line), that line is not a probe and the root stays.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from rlfix.model import Evidence, Kind
from rlfix.observe.tally import Tally

#: An import that failed, in Python's words or the dynamic loader's.
_IMPORT_FAILED = re.compile(
    r"\b(?:ImportError|ModuleNotFoundError)\b|cannot import name|No module named|cannot open shared object file"
)
#: The program's own words that it carried on without it ("not available" is not among them: it
#: says what is missing, as fatal messages do too).
_CARRIED_ON = re.compile(
    r"(?i)\b(?:ignor(?:e|ed|ing)|skip(?:ped|ping)?|fall(?:s|ing)? ?back|will not be used|won't be used|"
    r"continu(?:e|ing) without|proceed(?:ing)? without)\b"
)
#: A line that is an exception being raised (a traceback's last line): fatal unless logged as a warning.
_RAISED = re.compile(r"^\s*(?:\w+\.)*\w*(?:Error|Exception)\b:")
#: A log level below ERROR in the line's prefix: `WARNING 06-25 16:32:09 [file.py:408]`,
#: `[W 2024-...]`, `WARNING:root:`, glog's `W1122 ...`.
_QUIET_LEVEL = re.compile(r"(?:^|[\s\[(|])(?:WARNING|WARN|INFO|DEBUG)\b|(?:^|[\s\[])[WID]\d{4} \d\d:\d\d|\[[WID] ")

#: Lines a run printed after a warning before the warning is taken as one it went on from.
WENT_ON_LINES = 200
_WARNED = re.compile(r"(?:^|[\s\[(|])(?:WARNING|WARN)\b")
_NCCL_WARN = re.compile(r"\bNCCL WARN\b")
WARNED_REASON = "logged as a warning by its own program, and the run went on for many lines after it"
REASON = "an optional import the program reported as handled and went on without: not what ended the run"
TEARDOWN_REASON = "printed while the processes were being stopped (after a stop was asked for): part of the teardown"


def _prefix(evidence: Evidence) -> str:
    """What stood before the message on its line (the prefixes the normaliser peeled off)."""
    at = evidence.text.find(evidence.message) if evidence.message else -1
    return evidence.text[:at] if at > 0 else ""


def handled_probe(evidence: Evidence) -> bool:
    """Whether a line reports an import failure that its program says it carried on from."""
    message = evidence.message or evidence.text
    if not _IMPORT_FAILED.search(message):
        return False
    if _QUIET_LEVEL.search(_prefix(evidence)):
        return True
    return not _RAISED.match(message) and bool(_CARRIED_ON.search(message))


def split_handled(tallies: Mapping[str, Tally]) -> tuple[dict[str, Tally], dict[str, Tally]]:
    """The tallies to rank as failures, and the roots seen only as handled import probes."""
    return _split(tallies, handled_probe)


#: A level in a stamp: Ray's own (`[2026-11-22 00:55:54,389 W 5859 5859]`), glog's (`W1122 12:00:00`, also
#: after torch's `[rank1]:`), `[W 2024-...`.
_WARNING_STAMP = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+ W \d+ \d+\]|(?:^|[\s\[:])W\d{4} \d\d:\d\d|\[W ")
#: A message that opens with its level: the autoscaler's "Warning: The following resource request cannot be
#: scheduled right now", which Ray forwards to every driver as "(autoscaler +12s) Warning: …".
_WARNING_LEADER = re.compile(r"(?:WARNING|WARN|Warning)\b")


def logged_as_warning(evidence: Evidence) -> bool:
    """Whether its own program logged the line as a warning: the level word in its prefix or stamp, or a
    message that opens with it. Such a line may be one the run goes past (Ray repeats its scheduling
    warning while a request waits, and the request is often served): a live alert waits for the end."""
    message = evidence.message or evidence.text
    return bool(
        _WARNED.search(_prefix(evidence)) or _WARNING_STAMP.search(evidence.text) or _WARNING_LEADER.match(message)
    )


def warned_and_went_on(evidence: Evidence, lines_in: Mapping[str, int]) -> bool:
    """Whether `evidence` was logged at WARNING level and its input went on well past it."""
    message = evidence.message or evidence.text
    if not (_WARNED.search(_prefix(evidence)) or _NCCL_WARN.search(message)):
        return False
    return lines_in.get(evidence.source, 0) - evidence.line >= WENT_ON_LINES


#: Roots that are the stop itself (a scheduler's cancel, a launcher told to stop): never its teardown.
STOP_CAUSES = frozenset({"job-cancelled-by-scheduler"})


def split_teardown(
    tallies: Mapping[str, Tally], in_teardown: Callable[[Evidence], bool]
) -> tuple[dict[str, Tally], dict[str, Tally]]:
    """The tallies to rank as failures, and the roots seen only in a stop's teardown."""
    kept, aside = _split({k: t for k, t in tallies.items() if k not in STOP_CAUSES}, in_teardown)
    kept.update({k: t for k, t in tallies.items() if k in STOP_CAUSES})
    return kept, aside


def _split(
    tallies: Mapping[str, Tally], aside: Callable[[Evidence], bool]
) -> tuple[dict[str, Tally], dict[str, Tally]]:
    kept: dict[str, Tally] = {}
    put_aside: dict[str, Tally] = {}
    for sig_id, tally in tallies.items():
        only = tally.signature.kind is Kind.ROOT and tally.samples and all(map(aside, tally.samples))
        (put_aside if only else kept)[sig_id] = tally
    return kept, put_aside
