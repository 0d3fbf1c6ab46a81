"""The streaming core behind every face of rlfix: feed lines or streams, ask for a report."""

from __future__ import annotations

import functools
import io
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import BinaryIO

from rlfix.alerts import Alert
from rlfix.clock import Moment, parse
from rlfix.conclude import Observations, conclude
from rlfix.details import ExitStatus
from rlfix.errors import InputError
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.match.lines import NUMPY_AFTER
from rlfix.match.matcher import Budget, Hit, Matcher, Probe, ProbeKind, release_buffers, scan_buffers
from rlfix.match.parallel import ParallelFeed
from rlfix.match.ranges import Candidate
from rlfix.model import Evidence, Kind, LazyRegex, Line
from rlfix.observe.collectives import CollectiveTracker
from rlfix.observe.concepts import ConceptTier
from rlfix.observe.context import ContextTracker, context_probes
from rlfix.observe.progress import StepWatch, snapshot
from rlfix.observe.recent import RecentLines
from rlfix.observe.tail import T, TailWatch
from rlfix.observe.tally import Tally
from rlfix.observe.tracebacks import CODE_LINE, TracebackTracker, called_module, describe_exception, traceback_probes
from rlfix.observe.unknown import UnknownTracker, unknown_probes
from rlfix.read.files import FileView, file_size
from rlfix.read.inputs import Input, Problem, expand
from rlfix.redact import redact_secrets
from rlfix.report import Report, SourceStats

#: Bytes before a failure searched for the stage and the last step.
LOOKBACK = 1024 * 1024
#: Evidence points kept for the timeline view (the first ones: the cascade starts early).
MAX_TIMELINE = 5000
#: Timeline points per signature: a warning repeated all run long is drawn by its first this-many
#: (and counted in full), and its repeats cost no redaction.
MAX_TIMELINE_EACH = 200
#: Characters of a matched line kept as evidence (centred on the match when the line is longer).
EVIDENCE_CHARS = 600


@lru_cache(maxsize=8)
def matcher_for(kb: KnowledgeBase, engine: str) -> Matcher:
    """The matcher for a knowledge base and engine, with every observer probe (cached)."""
    observers = context_probes() + traceback_probes() + unknown_probes()
    return Matcher.for_knowledge(kb, observers, engine=engine)


