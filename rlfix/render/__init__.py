"""Rendering a Report as text, JSON, Markdown or HTML."""
