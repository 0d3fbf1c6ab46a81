"""Pick the remediation flags that fit the job: its framework, its version, its current settings."""

from __future__ import annotations

from rlfix.context import JobContext
from rlfix.model import FlagForm, Signature
from rlfix.report import Remedy
from rlfix.versions import version_in


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
            applies = version is None or version_in(version, flag.versions)
        else:
            applies = False
        current = None
        if flag.form is not FlagForm.COMMAND:
            current = context.setting(flag.key)
        reason = None
        suggested = flag.suggested
        if current is not None and suggested is not None and current != suggested:
            reason = f"{flag.key}: {current} -> {suggested}"
        elif current is not None and suggested is None:
            reason = f"{flag.key} is {current} in this job"
        remedies.append(Remedy(flag=flag, applies=applies, current=current, reason=reason))

    def order(r: Remedy) -> tuple[int, int]:
        fw = r.flag.framework
        place = frameworks.index(fw) if fw in frameworks else len(frameworks)
        return (0 if r.applies else 1, place)

    return tuple(sorted(remedies, key=order))
