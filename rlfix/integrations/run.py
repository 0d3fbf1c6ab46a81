"""`rlfix run -- CMD ARGS...`: run a training command, pass its output through, diagnose it live.

The command's stdout and stderr go to ours byte for byte, as soon as they arrive (no decoding,
no buffering on our side). The same bytes are cut into lines and fed to a `Triage`, so memory is
bounded by the longest line kept (`rlfix.match.MAX_LINE`) and the window of recent lines
(`rlfix.observe.recent`: 8 MiB), not by the output's size. Both streams feed one source, in
arrival order, like a terminal shows them.

Exit status: the command's own; `128 + N` when it was killed by signal N (as a shell reports it);
127 when the command is not found and 126 when it cannot be executed (one line on stderr).

Signals: SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to rlfix are forwarded to the command,
and so is SIGINT unless rlfix is the terminal's foreground job (then the terminal has already sent
Ctrl-C to the command itself, and forwarding it would deliver it twice). The command's
environment gets `PYTHONUNBUFFERED=1` unless it is set, so Python training scripts write lines as
they happen instead of in 8 KiB blocks when their output is a pipe.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import IO

from rlfix import i18n, safe
from rlfix.alerts import format_alert
from rlfix.core import Triage
from rlfix.errors import RlfixError
from rlfix.gate import mask_text
from rlfix.integrations.follow import LineFeeder, alert_on_roots
from rlfix.kb.load import KnowledgeBase
from rlfix.model import Evidence
from rlfix.output import write_report
from rlfix.report import Report

#: Bytes read from the command per call; small, so output is passed on as soon as it arrives.
READ_SIZE = 64 * 1024
FORWARDED = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGINT")


class CommandNotFound(RlfixError):
    """The command does not exist (exit 127, as in a shell)."""

    exit_code = 127


class CommandNotExecutable(RlfixError):
    """The command exists but cannot be executed (exit 126, as in a shell)."""

    exit_code = 126


def run_command(
    argv: Sequence[str],
    *,
    kb: KnowledgeBase | None = None,
    report_path: str | os.PathLike[str] | None = None,
    redact: bool = True,
    engine: str = "auto",
    lang: str | None = None,
    notify: str | None = None,
) -> int:
    """Run `argv`, pass its output through, and return its exit status (`lang`: the report's language,
    by default RLFIX_LANG or the locale).

    Prints an alert on stderr the moment a root cause first appears. When the command fails
    (non-zero status), prints the report to stderr and, if `report_path` is given, writes it
    there as JSON, and sends it to `notify` (an Apprise URL; default RLFIX_NOTIFY, see
    `rlfix.integrations.notify`) as a short message. Raises `CommandNotFound` /
    `CommandNotExecutable` when it cannot start.
    """
    if not argv:
        raise CommandNotFound("no command given; usage: rlfix run -- CMD ARGS...")
    triage = Triage(kb, engine=engine, redact=redact, timeline=False)
    out = _Passthrough()
    with alert_on_roots(triage, out.alert):
        status = _run(list(argv), triage, out)
    if status != 0:
        triage.set_exit_status(status)
        report = _report(triage, out, report_path, lang)
        if report is not None:
            _send(report, notify, out, job_name(argv), lang)
    return status


def job_name(argv: Sequence[str]) -> str:
    """How a message names the command: `python train.py`, `torchrun -m verl.trainer`, `python -c`."""
    words = [os.path.basename(argv[0])]
    if len(argv) > 1:
        nxt = argv[1]
        words.append(os.path.basename(nxt) if not nxt.startswith("-") else nxt)
        if nxt == "-m" and len(argv) > 2:
            words.append(argv[2])
    return " ".join(words)[:80]


def _send(report: Report, url: str | None, out: _Passthrough, job: str, lang: str | None) -> None:
    """The failure message to `url`; a failure to send is one line, the command's status stands."""
    from rlfix.integrations.notify import notify

    try:
        notify(report, url, job=job, lang=i18n.resolve(lang))
    except RlfixError as exc:
        out.write_err(f"rlfix: warning: notification not sent: {safe.one_line(mask_text(str(exc)))}\n")


