"""rlfix: ranked root causes, with evidence and fix flags, for crashed RL / LLM training jobs.

>>> import rlfix
>>> report = rlfix.diagnose("job.log")          # doctest: +SKIP
>>> report.top.id, report.top.first.line        # doctest: +SKIP
"""

from __future__ import annotations

__version__ = "0.1.0"

from rlfix.api import diagnose
from rlfix.errors import InputError, KnowledgeError, RlfixError, UsageError
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.model import Evidence, Flag, Kind, Severity, Signature
from rlfix.report import Diagnosis, Remedy, Report
from rlfix.triage import Triage

__all__ = [
    "Diagnosis",
    "Evidence",
    "Flag",
    "InputError",
    "Kind",
    "KnowledgeBase",
    "KnowledgeError",
    "Remedy",
    "Report",
    "RlfixError",
    "Severity",
    "Signature",
    "Triage",
    "UsageError",
    "__version__",
    "diagnose",
    "load_knowledge",
]
