"""Everything seen for one signature, bounded however often it matches."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rlfix.model import Concept, Evidence, KnownMessage, Signature
from rlfix.templates import template

#: Distinct evidence lines kept per signature; the rest are only counted.
MAX_SAMPLES = 5
#: Distinct ranks / workers / nodes remembered per signature.
MAX_PLACES = 4096
#: Extracted values that tell two samples apart even when their lines' templates (numbers masked)
#: are the same: an Xid's number decides what to do with the job (conclude/actions.py).
DISTINCT_VALUES = ("xid",)


def sample_key(message: str, values: Mapping[str, str] | None = None) -> str:
    """What makes a line a new sample: its template, and any value of `DISTINCT_VALUES` it carries."""
    key = template(message)
    for name in DISTINCT_VALUES:
        if values and name in values:
            key += f"\x00{name}={values[name]}"
    return key


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
    _sources: set[str] = field(default_factory=set)
    #: The concept or known message that named these lines, when no exact pattern of the signature did.
    concept: Concept | KnownMessage | None = None

    @property
    def first(self) -> Evidence:
        """The earliest line: by time across inputs when the times compare, else the first read."""
        return self.samples[0]

    def wants(self, message: str, source: str | None = None, values: Mapping[str, str] | None = None) -> bool:
        """Whether a line with this message (and extracted values) would be kept as a sample (not just
        counted), or, from an input not seen yet, could be the earliest line."""
        if source is not None and source not in self._sources and len(self._sources) < MAX_PLACES:
            return True
        return len(self.samples) < MAX_SAMPLES and sample_key(message, values) not in self._messages

    def seen_source(self, source: str) -> bool:
        """Whether a line from this input was counted (or there are too many inputs to tell)."""
        return source in self._sources or len(self._sources) >= MAX_PLACES

    def note(self, rank: int | None, worker: str | None, node: str | None, repeat: int = 1) -> None:
        """Count one matching line that adds no sample: where it came from, and how many times."""
        self.count += max(repeat, 1)
        if rank is not None and len(self.ranks) < MAX_PLACES:
            self.ranks.add(rank)
        if worker and len(self.workers) < MAX_PLACES:
            self.workers.add(worker)
        if node and len(self.nodes) < MAX_PLACES:
            self.nodes.add(node)

    def add(self, evidence: Evidence) -> bool:
        """Count one matching line; returns True the first time this signature is seen."""
        first_time = self.count == 0
        self.note(evidence.rank, evidence.worker, evidence.node, evidence.repeat)
        for key, value in evidence.values.items():
            self.values.setdefault(key, value)
        new_source = evidence.source not in self._sources and len(self._sources) < MAX_PLACES
        if new_source:
            self._sources.add(evidence.source)
            # Within one input, the first line read is the earliest; another input's first line
            # may be earlier by its clock (a worker's file read before the raylet's, say).
            if self.samples and evidence.before(self.samples[0]):
                self._lead(evidence)
                return first_time
        # The same message from many ranks is one sample "seen on N ranks", not N samples; numbers,
        # paths and ids are masked so "[Rank 3] ... SeqNum=5" and "[Rank 4] ... SeqNum=5" are one.
        if len(self.samples) < MAX_SAMPLES:
            key = sample_key(evidence.message, evidence.values)
            if key not in self._messages:
                self._messages.add(key)
                self.samples.append(evidence)
        return first_time

    def _lead(self, evidence: Evidence) -> None:
        """Put an earlier line first, in place of a later sample with the same message or the last."""
        key = sample_key(evidence.message, evidence.values)
        same = [i for i, e in enumerate(self.samples) if sample_key(e.message, e.values) == key]
        if same:
            self.samples.pop(same[0])
        elif len(self.samples) >= MAX_SAMPLES:
            dropped = self.samples.pop()
            self._messages.discard(sample_key(dropped.message, dropped.values))
        self._messages.add(key)
        self.samples.insert(0, evidence)
