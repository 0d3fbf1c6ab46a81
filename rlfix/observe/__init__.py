"""Streaming observers of hits: job context, tracebacks, unknown errors, progress."""