def _report(
    triage: Triage, out: _Passthrough, report_path: str | os.PathLike[str] | None, lang: str | None = None
) -> Report | None:
    """Print (and save) the report and return it; a failure here is one line (and None), and the
    command's status still wins."""
    try:
        report = triage.report()
        text = report.render("text", color=False, lang=i18n.resolve(lang))
        out.write_err(("\n" if not out.at_line_start else "") + text)
    except Exception as exc:  # whatever the job printed, its exit status must get through
        out.write_err(f"\nrlfix: error: no report: {safe.one_line(mask_text(repr(exc)))}\n")
        return None
    if report_path is not None:
        try:
            write_report(report_path, report.render("json") + "\n")
        except OSError as exc:
            out.write_err(f"rlfix: error: {safe.one_line(mask_text(f'{report_path}: {exc.strerror or exc}'))}\n")
    return report


class _Guarded:
    """A LineFeeder that stops diagnosing, instead of killing the run, if a line trips a bug in rlfix."""

    def __init__(self, feeder: LineFeeder, out: _Passthrough) -> None:
        self._feeder: LineFeeder | None = feeder
        self._out = out

    def _call(self, action: str, data: bytes = b"") -> None:
        if self._feeder is None:
            return
        try:
            self._feeder.push(data) if action == "push" else self._feeder.flush()
        except Exception as exc:  # the job keeps running and keeps its output either way
            self._feeder = None
            self._out.write_err(f"\nrlfix: error: diagnosis stopped: {safe.one_line(repr(exc))}\n")

    def push(self, data: bytes) -> None:
        self._call("push", data)

    def flush(self) -> None:
        self._call("flush")


def _run(argv: list[str], triage: Triage, out: _Passthrough) -> int:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    try:
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0, env=env)
    except FileNotFoundError as exc:
        raise CommandNotFound(f"{argv[0]}: command not found") from exc
    except PermissionError as exc:
        raise CommandNotExecutable(f"{argv[0]}: permission denied") from exc
    except OSError as exc:
        raise CommandNotExecutable(f"{argv[0]}: cannot execute: {exc.strerror or exc}") from exc
    assert child.stdout is not None and child.stderr is not None
    source = f"<{Path(argv[0]).name} output>"
    feeder = _Guarded(LineFeeder(triage, source), out)
    with _forward_signals(child):
        _pump(child.stdout, child.stderr, feeder, out)
        status = child.wait()
    feeder.flush()
    return 128 - status if status < 0 else status


def _pump(stdout: IO[bytes], stderr: IO[bytes], feeder: _Guarded, out: _Passthrough) -> None:
    """Copy both pipes to our stdout/stderr and into the feeder until both reach end of file."""
    with selectors.DefaultSelector() as sel:
        sel.register(stdout, selectors.EVENT_READ, 1)
        sel.register(stderr, selectors.EVENT_READ, 2)
        open_pipes = 2
        while open_pipes:
            for key, _ in sel.select():
                try:
                    data = os.read(key.fd, READ_SIZE)
                except InterruptedError:  # pragma: no cover - retried by Python since PEP 475
                    continue
                if not data:
                    sel.unregister(key.fileobj)
                    open_pipes -= 1
                    continue
                out.write(key.data, data)
                feeder.push(data)


class _Passthrough:
    """Writes the command's bytes to our fds 1 and 2; a closed reader stops that copy only."""

    def __init__(self) -> None:
        self._open = {1: True, 2: True}
        self.at_line_start = True

    def write(self, fd: int, data: bytes) -> None:
        if not self._open[fd]:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except (BrokenPipeError, OSError):
            # Whoever read our output went away; keep draining the command so it does not block.
            self._open[fd] = False
            return
        if fd == 2:
            self.at_line_start = data.endswith(b"\n")

    def write_err(self, text: str) -> None:
        self.write(2, text.encode("utf-8", "replace"))

    def alert(self, evidence: Evidence, sig_id: str) -> None:
        self.write_err(("" if self.at_line_start else "\n") + format_alert(evidence, sig_id) + "\n")


@contextmanager
def _forward_signals(child: subprocess.Popen[bytes]) -> Iterator[None]:
    def forward(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT and _terminal_sent_it():
            return
        with suppress(ProcessLookupError):  # the command has just exited
            child.send_signal(signum)

    previous = {}
    for name in FORWARDED:
        signum = getattr(signal, name, None)
        if signum is not None:
            previous[signum] = signal.signal(signum, forward)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)


def _terminal_sent_it() -> bool:
    """Whether we (and so the command, which shares our process group) are the foreground job."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False
