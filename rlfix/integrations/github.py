"""GitHub Actions: the Markdown step summary that goes with `--format github`.

GitHub shows the file named by `$GITHUB_STEP_SUMMARY` on the run's page and refuses a step summary
over 1 MiB. The summary is the Markdown report (rendered through the gate, like every format),
with fewer findings when the whole one would not fit, and cut at a line as a last resort.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from rlfix.report import Report

#: The environment variable GitHub Actions sets to the step summary's file.
SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
#: GitHub's limit for one step's summary is 1 MiB; rlfix stays a little under it.
MAX_SUMMARY_BYTES = 1024 * 1024 - 4096
_CUT_NOTE = "\n\n*(rlfix: the summary was cut to stay under GitHub's 1 MiB limit)*\n"


def step_summary(report: Report, lang: str = "en", limit: int = MAX_SUMMARY_BYTES) -> str:
    """The Markdown summary of `report`, at most `limit` bytes of UTF-8."""
    for options in ({"show_all": True, "all_flags": True}, {"top": 3}, {"top": 1}):
        text = report.render("markdown", lang=lang, **options)
        if len(text.encode("utf-8")) <= limit:
            return text
    room = max(0, limit - len(_CUT_NOTE.encode("utf-8")))
    head = text.encode("utf-8")[:room].decode("utf-8", "ignore")
    return head[: head.rfind("\n") + 1] + _CUT_NOTE


def write_step_summary(
    report: Report, lang: str = "en", environ: Mapping[str, str] | None = None, limit: int = MAX_SUMMARY_BYTES
) -> str | None:
    """Append the summary to `$GITHUB_STEP_SUMMARY` when it is set; the file written, else None.

    Raises OSError when the file cannot be written (the caller warns; the annotations still count).
    """
    target = (environ if environ is not None else os.environ).get(SUMMARY_ENV)
    if not target:
        return None
    text = step_summary(report, lang, limit)
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(text)
    return target
