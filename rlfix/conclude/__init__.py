"""Concluding: tallies and observations -> a ranked, immutable Report."""
