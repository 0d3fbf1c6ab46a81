"""The `rlfix` command: thin click commands over the Python API.

Exit status (every command):
  0  no failure recognised (diagnose) / success
  1  a failure was diagnosed (diagnose), or lint/eval found problems
  2  usage error, unreadable input, or invalid knowledge base (one line on stderr)
"""

from __future__ import annotations

import functools
import io
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from rlfix import i18n, safe
from rlfix.alerts import DEFAULT_IDLE_EXIT, format_alert
from rlfix.errors import EXIT_DIAGNOSED, EXIT_OK, EXIT_USAGE, InputError, KnowledgeError, RlfixError, UsageError
from rlfix.gate import mask_text
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.model import Action, Evidence
from rlfix.output import write_report
from rlfix.process_pool import prefer as prefer_start_method
from rlfix.render import DEFAULT_TOP, FORMATS, RenderOptions, color_wanted, render
from rlfix.report import Report
from rlfix.version import __version__

if TYPE_CHECKING:
    from rlfix.fleet.sections import JobReports

EXIT_STATUS_HELP = """\b
Exit status:
  0  no failure recognised
  1  a failure was diagnosed
  2  usage error, unreadable input or invalid knowledge base"""


def _fail(message: str, lang: str | None = None) -> None:
    # Messages quote file names and log text: one line, controls shown escaped.
    lang = lang or _main_lang(None)
    # Through the gate too: messages echo option values, file names and Ray's own error text.
    text = i18n.phrase("rlfix: error: {message}", lang, message=safe.one_line(mask_text(i18n.error(message, lang))))
    click.echo(text, err=True)


def _argv_lang(argv: Sequence[str]) -> str | None:
    """The language a command line asks for, read before click parses it (for errors click never reaches)."""
    for i, arg in enumerate(argv):
        if arg.startswith("--lang="):
            return arg.split("=", 1)[1]
        if arg == "--lang" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _main_lang(argv: Sequence[str] | None) -> str:
    try:
        return i18n.resolve(_argv_lang(list(argv) if argv is not None else sys.argv[1:]))
    except RlfixError:
        return i18n.DEFAULT


def _kb(kb_dirs: Sequence[str]) -> KnowledgeBase:
    return load_knowledge(list(kb_dirs))


lang_option = click.option(
    "--lang",
    type=click.Choice(i18n.LANGUAGES),
    default=None,
    help="Language of the report: en or zh (default: RLFIX_LANG, then the locale, e.g. LANG=zh_CN.UTF-8).",
)

notify_option = click.option(
    "--notify",
    metavar="URL",
    envvar="RLFIX_NOTIFY",
    default=None,
    help="On a failure, send a short masked message to this Apprise URL (slack://, msteams://, json://...).",
)


def _notify(report: Report, url: str | None, lang: str, job: str | None = None) -> None:
    """Send the failure message (if the report failed and a URL is set); a failure to send is a
    warning: the diagnosis and its exit status stand."""
    from rlfix.integrations.notify import notify

    try:
        notify(report, url, job=job, lang=lang)
    except RlfixError as exc:
        message = safe.one_line(mask_text(str(exc)))
        click.echo(i18n.phrase("rlfix: warning: notification not sent: {why}", lang, why=message), err=True)


kb_option = click.option(
    "--kb",
    "kb_dirs",
    multiple=True,
    type=click.Path(),
    metavar="DIR",
    help="Extra signatures (a directory or YAML file); same id overrides a built-in one. Repeatable.",
)


def _write(text: str, output: str | None) -> None:
    if output:
        try:
            write_report(output, text)
        except OSError as exc:  # a missing directory, a read-only place, a full disk
            raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    else:
        click.echo(text, nl=False)


@dataclass(frozen=True)
class View:
    """How a command shows its report: the format, the render options, and where it goes."""

    fmt: str
    options: RenderOptions
    output: str | None


F = TypeVar("F", bound=Callable[..., Any])

