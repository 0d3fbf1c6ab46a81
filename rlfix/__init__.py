"""rlfix: ranked root causes, with evidence and fix flags, for crashed RL / LLM training jobs.

>>> import rlfix
>>> report = rlfix.diagnose("job.log")          # doctest: +SKIP
>>> report.top.id, report.top.first.line        # doctest: +SKIP
>>> fleet = rlfix.triage("runs/")               # doctest: +SKIP
>>> fleet.groups[0].cause, fleet.groups[0].count  # doctest: +SKIP
"""

from __future__ import annotations

# Registers the output formats with Report (the data layer never imports the presentation layer).
import rlfix.render  # noqa: F401
from rlfix.api import diagnose, excerpt
from rlfix.core import Triage
from rlfix.errors import InputError, KnowledgeError, RlfixError, UsageError
from rlfix.fleet import Fleet, triage
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.model import Action, Decision, Evidence, Flag, Kind, Owner, Severity, Signature
from rlfix.report import Diagnosis, Remedy, Report
from rlfix.retry import RetryDecision, RetryPolicy
from rlfix.version import __version__

__all__ = [
    "Action",
    "Decision",
    "Diagnosis",
    "Evidence",
    "Flag",
    "Fleet",
    "InputError",
    "Kind",
    "KnowledgeBase",
    "KnowledgeError",
    "Owner",
    "Remedy",
    "Report",
    "RetryDecision",
    "RetryPolicy",
    "RlfixError",
    "Severity",
    "Signature",
    "Triage",
    "UsageError",
    "__version__",
    "diagnose",
    "excerpt",
    "load_knowledge",
    "triage",
]
