"""Typed details for ranked diagnoses: the uncaught exception behind the fallback, and quantities."""

from __future__ import annotations

from dataclasses import replace

from rlfix.conclude.quantities import describe_quantities
from rlfix.conclude.unrecognized import similar_signatures
from rlfix.details import ExceptionInfo
from rlfix.kb.load import KnowledgeBase
from rlfix.report import Diagnosis


def with_exception(diag: Diagnosis, kb: KnowledgeBase) -> Diagnosis:
    """The fallback's exception class, message and raising frame, and the nearest known signatures."""
    if not diag.signature.fallback:
        return diag
    # Ray prints the wrapper (`RayTaskError(KeyError)`) before the real line (`KeyError: 'answer'`):
    # the class comes from the first, the message from the second; both arrive as values.
    values = diag.values
    info = ExceptionInfo(values.get("exception"), values.get("message"), values.get("raised_at"))
    details = replace(diag.details, exception=info, similar=similar_signatures(kb, diag.first.message))
    return replace(diag, details=details)


def with_quantities(diag: Diagnosis) -> Diagnosis:
    """The numbers in the evidence said in words, when the signature has a rule for them."""
    said = describe_quantities(diag.id, diag.values)
    return replace(diag, details=replace(diag.details, quantities=tuple(said))) if said else diag
