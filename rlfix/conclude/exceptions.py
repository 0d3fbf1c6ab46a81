"""An uncaught exception understood by its class: the class often names the failure outright.

`ModuleNotFoundError` is a missing module, `FileNotFoundError` a missing file, whatever the message
says (and a Ray wrapper line `RayTaskError(ModuleNotFoundError)` may be all a paste holds).
`OutOfMemoryError` is the one ambiguous name: torch's GPU OOM and Ray's memory monitor both use it,
so the traceback decides: raised in Ray's own code it is Ray's memory monitor, anywhere else the GPU.
"""

from __future__ import annotations

from dataclasses import replace

from rlfix.kb.load import KnowledgeBase
from rlfix.report import Diagnosis

#: Exception class (last dotted part) -> the signature it names.
BY_CLASS = {
    "ModuleNotFoundError": "python-module-missing",
    "FileNotFoundError": "file-not-found",
    "PermissionError": "permission-denied",
    "MemoryError": "host-memory-error",
}


#: Where an exception was raised -> the failure that place means, whatever the class.
BY_RAISE_SITE = (("/ray/_private/runtime_env/", "ray-runtime-env-failed"),)


def signature_for(exception: str, raised_in: str | None, raised_at: str = "") -> str | None:
    """The signature id an exception names by its class or its raise site."""
    for place, sig_id in BY_RAISE_SITE:
        if place in raised_at.replace("\\", "/"):
            return sig_id
    name = exception.rsplit(".", 1)[-1]
    if name == "OutOfMemoryError":
        return "ray-oom-killer" if raised_in == "ray" else "cuda-oom"
    return BY_CLASS.get(name)


def with_exception_class(diag: Diagnosis, kb: KnowledgeBase) -> Diagnosis:
    """The fallback re-read as the signature its exception class names, when the class names one."""
    exc = diag.details.exception
    if not diag.signature.fallback or exc is None or not exc.exception:
        return diag
    sig_id = signature_for(exc.exception, diag.values.get("raised_in"), exc.raised_at or "")
    if sig_id is None or sig_id not in kb:
        return diag
    reason = f"the exception ({exc.exception}, raised at {exc.raised_at or 'an unknown place'}) names this failure"
    return replace(diag, signature=kb.require(sig_id), reasons=(reason, *diag.reasons[1:]))


def exception_ids() -> tuple[str, ...]:
    """Every signature id the rules above can name."""
    return (*BY_CLASS.values(), *(sig_id for _place, sig_id in BY_RAISE_SITE), "cuda-oom", "ray-oom-killer")
