"""Which machine a finding happened on, read from its evidence: what `triage --action cordon-node` lists.

A node to cordon is named by the best thing its lines say: the host name a syslog or journal line
starts with, else the IP Ray's prefix gave the worker, else the PCI bus id of the GPU in an Xid line.
A finding whose lines say none of these has no node ("node unknown" in the fleet): a job name is
never passed off as a node.
"""

from __future__ import annotations

import re

from rlfix.model import Evidence
from rlfix.report import Diagnosis

#: `Oct  1 13:00:00 gpu-node-7 kernel: ...` (syslog) or `2025-10-01T13:00:00+00:00 gpu-node-7 kernel: ...`
#: (journalctl -o short-iso), optionally after dmesg's `[  123.45]`.
_SYSLOG_HOST = re.compile(
    r"^(?:\[[^\]]{1,40}\]\s*)?(?:[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}T[\d:.+\-Z]{8,25})"
    r" (?P<host>[A-Za-z0-9][A-Za-z0-9._-]{0,62}) (?:kernel|nvidia-[a-z]+|systemd)\S*:"
)
#: `NVRM: Xid (PCI:0000:9d:00): 79, ...`
_PCI = re.compile(r"\bXid \((?P<pci>PCI:[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)\)")
#: What the fleet says for a finding whose lines name no machine.
UNKNOWN_NODE = "node unknown"


def node_of(e: Evidence) -> str | None:
    """The machine one evidence line names: host name, else IP, else GPU PCI bus id (None: none)."""
    host = _SYSLOG_HOST.match(e.text)
    if host:
        return host["host"]
    if e.node:
        return e.node
    pci = _PCI.search(e.text)
    return pci["pci"] if pci else None


def node_names(diag: Diagnosis) -> tuple[str, ...]:
    """Every machine the finding's evidence names, in order, each once; PCI bus ids only where no
    line names a host or an IP (they would be the same machine said twice)."""
    hosts: dict[str, None] = dict.fromkeys(diag.nodes)
    buses: dict[str, None] = {}
    for e in diag.evidence:
        name = node_of(e)
        if name:
            (buses if name.startswith("PCI:") else hosts).setdefault(name, None)
    return tuple(hosts or buses)