_VIEW_OPTIONS = (
    click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True),
    click.option("--top", type=click.IntRange(min=1), default=DEFAULT_TOP, show_default=True, help="Findings to show."),
    click.option("-a", "--all", "show_all", is_flag=True, help="Show every finding, not just the top ones."),
    click.option("--all-flags", is_flag=True, help="Also show flags for frameworks not detected in the log."),
    click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the report to a file."),
    click.option("--color/--no-color", default=None, help="Colour the text (default: on a terminal, unless NO_COLOR)."),
    click.option("-v", "--verbose", is_flag=True, help="Show more evidence lines per finding."),
    lang_option,
)


def view_options(func: F) -> F:
    """The options every report-printing command shares, handed to the command as one `view: View`."""

    @functools.wraps(func)
    def wrapper(
        *args: Any,
        fmt: str,
        top: int,
        show_all: bool,
        all_flags: bool,
        output: str | None,
        color: bool | None,
        verbose: bool,
        lang: str | None,
        **kwargs: Any,
    ) -> Any:
        use_color = color if color is not None else (output is None and color_wanted(sys.stdout.isatty()))
        language = i18n.resolve(lang)
        options = RenderOptions(
            top=top, show_all=show_all, all_flags=all_flags, verbose=verbose, color=use_color, lang=language
        )
        return func(*args, view=View(fmt, options, output), **kwargs)

    for option in reversed(_VIEW_OPTIONS):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "-V", "--version", message="rlfix %(version)s")
def cli() -> None:
    """Find the root cause in the logs of a crashed RL / LLM training job.

    \b
    Examples:
      rlfix diagnose job.log
      cat job.log | rlfix diagnose
      rlfix diagnose logs/ --format markdown > diagnosis.md
      rlfix explain cuda-illegal-memory-access
    """


@cli.command(epilog=EXIT_STATUS_HELP)
@click.argument("paths", nargs=-1, type=click.Path(allow_dash=True))
@view_options
@click.option("--no-redact", is_flag=True, help="Quote evidence without masking tokens and passwords.")
@click.option("--engine", type=click.Choice(["auto", "hyperscan", "python"]), default="auto", show_default=True)
@click.option("--follow", is_flag=True, help="Follow one growing FILE (tail -f); alert when a root cause appears.")
@click.option("--follow-symlinks", is_flag=True, help="In directories, also read links that lead out of them.")
@click.option(
    "--idle-exit",
    type=click.FloatRange(min=0),
    default=DEFAULT_IDLE_EXIT,
    show_default=True,
    metavar="SECONDS",
    help="With --follow: stop once a fatal root cause is known and the file has not grown for this long.",
)
@click.option(
    "--baseline",
    type=click.Path(exists=True, allow_dash=False),
    metavar="HEALTHY_LOG",
    help="A log of a healthy run of the same job: findings that also appear there are discounted.",
)
@click.option(
    "--exit-status",
    metavar="STATUS",
    help="How the command that wrote the log ended (137, -9 or SIGKILL): a death by signal is evidence.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Processes that read files (default: one per core; 1 for stdin). The report is the same.",
)
@click.option(
    "--stats", is_flag=True, help="Also print, on stderr, one JSON line of scan statistics (lines, candidates, time)."
)
@notify_option
@kb_option
def diagnose(
    paths: tuple[str, ...],
    view: View,
    no_redact: bool,
    engine: str,
    follow: bool,
    follow_symlinks: bool,
    idle_exit: float,
    baseline: str | None,
    exit_status: str | None,
    jobs: int | None,
    stats: bool,
    notify: str | None,
    kb_dirs: tuple[str, ...],
) -> None:
    """Diagnose log files, directories (recursively), .gz files, or stdin (no PATH, or -).

    With --follow FILE: read FILE and keep reading as it grows (surviving truncation and
    rotation), print an alert the moment a root cause appears, and print the full report on
    Ctrl-C, or once a fatal root cause is known and FILE has been idle for --idle-exit seconds.
    """
    started = time.perf_counter()
    if "" in paths:
        # `rlfix diagnose "$LOG"` with LOG unset must not quietly scan the current directory.
        raise InputError("'': empty path (an unset shell variable?)")
    if follow:
        report = _follow(paths, kb_dirs, engine, not no_redact, baseline, idle_exit, exit_status)
    else:
        from rlfix.api import diagnose as diagnose_source

        report = diagnose_source(
            [Path(p) for p in paths or ("-",)],
            kb=_kb(kb_dirs),
            engine=engine,
            redact=not no_redact,
            strict=False,
            follow_symlinks=follow_symlinks,
            baseline=Path(baseline) if baseline else None,
            exit_status=exit_status,
            jobs=jobs or default_jobs(),
        )
    _warn_skipped(report, view.options.lang)
    _warn_given_up(view.options.lang)
    if stats:
        _print_stats(report, time.perf_counter() - started)
    _notify(report, notify, view.options.lang)
    _emit(report, view)


