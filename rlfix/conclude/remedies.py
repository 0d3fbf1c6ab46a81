"""Pick the remediation flags that fit the job: its framework, its version, its current settings."""

from __future__ import annotations

from rlfix.job import JobContext
from rlfix.kb.versions import version_in
from rlfix.model import FlagForm, Signature
from rlfix.report import Remedy

# Flags whose value is a fraction of GPU memory: lowering them is the fix for these failures.
# (vLLM's KV-cache errors are left out on purpose: some of them are cured by raising it.)
_MEMORY_FRACTION_KEYS = ("gpu_memory_utilization", "gpu-memory-utilization", "gpu_memory_util")
#: Failures cured by a lower GPU-memory fraction (`kb lint` checks each id exists).
LOWER_MEMORY_IDS = frozenset({"cuda-oom", "ray-oom-killer", "host-oom-sigkill"})


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _adapt(key: str, current: str | None, suggested: str | None) -> tuple[str | None, str | None]:
    """A suggestion that makes sense next to the current value, and why (None: keep the flag's)."""
    now, advice = _number(current), _number(suggested)
    if now is None or advice is None or not key.endswith(_MEMORY_FRACTION_KEYS):
        return None, None
    if advice < now:
        return None, None
    lower = max(0.1, round(now - 0.2, 2))
    return f"{lower:g}", f"the usual {suggested} is not below this job's {current}; lower it by about 0.2"


def choose_remedies(sig: Signature, context: JobContext) -> tuple[Remedy, ...]:
    """Every flag of `sig`, marked whether it applies here, those that apply first.

    A flag applies when it is framework-independent, when no framework could be detected
    (then the user sees every option), or when its framework is in the log and the detected
    version (if any) is in the flag's range.
    """
    frameworks = context.active_frameworks()
    remedies = []
    for flag in sig.remediation.flags:
        if flag.framework == "any" or not frameworks:
            applies = True
        elif flag.framework in frameworks:
            version = context.framework_version(flag.framework)
            eras = context.eras.get(flag.framework)
            if version is not None:
                applies = version_in(version, flag.versions)
            elif eras and flag.versions is not None:
                applies = flag.versions in eras
            else:
                applies = True
        else:
            applies = False
        current = None
        if flag.form is not FlagForm.COMMAND:
            current = context.setting(flag.key)
        reason = None
        suggested = flag.suggested
        adapted, why = _adapt(flag.key, current, suggested) if sig.id in LOWER_MEMORY_IDS else (None, None)
        if adapted is not None:
            reason = f"{flag.key}: {current} -> {adapted} ({why})"
        elif current is not None and suggested is not None and current != suggested:
            reason = f"{flag.key}: {current} -> {suggested}"
        elif current is not None and suggested is None:
            reason = f"{flag.key} is {current} in this job"
        elif flag.form is FlagForm.COMMAND and context.command and not context.command.startswith(flag.key.split()[0]):
            reason = f"this job was started with `{context.command[:120]}`"
        remedies.append(Remedy(flag=flag, applies=applies, current=current, reason=reason))

    def order(r: Remedy) -> tuple[int, int]:
        fw = r.flag.framework
        place = frameworks.index(fw) if fw in frameworks else len(frameworks)
        return (0 if r.applies else 1, place)

    return tuple(sorted(remedies, key=order))
