"""Matching: normalise lines, prefilter blocks by literal anchors, verify with regexes -> hits."""

from rlfix.match.matcher import Hit, Matcher, Probe

__all__ = ["Hit", "Matcher", "Probe"]