def default_jobs() -> int:
    """One process per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _print_stats(report: Report, seconds: float) -> None:
    lines = sum(s.lines for s in report.sources)
    numbers = {
        "lines": lines,
        "bytes": sum(s.bytes for s in report.sources),
        "candidates": report.candidates,
        "candidate_share": round(report.candidates / lines, 6) if lines else 0.0,
        "inputs": len(report.sources),
        "engine": report.engine,
        "seconds": round(seconds, 3),
    }
    click.echo("rlfix: stats " + json.dumps(numbers), err=True)


def _warn_skipped(report: Report, lang: str) -> None:
    for source in report.sources:
        if source.skipped:
            message = safe.one_line(f"{source.name}: {source.skipped}")
            click.echo(i18n.phrase("rlfix: warning: {message}", lang, message=message), err=True)


def _warn_given_up(lang: str) -> None:
    from rlfix.model import GIVE_UP_AFTER, patterns_given_up

    for where in patterns_given_up():
        message = safe.one_line(
            mask_text(
                f"{where}: pattern given up after {GIVE_UP_AFTER} searches over their time limit; lines it"
                " might match were not checked (rlfix kb lint --kb DIR finds such patterns)"
            )
        )
        click.echo(i18n.phrase("rlfix: warning: {message}", lang, message=message), err=True)


def _follow(
    paths: Sequence[str],
    kb_dirs: Sequence[str],
    engine: str,
    redact: bool,
    baseline: str | None,
    idle_exit: float,
    exit_status: str | None = None,
) -> Report:
    from rlfix.api import diagnose as diagnose_source
    from rlfix.core import Triage
    from rlfix.integrations.follow import follow as follow_file
    from rlfix.integrations.follow import stop_on_signals

    if len(paths) != 1 or paths[0] == "-":
        raise UsageError("--follow needs exactly one FILE")
    kb_obj = _kb(kb_dirs)
    healthy = diagnose_source(Path(baseline), kb=kb_obj, engine=engine) if baseline else None
    triage = Triage(kb_obj, engine=engine, redact=redact, baseline=healthy)
    triage.set_exit_status(exit_status)
    with stop_on_signals() as stop:
        return follow_file(paths[0], triage, on_alert=_alert, idle_exit=idle_exit, stop=stop)


EXCERPT_EXIT_HELP = """\b
Exit status:
  0  no failure recognised
  1  a failure was diagnosed
  2  usage error, or a LOG that cannot be read"""


@cli.command("excerpt", epilog=EXCERPT_EXIT_HELP)
@click.argument("paths", nargs=-1, required=True, metavar="LOG...")
@click.option("--max-lines", type=int, default=60, show_default=True, help="At most this many lines (15 or more).")
@click.option(
    "--max-chars", type=int, default=8000, show_default=True, help="At most this many characters (1000 or more)."
)
@click.option("--context", type=int, default=3, show_default=True, help="Lines shown around each evidence line.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the excerpt to a file.")
@click.option("--engine", type=click.Choice(["auto", "hyperscan", "python"]), default="auto", show_default=True)
@kb_option
@lang_option
def excerpt_cmd(
    paths: tuple[str, ...],
    max_lines: int,
    max_chars: int,
    context: int,
    output: str | None,
    engine: str,
    kb_dirs: tuple[str, ...],
    lang: str | None,
) -> None:
    """Print only the lines of a log that matter, as Markdown for an issue or an LLM prompt.

    Each root cause's evidence line with the lines around it and the traceback that ended there,
    the job's frameworks, versions and flags, and where it first failed; secrets masked.
    """
    from rlfix.api import check_excerpt_bounds, with_windows
    from rlfix.api import diagnose as diagnose_source

    check_excerpt_bounds(max_lines, max_chars, context)
    report = diagnose_source([Path(p) for p in paths], kb=_kb(kb_dirs), engine=engine)
    text = with_windows(report, context).render(
        "excerpt", max_lines=max_lines, max_chars=max_chars, lang=i18n.resolve(lang)
    )
    _write(text, output)
    sys.exit(report.exit_code)


TRIAGE_EXIT_HELP = """\b
Exit status:
  0  no job failed, and every job could be read
  1  some job failed (and every job could be read)
  2  usage error, a path that does not exist, or some job could not be read at
     all (the table still shows the others)"""


@cli.command("triage", epilog=TRIAGE_EXIT_HELP)
@click.argument("paths", nargs=-1, required=True, metavar="DIR_OR_GLOB...")
@click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the table to a file.")
@click.option("--since", metavar="TIME", help="Only jobs seen since TIME: an ISO date or time, or an age (2h, 3d).")
@click.option(
    "-j", "--jobs", "workers", type=click.IntRange(min=1), default=None, help="Worker processes (default: cores)."
)
@click.option("--ray", "use_ray", is_flag=True, help="Run the per-job scans as Ray tasks across a cluster.")
@click.option("--address", default=None, help="With --ray: the cluster (default: RAY_ADDRESS or a local one).")
@click.option("--no-redact", is_flag=True, help="Quote evidence without masking tokens and passwords.")
@click.option("--engine", type=click.Choice(["auto", "hyperscan", "python"]), default="auto", show_default=True)
@click.option("--follow-symlinks", is_flag=True, help="In job folders, also read links that lead out of them.")
@click.option(
    "--action",
    "actions",
    multiple=True,
    type=click.Choice([a.value for a in Action]),
    help="Only jobs whose top cause calls for ACTION (repeatable). With cordon-node alone: the nodes to take out.",
)
@kb_option
@lang_option
def triage_cmd(
    paths: tuple[str, ...],
    fmt: str,
    output: str | None,
    since: str | None,
    workers: int | None,
    use_ray: bool,
    address: str | None,
    no_redact: bool,
    engine: str,
    follow_symlinks: bool,
    actions: tuple[str, ...],
    kb_dirs: tuple[str, ...],
    lang: str | None,
) -> None:
    """Triage a fleet of jobs: one row per cause, how many jobs, when, and an example.

    A DIR is a folder of jobs (each file or sub-folder in it is one job) unless it is a Ray
    session folder (one job); a FILE, or each match of a GLOB, is one job.
    """
    from rlfix.fleet import triage

    fleet = triage(
        list(paths),
        since=since,
        jobs=workers,
        kb_dirs=kb_dirs,
        engine=engine,
        redact=not no_redact,
        follow_symlinks=follow_symlinks,
        ray=use_ray,
        address=address,
        actions=tuple(dict.fromkeys(actions)),
    )
    language = i18n.resolve(lang)
    _write(fleet.render(fmt, lang=language), output)
    for err in (*fleet.errors, *fleet.skipped):
        message = safe.one_line(mask_text(err) if fleet.redacted else err)
        click.echo(i18n.phrase("rlfix: warning: {message}", language, message=message), err=True)
    sys.exit(fleet.exit_code)


@cli.command()
@click.argument("sig_id", metavar="ID")
@kb_option
@lang_option
def explain(sig_id: str, kb_dirs: tuple[str, ...], lang: str | None) -> None:
    """What a failure id means, why it happens, and how to fix it."""
    from rlfix.tools.describe import describe_signature

    text = describe_signature(_kb(kb_dirs).require(sig_id), i18n.resolve(lang))
    click.echo(safe.terminal(text), nl=False)


@cli.group()
def kb() -> None:
    """Inspect and check the knowledge base."""


@kb.command("list")
@kb_option
@click.option("--kind", type=click.Choice(["root", "symptom"]), help="Only roots or only symptoms.")
@lang_option
def kb_list(kb_dirs: tuple[str, ...], kind: str | None, lang: str | None) -> None:
    """List every signature: id, kind, severity, title."""
    language = i18n.resolve(lang)
    for sig in sorted(_kb(kb_dirs), key=lambda s: s.id):
        if kind and sig.kind.value != kind:
            continue
        title = sig.localized(language).title
        click.echo(safe.one_line(f"{sig.id:34} {sig.kind.value:7} {sig.severity.value:7} {title}"))


@kb.command("show")
@click.argument("sig_id", metavar="ID")
@kb_option
@lang_option
def kb_show(sig_id: str, kb_dirs: tuple[str, ...], lang: str | None) -> None:
    """One signature as rlfix understands it: patterns, anchors, relations, flags, examples."""
    from rlfix.tools.describe import show_signature

    click.echo(safe.terminal(show_signature(_kb(kb_dirs).require(sig_id), i18n.resolve(lang))), nl=False)


@kb.command("lint")
@kb_option
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
def kb_lint(kb_dirs: tuple[str, ...], strict: bool) -> None:
    """Check schema, ids, taxonomy coverage, relations, examples and regex safety."""
    from rlfix.tools.lint import lint

    try:
        kb_obj = _kb(kb_dirs)
    except KnowledgeError as exc:
        for problem in exc.problems:
            click.echo(safe.one_line(str(problem)), err=True)
        click.echo(f"rlfix: {len(exc.problems)} problem(s) in the knowledge base", err=True)
        sys.exit(EXIT_USAGE)
    issues = lint(kb_obj)
    for issue in issues:
        click.echo(safe.one_line(str(issue)), err=True)
    errors = [i for i in issues if i.severity == "error" or strict]
    n_patterns = sum(len(s.patterns) for s in kb_obj)
    click.echo(
        f"rlfix kb lint: {len(kb_obj)} signatures, {n_patterns} patterns, {len(kb_obj.files)} files: "
        f"{len([i for i in issues if i.severity == 'error'])} errors, "
        f"{len([i for i in issues if i.severity == 'warning'])} warnings"
    )
    sys.exit(EXIT_DIAGNOSED if errors else EXIT_OK)


@kb.command("info")
@kb_option
def kb_info(kb_dirs: tuple[str, ...]) -> None:
    """Where the knowledge base comes from, its size, and the matching engine in use."""
    from rlfix.tools.describe import describe_knowledge

    click.echo(safe.terminal(describe_knowledge(_kb(kb_dirs), kb_dirs)), nl=False)


@cli.command("eval")
@click.argument("directory", default="fixtures/logs", type=click.Path(exists=True, file_okay=False))
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "markdown"]), default="text", show_default=True)
@kb_option
def eval_cmd(directory: str, fmt: str, kb_dirs: tuple[str, ...]) -> None:
    """Accuracy on labelled logs (DIRECTORY/labels.yaml): top-1, top-3, false alarms, per id."""
    from rlfix.tools.evaluate import evaluate

    result = evaluate(directory, _kb(kb_dirs))
    click.echo(result.to_markdown() if fmt == "markdown" else result.to_text(), nl=False)
    sys.exit(EXIT_OK if result.perfect else EXIT_DIAGNOSED)


@kb.command("catalogue")
@kb_option
@click.option("--lang", type=click.Choice(i18n.LANGUAGES), default="en", show_default=True, help="en or zh.")
def kb_catalogue(kb_dirs: tuple[str, ...], lang: str) -> None:
    """Print the failure catalogue as Markdown (docs/signatures.md; --lang zh: docs/zh/signatures.md)."""
    from rlfix.tools.catalogue import render_catalogue

    click.echo(safe.terminal(render_catalogue(_kb(kb_dirs), lang)), nl=False)


@kb.command("draft")
@click.argument("paths", nargs=-1, type=click.Path(allow_dash=True))
@click.option("--id", "sig_id", default="my-new-failure", show_default=True, help="Id for the new signature.")
@kb_option
def kb_draft(paths: tuple[str, ...], sig_id: str, kb_dirs: tuple[str, ...]) -> None:
    """Print a ready-to-edit signature for the unrecognised failure in a log (stdin without PATH)."""
    from rlfix.core import Triage
    from rlfix.tools.draft import draft_signature

    # Unmasked, so secrets become variable parts of the pattern; the draft masks what it quotes.
    triage = Triage(_kb(kb_dirs), redact=False)
    triage.feed_paths(list(paths) or ["-"], strict=True)
    click.echo(draft_signature(triage.report(), sig_id), nl=False)


@kb.command("export-patterns")
@click.option("--dialect", type=click.Choice(["ere", "python"]), default="ere", show_default=True)
@kb_option
def kb_export_patterns(dialect: str, kb_dirs: tuple[str, ...]) -> None:
    """Print every signature pattern, one per line (POSIX ERE for `grep -E -f`, or Python regex)."""
    from rlfix.tools.export import export_patterns

    for line in export_patterns(_kb(kb_dirs), dialect=dialect):
        click.echo(line)


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--report", "report_path", type=click.Path(dir_okay=False), help="Also write the report as JSON here.")
@click.option("--no-redact", is_flag=True, help="Quote evidence without masking tokens and passwords.")
@notify_option
@kb_option
@lang_option
def run(
    command: tuple[str, ...],
    report_path: str | None,
    no_redact: bool,
    notify: str | None,
    kb_dirs: tuple[str, ...],
    lang: str | None,
) -> None:
    """Run a training command, pass its output through, and diagnose it if it fails.

    \b
    rlfix run -- python train.py --lr 1e-5
    Exits with the command's own exit status.
    """
    from rlfix.integrations.run import run_command

    status = run_command(
        list(command), kb=_kb(kb_dirs), report_path=report_path, redact=not no_redact, lang=lang, notify=notify
    )
    sys.exit(status)


@cli.command("mcp")
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="A folder the tools may read under (repeatable; default: the current directory).",
)
@kb_option
def mcp_cmd(roots: tuple[str, ...], kb_dirs: tuple[str, ...]) -> None:
    """Serve diagnose, excerpt, explain and triage as Model Context Protocol tools over stdio.

    \b
    For agents and LLM chats: register `rlfix mcp --root /path/to/logs` as an MCP server.
    Needs the `mcp` extra: pip install 'rlfix[mcp]'.
    """
    try:
        import mcp.server.mcpserver  # noqa: F401 - only to say what is missing, before serving
    except ImportError:  # the SDK is missing, or is not version 2
        raise UsageError("rlfix mcp needs the MCP SDK, version 2: pip install 'rlfix[mcp]'") from None
    from rlfix.integrations.mcp_server import serve

    serve(roots, kb=_kb(kb_dirs))


@cli.group("ray")
def ray_group() -> None:
    """Diagnose Ray jobs, Ray session logs, and whole Ray clusters (needs the `ray` extra)."""


timeout_option = click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="Longest wait for the cluster to answer when connecting; then one line and exit 2.",
)


@ray_group.command("job")
@click.argument("job_id", required=False)
@click.option("--address", default=None, help="Ray dashboard, e.g. http://127.0.0.1:8265 (default: RAY_ADDRESS).")
@click.option("--follow", is_flag=True, help="Follow a running job; alert on the first root cause, report at the end.")
@click.option("--last-failed", is_flag=True, help="Diagnose the latest failed job (no JOB_ID needed).")
@click.option(
    "--retry",
    type=click.IntRange(min=0, max=20),
    default=0,
    metavar="N",
    help="With --follow: resubmit the job, as it was, up to N times when it fails for a transient cause.",
)
@timeout_option
@notify_option
@view_options
@kb_option
def ray_job(
    job_id: str | None,
    address: str | None,
    follow: bool,
    last_failed: bool,
    retry: int,
    timeout: float,
    notify: str | None,
    view: View,
    kb_dirs: tuple[str, ...],
) -> None:
    """Diagnose a submitted Ray job (JOB_ID, or --last-failed) from its logs and the cluster's state."""
    from rlfix.gate import mask_text
    from rlfix.integrations.ray import diagnose_job, last_failed_span, picked, watch_job

    if (job_id is None) == (not last_failed):
        raise UsageError("name one JOB_ID, or use --last-failed")
    if job_id is None:
        span = last_failed_span(address, connect_timeout=timeout)
        # Named on stderr before the report: the report itself (and its JSON on stdout) stays as for a named job.
        click.echo(mask_text(picked(span)), err=True)
        job_id = span.key
    kb_obj = _kb(kb_dirs)
    if retry and not follow:
        raise UsageError("--retry needs --follow: a job is resubmitted only while rlfix follows it")
    if retry:
        report = _follow_retrying(job_id, address, kb_obj, retry, timeout)
    elif follow:
        report = watch_job(job_id, address=address, kb=kb_obj, on_alert=_alert, connect_timeout=timeout)
    else:
        report = diagnose_job(job_id, address=address, kb=kb_obj, connect_timeout=timeout)
    _notify(report, notify, view.options.lang, job=job_id)
    _emit(report, view)


