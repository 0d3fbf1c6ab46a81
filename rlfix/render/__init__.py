"""Rendering a `Report` as text, JSON, Markdown or HTML: formatting only, no conclusions.

Importing this package registers every format in `rlfix.report.RENDERERS`, which is how
`Report.render()` and `Report._repr_html_` find them without the data layer importing this one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rlfix.render.excerpt import render_excerpt
from rlfix.render.github import render_github
from rlfix.render.html import render_html
from rlfix.render.markdown import render_markdown
from rlfix.render.message import render_message
from rlfix.render.sarif import render_sarif
from rlfix.render.text import DEFAULT_TOP, color_wanted, render_text
from rlfix.report import RENDERERS, Report

__all__ = ["DEFAULT_TOP", "FORMATS", "MACHINE_FORMATS", "RENDERERS", "RenderOptions", "color_wanted", "render"]


@dataclass(frozen=True)
class RenderOptions:
    """How much of a report to show; every renderer takes these (and ignores what it cannot show)."""

    #: Diagnoses shown (None: all); `show_all` overrides it.
    top: int | None = DEFAULT_TOP
    show_all: bool = False
    #: Flags for frameworks the log does not show, too.
    all_flags: bool = False
    #: Every evidence sample instead of the first few.
    verbose: bool = False
    #: ANSI colour (text only).
    color: bool = False
    #: A fragment instead of a page (HTML only; notebooks use it).
    compact: bool = False
    #: The language people read it in: "en" or "zh" (rlfix.i18n.resolve picks it from --lang and the locale).
    #: JSON is the same in every language.
    lang: str = "en"

    def for_format(self, fmt: str) -> dict[str, Any]:
        """The options as keyword arguments for the renderer of `fmt`."""
        options = asdict(self)
        if fmt != "text":
            options.pop("color")
        if fmt != "html":
            options.pop("compact")
        if fmt in MACHINE_FORMATS:
            options.pop("lang")
        return options


def _json(report: Report, **_: Any) -> str:
    return report.to_json()


RENDERERS.update(
    {
        "text": render_text,
        "json": _json,
        "markdown": render_markdown,
        "md": render_markdown,
        "html": render_html,
        # A short plain-text message for chat (`--notify`): not a `-f` choice.
        "message": render_message,
        # `rlfix excerpt`: the lines that matter for an issue or a prompt (see rlfix.api.excerpt).
        "excerpt": render_excerpt,
        # For CI: code scanning (SARIF 2.1.0) and GitHub Actions annotations.
        "sarif": render_sarif,
        "github": render_github,
    }
)

#: Formats a user can ask for (`md` is an alias of `markdown`).
FORMATS = ("text", "json", "markdown", "html", "sarif", "github")
#: Formats for programs, the same in every language.
MACHINE_FORMATS = ("json", "sarif")


def render(report: Report, fmt: str = "text", options: RenderOptions | None = None) -> str:
    """Render `report` in one of FORMATS."""
    return report.render(fmt, **(options or RenderOptions()).for_format(fmt))
