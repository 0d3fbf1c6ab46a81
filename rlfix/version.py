"""The version of rlfix (one place, read by the package, reports and pages)."""

__version__ = "0.1.0"
