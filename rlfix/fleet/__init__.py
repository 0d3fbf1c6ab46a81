"""Triage a fleet of jobs at once: `triage(paths)` -> `Fleet`, one row per cause (see docs/cli.md)."""

from __future__ import annotations

# Registers the fleet's output formats with Fleet.render (the data never imports its presentation).
import rlfix.fleet.render  # noqa: F401
from rlfix.fleet.gather import triage
from rlfix.fleet.model import Fleet, Group, JobSummary

__all__ = ["Fleet", "Group", "JobSummary", "triage"]