class Triage:
    """Accumulates evidence from lines or streams and ranks it on demand.

    >>> t = Triage()
    >>> t.feed("RuntimeError: CUDA error: an illegal memory access was encountered")
    >>> t.report().top.id
    'cuda-illegal-memory-access'

    `on_new(evidence, signature_id)` is called the first time each signature matches, which is
    what live modes use to alert as soon as a root cause appears.
    """

    def __init__(
        self,
        kb: KnowledgeBase | None = None,
        *,
        kb_dirs: Sequence[str | os.PathLike[str]] = (),
        engine: str = "auto",
        redact: bool = True,
        on_new: Alert | None = None,
        baseline: Report | None = None,
        timeline: bool = True,
    ) -> None:
        self.kb = kb if kb is not None else load_knowledge([os.fspath(d) for d in kb_dirs])
        self.matcher = matcher_for(self.kb, engine)
        self.context = ContextTracker(redact=redact)
        # `rlfix run` renders no timeline: without one, repeats of a known line cost no redaction.
        self._max_timeline = MAX_TIMELINE if timeline else 0
        self.redact, self.on_new, self.baseline = redact, on_new, baseline
        self._tracebacks = TracebackTracker()
        self._budget = self.matcher.budget()
        self._budget.on_repeat = self._repeat
        # The last two blocks scanned (or recent lines fed one by one): what preceded a failure.
        self._blocks: deque[tuple[bytearray | bytes, int]] = deque(maxlen=2)
        self._recent = RecentLines()
        # Allocated on the first stream, then reused for every input: a thousand small files must
        # not cost a thousand pairs of multi-megabyte blocks.
        self._buffers: tuple[bytearray, bytearray] | None = None
        self._progress: dict[str, tuple[str | None, int | None]] = {}
        self._steps = StepWatch()
        self._unknown, self._concepts = UnknownTracker(), ConceptTier(self.kb)
        self._tallies: dict[str, Tally] = {}
        # The last bare exception line and the last error line: a log that ends with one is a crash.
        self._collectives = CollectiveTracker()
        self._bare: TailWatch[tuple[Hit, int, dict[str, str]]] = TailWatch()
        self._last_error: TailWatch[Evidence] = TailWatch()
        self._timeline: list[tuple[str, Evidence]] = []
        self._drawn: dict[str, int] = {}
        # Per input, its first stamp with a date: the year of its stamps without one.
        self._dated: dict[str, Moment] = {}
        self._sources: list[SourceStats] = []
        # Bytes of the inputs read so far (`_read`: past NUMPY_AFTER, numpy counts lines even in
        # small files), blocks scanned, matching lines seen.
        self._read = self._block_seq = self._order = 0
        self._errors: list[str] = []
        self._feed_source = self._feed_raw = "<lines>"
        self._feed_lines = self._feed_bytes = 0
        self.exit_status: ExitStatus | None = None
        # The regular file being read, for looking back from a hit by its position.
        self._file: FileView | None = None
        self.engine_choice = engine

    # --- input -----------------------------------------------------------------------

    def feed(self, line: str | bytes, source: str | None = None, number: int | None = None) -> None:
        """Add one line (trailing newline optional); `number` keeps a line number known upstream."""
        if source is not None and source != self._feed_raw:
            self._close_feed()
            self._feed_raw, self._feed_source = source, self._name(source)
        self._feed_lines += 1
        position = self._feed_bytes
        self._feed_bytes += len(line)
        at = self._feed_lines if number is None else number
        self._recent.append(line if isinstance(line, bytes) else line.encode("utf-8", "surrogateescape"))
        self.matcher.scan_line(line, at, self._feed_source, self._sink, self._budget, position)

    def feed_lines(self, lines: Iterable[str | bytes], source: str = "<lines>") -> None:
        """Add many lines from one source."""
        for line in lines:
            self.feed(line, source)

    def feed_stream(self, stream: BinaryIO, source: str) -> None:
        """Scan a binary stream in blocks (the fast path for files and pipes)."""
        self._close_feed()
        self._blocks.clear()
        source = self._name(source)
        lines, size = self.matcher.scan_stream(
            stream,
            source,
            self._sink,
            budget=self._budget,
            on_block=self._on_block,
            buffers=self._scan_buffers(),
            fast=self._read >= NUMPY_AFTER,
        )
        self._read += size
        self._sources.append(SourceStats(source, lines, size))
        for watch in (self._bare, self._last_error):
            watch.judge_blocks(source, self._blocks, self._block_seq)
        if self._steps.wants(source):
            # A stream keeps only its last two blocks to look back into.
            tail = b"".join(bytes(block[:end]) for block, end in self._blocks)
            self._steps.ended(source, lambda at, n: tail[at : at + n], len(tail))

    def _scan_buffers(self) -> tuple[bytearray, bytearray]:
        """This triage's pair of scan blocks, taken from the process's spares (see `close`)."""
        if self._buffers is None:
            self._buffers = scan_buffers()
        return self._buffers

    def close(self) -> None:
        """Give the scan blocks back for the next triage of this process (feeding more later
        takes a pair again). A fleet scans thousands of jobs, one Triage each: fresh multi-MB
        blocks per job left the allocator holding hundreds of MB (about 130 KB a job)."""
        if self._buffers is not None:
            self._blocks.clear()
            release_buffers(self._buffers)
            self._buffers = None

    def _feed_file(self, item: Input, strict: bool) -> None:
        """A regular file: scanned as a stream, looked back into by position (as with `jobs` > 1)."""
        assert item.path is not None
        try:
            with item.path.open("rb") as fh:
                fh.seek(item.skip)
                source = self.begin_file(item)
                lines, size = self.matcher.scan_stream(
                    fh,
                    source,
                    self._sink,
                    budget=self._budget,
                    buffers=self._scan_buffers(),
                    fast=self._read >= NUMPY_AFTER,
                )
                self.end_file(source, lines, size)
        except OSError as exc:
            self._file = None
            self._problem(Problem(item.name, f"read failed: {exc.strerror or exc}"), strict)

    def begin_file(self, item: Input) -> str:
        """Start reading a regular file whose candidate lines come by position; returns its name."""
        assert item.path is not None
        self._close_feed()
        self._blocks.clear()
        self._file = FileView(item.path, item.skip)
        return self._name(item.name)

    def end_file(self, source: str, lines: int, size: int) -> None:
        """Finish the file `begin_file` started: record it and judge how it ended."""
        self._read += size
        self._sources.append(SourceStats(source, lines, size))
        view, self._file = self._file, None
        if view is not None:
            for watch in (self._bare, self._last_error):
                watch.judge_file(source, view.read, size)
            self._steps.ended(source, view.read, size)
            view.close()

    def check(self, source: str, first_line: int, candidates: Sequence[Candidate]) -> None:
        """Match candidate lines collected in another process (numbered from `first_line`)."""
        matcher, budget = self.matcher, self._budget
        run_end = -1  # the index of the last line of the current run (see `Candidate.same`)
        i = 0
        while i < len(candidates):
            c = candidates[i]
            if c.same:
                run_end = i + c.same
            matcher.check(c.data, c.hits, first_line + c.nth, source, self._sink, budget, c.position)
            # The rest of a run of one warning is counted at once, once a line of it has been.
            if i < run_end and matcher.count_again(c.data, source, c.position, budget, run_end - i):
                i = run_end
            i += 1

    def feed_text(self, text: str, source: str = "<text>") -> None:
        """Scan a string holding a whole log."""
        self.feed_stream(io.BytesIO(text.encode("utf-8", "surrogateescape")), source)

    def feed_paths(
        self,
        paths: Sequence[str | os.PathLike[str]],
        stdin: BinaryIO | None = None,
        strict: bool = False,
        follow_symlinks: bool = False,
        jobs: int = 1,
    ) -> None:
        """Scan files, directories and `-`; unreadable ones are recorded as errors (or raised if strict).

        A directory walk skips links that lead out of the directory unless `follow_symlinks`.
        With `jobs` > 1, files are prefiltered in that many processes, in byte ranges (see
        `rlfix.match.ranges`); the report is the same as with one.
        """
        items = expand(paths, stdin, follow_symlinks=follow_symlinks)
        if jobs > 1:
            ParallelFeed(self, jobs).run(items, strict)
            return
        for item in items:
            if isinstance(item, Problem):
                self._problem(item, strict)
                continue
            self._feed_input(item, strict)

    @property
    def budget(self) -> Budget:
        """This scan's allowance of the limited observer probes (and its prefilter)."""
        return self._budget

    def matcher_factory(self) -> Callable[[], Matcher]:
        """How a worker process makes this scan's matcher (a picklable call)."""
        return functools.partial(matcher_for, self.kb, self.engine_choice)

    def feed_input(self, item: Input, strict: bool) -> None:
        """Read one input (a file, stdin, a gzip file) whole, in this process."""
        self._feed_input(item, strict)

    def problem(self, problem: Problem, strict: bool) -> None:
        """Record an input that could not be read (raised when `strict`)."""
        self._problem(problem, strict)

    def _feed_input(self, item: Input, strict: bool) -> None:
        if file_size(item) >= 0:
            self._feed_file(item, strict)
            return
        try:
            stream = item.open()
        except OSError as exc:
            self._problem(Problem(item.name, exc.strerror or str(exc)), strict)
            return
        try:
            self.feed_stream(stream, item.name)
            damage = getattr(stream, "damage", None)
            if damage:
                # Every line decompressed before the fault was scanned; the rest of the file is lost.
                self._problem(Problem(item.name, damage), strict)
        except (OSError, EOFError) as exc:
            # A read error: keep what was read, report the rest.
            self._problem(Problem(item.name, f"read failed: {exc}"), strict)
        finally:
            if item.stream is None:
                stream.close()

    def _name(self, name: str) -> str:
        """A file name as reports show it: names can carry tokens (`run-hf_xxx.log`) too."""
        return redact_secrets(name) if self.redact else name

    def _problem(self, problem: Problem, strict: bool) -> None:
        problem = Problem(self._name(problem.name), problem.message, problem.skipped)
        if problem.skipped:
            self._sources.append(SourceStats(problem.name, 0, 0, skipped=problem.message))
            return
        if strict:
            raise InputError(str(problem))
        self._errors.append(str(problem))

    def set_exit_status(self, status: int | str | ExitStatus | None) -> None:
        """How the command behind the log ended: `137`, `-9`, `"SIGKILL"` (see `ExitStatus.parse`), or None.

        A death by signal becomes evidence when nothing in the log names a root cause, and a
        non-zero status makes the report `failed` even when nothing was recognised.
        """
        if status is None or isinstance(status, ExitStatus):
            self.exit_status = status
        else:
            self.exit_status = ExitStatus.parse(status)

    def add_error(self, message: str) -> None:
        """Record an input problem to show in the report (one line)."""
        self._errors.append(message)

    def add_skipped(self, name: str, reason: str) -> None:
        """Record an input that was not read, as a warning (a node that died meanwhile): the
        report stands on what was read, and its exit status is not an input error's."""
        self._problem(Problem(name, reason, skipped=True), strict=False)

    def _close_feed(self) -> None:
        if self._feed_lines:
            self._sources.append(SourceStats(self._feed_source, self._feed_lines, self._feed_bytes))
            self._feed_lines = 0
            self._feed_bytes = 0

    # --- matching --------------------------------------------------------------------

    def _sink(self, hit: Hit) -> None:
        owner = hit.probe.owner
        self._order += 1
        if hit.line.source not in self._dated:
            self._date(hit.line.timestamp, hit.line.source)
        if hit.probe.kind is not ProbeKind.SIGNATURE:
            self._observe(hit)
            return
        sig = self.kb.get(owner)
        if sig is None:
            return
        if not sig.fallback:
            self._concepts.exact = hit.line
        values = {k: v for k, v in hit.match.groupdict().items() if v is not None}
        # An exception line that closes a traceback says which frame raised it; a fallback match
        # outside any traceback is a printed message, not an uncaught exception.
        claimed = self._tracebacks.claim(hit.line)
        raised, uncaught = claimed if claimed is not None else ({}, False)
        if claimed is not None:
            self._concepts.raised = (hit.line, raised)
        if sig.fallback:
            # Only the code line above it, not the whole look-back window: bare exception lines can be many.
            raised = {**raised, **called_module(self._lookback(hit, CODE_LINE))}
            if not uncaught:
                # A bare exception line: not a crash by itself, unless the log ends with it.
                self._watch(self._bare, (hit, self._order, raised), hit)
                return
            values.update(raised)
        elif "raised_at" in raised:
            values.setdefault("raised_at", raised["raised_at"])
        values.update((k, v) for k, v in self._extracted(sig.extract, hit.line.message) if k not in values)
        tally = self._tallies.get(owner)
        keep = self._draws(owner)
        # Redaction runs only on lines a report can show: a repeat of a known line is just counted.
        shown = keep or tally is None or tally.wants(hit.line.message, hit.line.source, values)
        evidence = self._evidence(hit, self._order, values, shown)
        if "seq" in values and "op" in values:
            self._collectives.observe(evidence)
        if keep:
            self._timeline.append((owner, evidence))
            self._drawn[owner] = self._drawn.get(owner, 0) + 1
        if tally is None:
            tally = self._tallies[owner] = Tally(sig)
            if sig.kind is Kind.ROOT:
                window = self._lookback(hit)
                self._progress[owner] = snapshot(window)
                self._steps.root(owner, hit.line.source, window)
        if tally.add(evidence) and self.on_new is not None:
            self.on_new(evidence, owner)

    def _date(self, stamp: str | None, source: str) -> None:
        """Keep an input's first dated stamp: a year for its stamps without one (glog, vLLM)."""
        # A year starts the stamp (`2024-05-01 ...`) or ends it (dmesg -T): cheap tests, so that
        # an input with only yearless stamps costs no parse per line.
        if stamp and ((stamp[:1].isdigit() and stamp[4:5] == "-") or stamp[:1].isalpha()):
            moment = parse(stamp, source)
            if moment is not None and moment.absolute:
                self._dated[source] = moment

    def _repeat(self, probes: tuple[Probe, ...], line: Line, again: int) -> bool:
        """Count a repeat of a line these signatures matched before, when that is all the full path
        would do with it: no new input, no new sample, no timeline point, no traceback to close.
        `again` > 0: the matcher vouches for that many lines the same as the last repeat counted
        (see `RepeatHook`)."""
        tallies = [self._tallies.get(p.owner) for p in probes]
        if not again:
            for probe, tally in zip(probes, tallies, strict=True):
                if tally is None or not tally.seen_source(line.source) or self._draws(probe.owner):
                    return False
            if self._tracebacks.open_streams:
                return False
            if line.source not in self._dated:
                self._date(line.timestamp, line.source)
        times = max(again, 1)
        for tally in tallies:
            assert tally is not None
            self._order += times
            tally.note(line.rank, line.worker, line.node, line.repeat * times)
        return True

    def _draws(self, owner: str) -> bool:
        """Whether the next line of this signature becomes a timeline point."""
        return len(self._timeline) < self._max_timeline and self._drawn.get(owner, 0) < MAX_TIMELINE_EACH

    def _extracted(self, extract: Sequence[tuple[str, LazyRegex]], message: str) -> Iterator[tuple[str, str]]:
        """Values of a signature's `extract:` regexes, under the same time budget as its patterns."""
        for name, pattern in extract:
            try:
                m = pattern.search(message, timeout=self.matcher.timeout)
            except TimeoutError:
                continue
            if m:
                value = m.group(name) if name in m.groupdict() else m.group(1)
                if value is not None:
                    yield name, value

    def _on_block(self, block: bytearray | bytes, end: int) -> None:
        self._blocks.append((block, end))
        self._block_seq += 1

    def _watch(self, watch: TailWatch[T], item: T, hit: Hit) -> None:
        if self._file is not None:
            watch.saw(item, hit.line.source, -1, self._block_seq, self._feed_lines, hit.position)
        else:
            watch.saw(item, hit.line.source, hit.offset, self._block_seq, self._feed_lines)

    def _lookback(self, hit: Hit, size: int = LOOKBACK) -> bytes:
        """Up to `size` bytes just before a hit: from its file, from the block so far (and the
        previous block), or from recent lines."""
        if self._file is not None and hit.position >= 0:
            start = max(0, hit.position - size)
            return self._file.read(start, hit.position - start)
        if hit.offset >= 0 and self._blocks:
            block, _end = self._blocks[-1]
            current = bytes(block[max(0, hit.offset - size) : hit.offset])
            need = size - len(current)
            if need > 0 and len(self._blocks) == 2:
                previous, prev_end = self._blocks[0]
                return bytes(previous[max(0, prev_end - need) : prev_end]) + current
            return current
        recent = list(self._recent)[:-1]
        # Lines fed one by one: only as many of the last ones as can fill `size` bytes.
        kept: list[bytes] = []
        total = 0
        for line in reversed(recent):
            if total >= size:
                break
            kept.append(line)
            total += len(line) + 1
        return b"\n".join(reversed(kept))[-size:]

    def _observe(self, hit: Hit) -> None:
        kind = hit.probe.kind
        if kind is ProbeKind.CONTEXT:
            self.context.observe(hit)
        elif kind is ProbeKind.TRACEBACK:
            self._tracebacks.observe(hit)
        else:
            shown = self._unknown.wants(kind, hit.line.message)
            evidence = self._evidence(hit, self._order, {}, shown)
            key = self._unknown.observe(hit, evidence)
            if key is not None:
                self._watch(self._last_error, evidence, hit)
                if self._concepts and hit.line is not self._concepts.exact:
                    self._by_concept(hit, evidence, key, shown)

    def _by_concept(self, hit: Hit, evidence: Evidence, key: str, shown: bool) -> None:
        """An error-shaped line no exact pattern matched: the signature a concept names, if any.

        Read once per template (and per raising frame), for a bounded number of templates.
        """
        claimed = self._concepts.raised
        raised = claimed[1] if claimed is not None and claimed[0] is hit.line else {}
        # What the traceback adds: the package that raised it (its frames' paths name modules, such
        # as `ray/_raylet.pyx` or `torch/cuda/`, whatever the error was).
        frame = raised.get("raised_in", "")
        key, text = f"{key}\x00{frame}", f"{hit.line.message}\n{frame}" if frame else hit.line.message
        if self._concepts.spent(key):
            # Past the tier's budget only the latest such line is kept, and read when a report is
            # asked for: the end of a log is where it died.
            self._concepts.last = (hit, evidence.order, key, text, raised)
            return
        named = self._concepts.name(key, text)
        if named is None or named.sig_id in self._tallies:
            return  # an exact pattern of that signature matched elsewhere: it speaks for it
        sig = self.kb.require(named.sig_id)
        tally = self._concepts.tallies.get(sig.id)
        if tally is None:
            tally = self._concepts.tallies[sig.id] = Tally(sig, concept=named.concept)
            if sig.kind is Kind.ROOT:
                window = self._lookback(hit)
                self._progress.setdefault(sig.id, snapshot(window))
                self._steps.root(sig.id, hit.line.source, window)
        if not shown and tally.wants(hit.line.message, hit.line.source):
            evidence = self._evidence(hit, evidence.order, {}, True)  # a sample is shown: masked
        tally.add(replace(evidence, values={**evidence.values, **raised}))

    def _evidence(self, hit: Hit, order: int, values: dict[str, str], shown: bool = True) -> Evidence:
        line = hit.line
        text, message = line.text, line.message
        at = max(text.find(message), 0) + hit.match.start() if message else 0
        if self.redact and shown:
            # Mask the whole line first: a cut through a secret would leave a part no rule recognises.
            masked = redact_secrets(text)
            at = min(at, len(masked)) if masked == text else len(redact_secrets(text[:at]))
            text, message = masked, redact_secrets(message)
        if self.redact:
            # Values are few and short, and a tally keeps the first of each: always masked.
            values = {k: redact_secrets(v) for k, v in values.items()}
        if len(text) > EVIDENCE_CHARS:
            start = max(0, min(at - EVIDENCE_CHARS // 3, len(text) - EVIDENCE_CHARS))
            text = ("…" if start else "") + text[start : start + EVIDENCE_CHARS] + "…"
        return Evidence(
            source=line.source,
            line=line.number,
            text=text,
            message=message[:EVIDENCE_CHARS],
            rank=line.rank,
            worker=line.worker,
            node=line.node,
            pid=line.pid,
            timestamp=line.timestamp,
            repeat=line.repeat,
            values=values,
            order=order,
            # Parsed only for lines a report can show: a repeat of a known line is just counted.
            time=parse(line.timestamp, line.source) if shown and line.timestamp else None,
        )

    # --- output ----------------------------------------------------------------------

    def seen(self) -> list[str]:
        """Ids of the signatures matched so far, in order of first appearance."""
        return sorted(self._tallies, key=lambda s: self._tallies[s].first.order)

    def report(self) -> Report:
        """Rank everything fed so far. Can be called repeatedly while feeding continues: the report
        is a snapshot that later lines do not change."""
        return conclude(self._tallies, self.observations(), self.kb, self.baseline)

    def _bare_exception(self) -> Evidence | None:
        """The exception line the input ended with, outside any traceback, as evidence (or None)."""
        if self._bare.last is None or not self._bare.judge_lines(self._recent, self._feed_lines):
            return None
        hit, order, frames = self._bare.last
        # Frames pasted without their "Traceback" header still say where it was raised.
        return self._evidence(hit, order, {**frames, **describe_exception(hit.line.message, None)})

    def _ending_error(self) -> Evidence | None:
        """The error line the input ended with, when it did."""
        if self._last_error.last is None or not self._last_error.judge_lines(self._recent, self._feed_lines):
            return None
        return self._last_error.last

    def _concept_findings(self) -> dict[str, Tally]:
        """What the concept tier named, with the latest line past its budget read now (a copy)."""
        found = dict(self._concepts.tallies)
        if self._concepts.last is None:
            return found
        hit, order, key, text, raised = self._concepts.last
        named = self._concepts.name(key, text, spend=False)
        if named is None or named.sig_id in self._tallies or named.sig_id in found:
            return found
        tally = found[named.sig_id] = Tally(self.kb.require(named.sig_id), concept=named.concept)
        tally.add(replace(self._evidence(hit, order, {}, True), values=raised))
        return found

    def observations(self) -> Observations:
        """A frozen snapshot of what the observers saw so far."""
        sources = list(self._sources)
        if self._feed_lines:
            sources.append(SourceStats(self._feed_source, self._feed_lines, self._feed_bytes))
        if self._feed_lines and self._steps.wants(self._feed_source):
            recent = b"\n".join(self._recent)
            self._steps.ended(self._feed_source, lambda at, n: recent[at : at + n], len(recent))
        return Observations(
            context=self.context.snapshot(),
            progress=dict(self._progress),
            went_on=self._steps.went_on(
                {
                    owner: t.first.source
                    for tallies in (self._concepts.tallies, self._tallies)
                    for owner, t in tallies.items()
                }
            ),
            unknown=self._unknown.snapshot(),
            open_traceback=self._tracebacks.unterminated({s.name: s.lines for s in sources}),
            bare_exception=self._bare_exception(),
            concepts=self._concept_findings(),
            ending_error=self._ending_error(),
            collectives=self._collectives.snapshot(),
            tracebacks=self._tracebacks.headers,
            timeline=tuple(self._timeline),
            sources=tuple(sources),
            errors=tuple(self._errors),
            engine=self.matcher.engine,
            candidates=self._budget.candidates,
            redact=self.redact,
            exit_status=self.exit_status,
            dated=dict(self._dated),
        )
