"""`--notify URL`: a short, masked message when a job ends in failure, sent through Apprise.

Apprise (an optional extra: `pip install 'rlfix[notify]'`) speaks Slack, Teams, Discord, e-mail,
Telegram, plain JSON webhooks and some hundred services, each named by a URL (`slack://...`,
`msteams://...`, `json://host/path`). rlfix sends one message per job, only for a failure
(never for warnings or a healthy run), after the job ended: the report's `message` rendering,
which passes the output gate like every format. The URL holds the service's token: it is never
printed, and errors about it are masked.
"""

from __future__ import annotations

import logging
import os

from rlfix.errors import RlfixError, UsageError
from rlfix.gate import mask_text
from rlfix.report import Report

#: The environment variable that gives the URL when `--notify` does not.
ENV = "RLFIX_NOTIFY"


class NotifyError(RlfixError):
    """The message could not be sent (the job's own result stands: callers warn, never fail on it)."""


def notify_url(url: str | None = None) -> str | None:
    """The URL to notify: `url`, else RLFIX_NOTIFY, else None."""
    chosen = url if url is not None else os.environ.get(ENV, "")
    return chosen.strip() or None


def notify(report: Report, url: str | None = None, *, job: str | None = None, lang: str = "en") -> bool:
    """Send a short message about `report` to `url` (an Apprise URL; default: RLFIX_NOTIFY).

    Returns True when a message was sent, False when there was nothing to send (the report is
    not a failure, or no URL is configured). Raises `NotifyError` when sending failed and
    `UsageError` when Apprise is not installed or the URL is not one it knows.
    """
    target = notify_url(url)
    if target is None or not report.failed:
        return False
    try:
        import apprise
    except ImportError:
        raise UsageError("--notify needs Apprise: pip install 'rlfix[notify]'") from None
    title, _, body = report.render("message", job=job, lang=lang).partition("\n")
    sender = apprise.Apprise()
    # Apprise logs failures with the URL (and its token) in them: keep its logger quiet, say it ourselves.
    quiet = logging.getLogger("apprise")
    level, propagate = quiet.level, quiet.propagate
    quiet.setLevel(logging.CRITICAL + 1)
    quiet.propagate = False
    try:
        if not sender.add(target):
            raise UsageError(mask_text(f"--notify: not a notification URL Apprise knows: {target}"))
        if not sender.notify(title=title, body=body.strip() or title, notify_type=apprise.NotifyType.FAILURE):
            raise NotifyError(mask_text(f"the service at {target} did not accept the message"))
    finally:
        quiet.setLevel(level)
        quiet.propagate = propagate
    return True