def _follow_retrying(job_id: str, address: str | None, kb: KnowledgeBase, retries: int, timeout: float) -> Report:
    """`ray job --follow --retry N`: the last attempt's report; each decision is one line on stderr."""
    from rlfix.integrations.ray_retry import follow_with_retries
    from rlfix.retry import RetryDecision, RetryPolicy

    def said(failed: str, decision: RetryDecision, new_id: str | None) -> None:
        then = f"; resubmitted as {new_id}" if new_id else ""
        verdict = "retrying" if decision else "not retrying"
        click.echo(
            safe.one_line(mask_text(f"rlfix: job {failed} failed, {verdict}: {decision.reason}{then}")), err=True
        )

    attempts = follow_with_retries(
        job_id, RetryPolicy(retries), address=address, kb=kb, on_alert=_alert, on_retry=said, connect_timeout=timeout
    )
    return attempts.last


def _job_filters(func: F) -> F:
    """`--job`, `--since`, `--until`: which jobs of a session or cluster to report."""
    func = click.option("--until", metavar="TIME", help="Only jobs that started by then (as --since).")(func)
    func = click.option(
        "--since", metavar="TIME", help="Only jobs running at or after TIME: ISO date/time, or an age (90m, 2h, 3d)."
    )(func)
    return click.option("--job", "job", metavar="ID", help="Only this job (submission id or job id).")(func)


