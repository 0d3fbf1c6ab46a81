"""Everything seen for one signature, bounded however often it matches."""

from __future__ import annotations

from dataclasses import dataclass, field

from rlfix.model import Evidence, Signature
from rlfix.templates import template

#: Distinct evidence lines kept per signature; the rest are only counted.
MAX_SAMPLES = 5
#: Distinct ranks / workers / nodes remembered per signature.
MAX_PLACES = 4096


@dataclass
class Tally:
    """Everything seen for one signature, bounded however often it matches."""

    signature: Signature
    samples: list[Evidence] = field(default_factory=list)
    count: int = 0
    ranks: set[int] = field(default_factory=set)
    workers: set[str] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)
    values: dict[str, str] = field(default_factory=dict)
    _messages: set[str] = field(default_factory=set)

    @property
    def first(self) -> Evidence:
        return self.samples[0]

    def wants(self, message: str) -> bool:
        """Whether a line with this message would be kept as a sample (not just counted)."""
        return len(self.samples) < MAX_SAMPLES and template(message) not in self._messages

    def add(self, evidence: Evidence) -> bool:
        """Count one matching line; returns True the first time this signature is seen."""
        first_time = self.count == 0
        self.count += max(evidence.repeat, 1)
        if evidence.rank is not None and len(self.ranks) < MAX_PLACES:
            self.ranks.add(evidence.rank)
        if evidence.worker and len(self.workers) < MAX_PLACES:
            self.workers.add(evidence.worker)
        if evidence.node and len(self.nodes) < MAX_PLACES:
            self.nodes.add(evidence.node)
        for key, value in evidence.values.items():
            self.values.setdefault(key, value)
        # The same message from many ranks is one sample "seen on N ranks", not N samples; numbers,
        # paths and ids are masked so "[Rank 3] ... SeqNum=5" and "[Rank 4] ... SeqNum=5" are one.
        if len(self.samples) < MAX_SAMPLES:
            key = template(evidence.message)
            if key not in self._messages:
                self._messages.add(key)
                self.samples.append(evidence)
        return first_time
