"""Generic exceptions understood by their place in the traceback.

A `TypeError: ... got an unexpected keyword argument`, `ImportError: cannot import name`, or
`AttributeError: module 'x' has no attribute` raised where one installed package calls into another
is not a bug in either: the two installed versions do not fit together. The frames say which two
(`rlfix.observe.tracebacks.frame_packages`), the log's banners and `pip freeze` lines their versions.
"""

from __future__ import annotations

import re
from dataclasses import replace

from rlfix.details import VersionMismatch
from rlfix.job import JobContext
from rlfix.kb.load import KnowledgeBase
from rlfix.kb.versions import parse_version
from rlfix.report import Diagnosis

MISMATCH_ID = "package-version-mismatch"

# (exception class, message shape): the ways one package's call can miss another's API.
_CALL_SHAPES = (
    (
        "TypeError",
        re.compile(
            r"unexpected keyword argument|got multiple values for (?:keyword )?argument"
            r"|missing \d+ required (?:positional|keyword-only) arguments?"
            r"|takes (?:from )?\d+ (?:to \d+ )?positional arguments? but \d+ (?:were|was) given"
        ),
    ),
    ("AttributeError", re.compile(r"has no attribute")),
    ("ImportError", re.compile(r"cannot import name")),
    ("ModuleNotFoundError", re.compile(r"No module named '\w+\.")),
)
# A package named by the message itself: `from 'trl'`, `module 'vllm.utils' has`, `No module named 'verl.x'`.
_NAMED = re.compile(r"(?:cannot import name '\w+' from '|module '|No module named ')([A-Za-z_]\w*)")


# `Config.__init__() got an unexpected keyword argument`: the callable a TypeError names.
_API = re.compile(r"([A-Za-z_][\w.]*)\(\) ")


def _shape(exception: str | None, message: str | None) -> bool:
    if not exception or not message:
        return False
    cls = exception.rsplit(".", 1)[-1]
    return any(cls == name and shape.search(message) for name, shape in _CALL_SHAPES)


def find_mismatch(diag: Diagnosis, kb: KnowledgeBase, context: JobContext) -> VersionMismatch | None:
    """The two packages behind an exception raised between packages, or None when it is not one."""
    exc = diag.details.exception
    if exc is None or not _shape(exc.exception, exc.message):
        return None
    named_match = _NAMED.search(exc.message or "")
    named = named_match.group(1).lower() if named_match else diag.values.get("calls")
    callee = named or diag.values.get("raised_in")
    caller = diag.values.get("called_from") if not named else diag.values.get("raised_in")
    api = _API.match(exc.message or "")
    if caller is None and named is None and api and exc.exception == "TypeError" and callee is not None:
        # Raised inside an installed package at a call it makes: the API it calls changed.
        caller, callee = callee, api.group(1)
    if callee is None or caller == callee or (caller is None and named is None):
        return None
    if caller is None and named_match is None and exc.exception != "TypeError":
        return None  # a module named only by the code line is evidence enough for a call, not an attribute
    caller_version = context.versions.get(caller) if caller else None
    wanted = _wanted(kb, caller, caller_version, callee)
    return VersionMismatch(
        callee=callee,
        caller=caller,
        callee_version=context.versions.get(callee),
        caller_version=caller_version,
        wanted=wanted[0] if wanted else None,
        wanted_source=wanted[1] if wanted else None,
    )


def _wanted(kb: KnowledgeBase, caller: str | None, version: str | None, callee: str) -> tuple[str, str] | None:
    """What the caller's release (or, version unknown, its newest known release) asks of the callee."""
    if caller is None:
        return None
    framework, package = caller.replace("_", "-"), callee.replace("_", "-")
    pins = [p for p in kb.pins if p.framework == framework and package in p.requires]
    if not pins:
        return None
    exact = [p for p in pins if version is not None and parse_version(p.version) == parse_version(version)]
    pin = exact[0] if exact else max(pins, key=lambda p: parse_version(p.version))
    release = f"{framework} {pin.version}" + ("" if exact else ", the newest release rlfix knows")
    return pin.requires[package], f"{release}: {pin.source}"


def with_mismatch(diag: Diagnosis, kb: KnowledgeBase, context: JobContext) -> Diagnosis:
    """An uncaught exception between two packages, re-read as the version mismatch it is."""
    if not diag.signature.fallback or MISMATCH_ID not in kb:
        return diag
    mismatch = find_mismatch(diag, kb, context)
    if mismatch is None:
        return diag
    cls = diag.details.exception.exception if diag.details.exception else "error"
    if mismatch.caller is None:
        reason = f"a {cls} about {mismatch.callee}: the installed version is not the one this code expects"
    else:
        where = f"{mismatch.caller} calls {mismatch.callee}"
        reason = f"a {cls} raised where {where}: the installed versions do not fit together"
    return replace(
        diag,
        signature=kb.require(MISMATCH_ID),
        details=replace(diag.details, mismatch=mismatch, similar=None),
        reasons=(reason, *diag.reasons[1:]),
    )