def _epoch(text: str | None, option: str) -> float | None:
    from rlfix.fleet.jobs import parse_since

    if not text:
        return None
    when = parse_since(text, option=option)
    try:
        return when.timestamp()
    except (OverflowError, ValueError):
        raise UsageError(f"{option}: {text[:40]!r} is out of range") from None


@ray_group.command("logs")
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--address", default=None, help="Also ask this cluster's Jobs and state API (dashboard or GCS address).")
@_job_filters
@timeout_option
@view_options
@kb_option
def ray_logs(
    directory: str | None,
    address: str | None,
    job: str | None,
    since: str | None,
    until: str | None,
    timeout: float,
    view: View,
    kb_dirs: tuple[str, ...],
) -> None:
    """Diagnose a Ray session's log folder, one section per job (default: /tmp/ray/session_latest/logs)."""
    from rlfix.integrations.ray import diagnose_session_jobs

    reports = diagnose_session_jobs(
        directory,
        kb=_kb(kb_dirs),
        address=address,
        job=job,
        since=_epoch(since, "--since"),
        until=_epoch(until, "--until"),
        connect_timeout=timeout,
    )
    _emit_jobs(reports, view)


@ray_group.command("cluster")
@click.option("--address", default=None, help="Ray cluster address (default: RAY_ADDRESS or the local cluster).")
@_job_filters
@timeout_option
@view_options
@kb_option
def ray_cluster(
    address: str | None,
    job: str | None,
    since: str | None,
    until: str | None,
    timeout: float,
    view: View,
    kb_dirs: tuple[str, ...],
) -> None:
    """Scan the session logs on every alive node of a Ray cluster, one section per job."""
    from rlfix.integrations.ray import diagnose_cluster_jobs

    reports = diagnose_cluster_jobs(
        address=address,
        kb=_kb(kb_dirs),
        job=job,
        since=_epoch(since, "--since"),
        until=_epoch(until, "--until"),
        connect_timeout=timeout,
    )
    _emit_jobs(reports, view)


