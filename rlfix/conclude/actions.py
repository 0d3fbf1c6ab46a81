"""What to do with the job, per finding: the signature's decision, except where the evidence says more.

Two cases decide differently from the signature's `action:`:

- `gpu-hardware-fault` takes its action from the Xid numbers in its evidence, by the resolution
  bucket (immediate action) of NVIDIA's Xid catalogue: a GPU to reset or a node to reboot is a node
  to cordon; an error contained to the application (Xid 94) is a restart; the Xids that usually
  come from the application's own kernels (13, 31, 43) are not the GPU's fault at all;
- a cause only inferred from how the job ended (no line named it) is investigated, never retried.
"""

from __future__ import annotations

from dataclasses import replace

from rlfix.conclude.tail import INFERRED
from rlfix.model import INVESTIGATE, Action, Decision, Owner, bounded_int
from rlfix.report import Diagnosis

#: The signature whose action each Xid decides.
HARDWARE_FAULT = "gpu-hardware-fault"
#: The value the signature's `extract:` reads from an Xid line (`NVRM: Xid (PCI:0000:3b:00): 79, ...`).
XID = "xid"

#: NVIDIA's Xid catalogue, resolution bucket (immediate action), for the Xids training jobs meet
#: (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html; the same buckets as
#: NVIDIA's NVSentinel xiderrorsmapping.csv at 6f8b0fcf, whose words these are; 48 and 74 name
#: NVIDIA's own workflows, which start with a GPU reset).
XID_BUCKETS: dict[int, str] = {
    8: "RESTART_APP",
    13: "RESTART_APP",
    31: "RESTART_APP",
    43: "IGNORE",
    45: "IGNORE",
    46: "RESET_GPU",
    48: "WORKFLOW_XID_48",  # double-bit ECC: a GPU reset, then the retired pages are checked
    61: "CONTACT_SUPPORT",
    62: "RESET_GPU",
    63: "IGNORE",
    64: "RESET_GPU",
    74: "WORKFLOW_NVLINK_ERR",  # NVLink: a GPU reset, then the links are checked
    79: "RESTART_BM",
    92: "IGNORE",
    94: "RESTART_APP",
    95: "RESET_GPU",
    109: "RESET_GPU",
    110: "RESET_GPU",
    119: "RESET_GPU",
    120: "RESET_GPU",
    122: "CONTACT_SUPPORT",
    123: "CONTACT_SUPPORT",
    136: "RESET_GPU",
    140: "RESET_GPU",
    143: "RESET_GPU",
}
#: Xids that NVIDIA lists as usually the application's own fault (an illegal address, an MMU fault).
APPLICATION_XIDS = frozenset({13, 31, 43})
#: How strongly each action takes a node out: the strongest Xid of a finding decides.
_STRENGTH = {Action.CORDON_NODE: 3, Action.RETRY: 2, Action.INVESTIGATE: 1}


def xid_decision(xid: int) -> Decision:
    """The action for one Xid number, from its bucket in NVIDIA's catalogue."""
    bucket = XID_BUCKETS.get(xid)
    if xid in APPLICATION_XIDS:
        return Decision(
            Action.INVESTIGATE,
            Owner.USER_CODE,
            f"Xid {xid} is usually the application's own fault (NVIDIA: restart the app, check it), not the GPU's",
        )
    if bucket in ("RESET_GPU", "RESTART_BM", "CONTACT_SUPPORT") or (bucket or "").startswith("WORKFLOW_"):
        return Decision(
            Action.CORDON_NODE,
            Owner.HARDWARE,
            f"Xid {xid}: NVIDIA's resolution bucket is {bucket}: take the node out until the GPU is reset or repaired",
        )
    if bucket == "RESTART_APP":
        return Decision(
            Action.RETRY,
            Owner.HARDWARE,
            f"Xid {xid}: NVIDIA's resolution bucket is RESTART_APP: the error was contained, the GPU stays usable",
        )
    return Decision(
        Action.INVESTIGATE,
        Owner.HARDWARE,
        f"Xid {xid}: NVIDIA's resolution bucket asks for no immediate action: it is unlikely to be what ended the job",
    )


def xids(diag: Diagnosis) -> tuple[int, ...]:
    """The Xid numbers in a finding's evidence, in order, each once (the tally keeps a sample per
    number: `rlfix.observe.tally.DISTINCT_VALUES`)."""
    found: dict[int, None] = {}
    for e in diag.evidence:
        number = bounded_int(e.values.get(XID))
        if number is not None:
            found.setdefault(number, None)
    return tuple(found)


def with_decision(diag: Diagnosis) -> Diagnosis:
    """`diag`, with the decision its evidence calls for where that differs from its signature's."""
    if diag.id == HARDWARE_FAULT:
        numbers = xids(diag)
        if numbers:
            decisions = [xid_decision(x) for x in numbers]
            return replace(diag, override=max(decisions, key=lambda d: _STRENGTH.get(d.action, 0)))
        return diag
    if INFERRED in diag.values:
        return replace(diag, override=INVESTIGATE)
    return diag
