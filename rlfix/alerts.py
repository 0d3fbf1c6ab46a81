"""Live alerts: the callback type and the one line every live mode prints."""

from __future__ import annotations

from collections.abc import Callable

from rlfix import safe
from rlfix.gate import mask_text
from rlfix.model import Evidence

#: Seconds a followed log may stay idle, once a fatal root cause is known, before live modes stop.
DEFAULT_IDLE_EXIT = 30.0

#: Called with the first evidence of a signature and its id, the moment it first matches.
Alert = Callable[[Evidence, str], None]


def format_alert(evidence: Evidence, sig_id: str) -> str:
    """One line naming the root cause and where it was seen."""
    where = f" [{evidence.where}]" if evidence.where else ""
    # Through the gate, then shown on a terminal: one line, controls and bidi characters escaped.
    return safe.one_line(
        mask_text(f"rlfix: ALERT {sig_id} at {evidence.source}:{evidence.line}{where}: {evidence.text}")
    )