def _alert(evidence: Evidence, sig_id: str) -> None:
    click.echo(format_alert(evidence, sig_id), err=True)


def _emit(report: Report, view: View) -> None:
    """Print (or write) the report as asked, list input problems, and exit with the report's status."""
    _write(render(report, view.fmt, view.options), view.output)
    if view.fmt == "github":
        _step_summary(report, view.options.lang)
    for err in report.errors:
        _fail(err, view.options.lang)
    sys.exit(report.exit_code)


def _step_summary(report: Report, lang: str) -> None:
    """`--format github`: the Markdown summary into `$GITHUB_STEP_SUMMARY` when set (a warning if it cannot be)."""
    from rlfix.integrations.github import write_step_summary

    try:
        write_step_summary(report, lang)
    except OSError as exc:
        message = f"cannot write the step summary: {exc.strerror or exc}"
        click.echo(i18n.phrase("rlfix: warning: {message}", lang, message=safe.one_line(mask_text(message))), err=True)


def _emit_jobs(reports: JobReports, view: View) -> None:
    """As `_emit`, for one report per job: print or write them, list input problems, exit with their status."""
    _write(reports.render(view.fmt, **view.options.for_format(view.fmt)), view.output)
    problems = [*reports.errors, *(e for s in (*reports.sections, reports.node) if s for e in s.report.errors)]
    for err in problems:
        _fail(err, view.options.lang)
    sys.exit(reports.exit_code)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: rlfix errors become one line on stderr, never a traceback."""
    prefer_start_method("fork")  # this process's threads are rlfix's own: see rlfix/process_pool.py
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        result = cli.main(args=list(argv) if argv is not None else None, prog_name="rlfix", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        _show_click_error(exc)
        sys.exit(EXIT_USAGE if exc.exit_code not in (0, 1) else exc.exit_code)
    except RlfixError as exc:
        _fail(str(exc), _main_lang(argv))
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo(i18n.phrase("rlfix: interrupted", _main_lang(argv)), err=True)
        sys.exit(130)
    except Terminated:
        # Raised in the main thread, so pools and files close on the way out (no orphan workers).
        click.echo(i18n.phrase("rlfix: interrupted", _main_lang(argv)), err=True)
        sys.exit(128 + signal.SIGTERM)
    except BrokenPipeError:
        # The reader went away (`rlfix diagnose big.log | head`): not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(EXIT_OK)
    except Exception as exc:  # the last line of defence: one line, exit 2, never a traceback
        # A traceback exits 1, which reads as "a failure was diagnosed". RLFIX_DEBUG shows it.
        if os.environ.get("RLFIX_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (RLFIX_DEBUG=1 shows the traceback)", _main_lang(argv))
        sys.exit(EXIT_USAGE)
    finally:
        signal.signal(signal.SIGTERM, previous)
    sys.exit(result if isinstance(result, int) else EXIT_OK)


def _show_click_error(exc: click.ClickException) -> None:
    """click's own message (usage and the error), through the gate: it quotes option values and
    paths (`--baseline gone-hf_xxx.log`)."""
    shown = io.StringIO()
    exc.show(file=shown)
    click.echo(safe.terminal(mask_text(shown.getvalue())), err=True, nl=False)


class Terminated(Exception):
    """SIGTERM, turned into an exception so that `finally` blocks run (pools, files, terminals)."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated()
