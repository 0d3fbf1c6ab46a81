"""The dead worker's last words: who died (actor class, pid, node), how (Ray's exit type, the signal),
and the last lines of its own `worker-….err` / `.out`, attached to a Ray death or OOM-kill diagnosis.

Offline, from a session's logs folder: `gcs_server.out` reports each worker's exit ("Reporting worker
exit, worker id = …, exit_type = …, exit_detail = …", gcs_worker_manager.cc), `raylet.out` says
when the raylet sent SIGKILL ("DisconnectClient: sending SIGKILL to pgid=…", node_manager.cc), and
Ray writes `:actor_name:<Class>` at the top of an actor's worker files. Live, the state API gives
the dead workers and actors, and the dashboard serves the worker files. Intended exits are left out.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rlfix.clock import epoch, parse
from rlfix.details import DeadWorker
from rlfix.integrations.ray_logs import Window
from rlfix.report import Diagnosis, Report

#: Lines kept from the end of each of a dead worker's .err and .out.
LAST_LINES = 4
#: Dead workers kept per job (the earliest first).
MAX_DEAD = 8
#: Unintended exits a node sends from its GCS log when it does not know the job's workers.
MAX_EXITS = 256
#: Diagnoses that the dead workers' last words belong to.
DEATHS = frozenset({"ray-actor-died", "ray-oom-killer", "host-oom-sigkill"})

_EXIT = re.compile(
    r"Reporting worker exit, worker id = (\w+), node id = (\w+), address = ([^,]+), "
    r"exit_type = (\w+), exit_detail = (.*)"
)
_SIGKILL = re.compile(r"sending (SIGKILL) to pgid=(\d+) worker_id=(\w+)")
_WORKER_FILE = re.compile(r"^worker-([0-9a-f]+)-([0-9a-f]+)-(\d+)\.(out|err)$")
_MARKER = re.compile(r"^:(job_id|actor_name|task_name):(.*)$")
_INTENDED = ("INTENDED_USER_EXIT", "INTENDED_SYSTEM_EXIT")
_STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)")


def last_lines(lines: Iterable[str], source: str) -> tuple[str | None, tuple[tuple[str, int, str], ...]]:
    """(actor class named by Ray's marker, the last `LAST_LINES` other non-empty lines with their numbers)."""
    actor = None
    tail: deque[tuple[str, int, str]] = deque(maxlen=LAST_LINES)
    for number, raw in enumerate(lines, start=1):
        text = raw.rstrip("\n")
        marker = _MARKER.match(text)
        if marker:
            actor = marker.group(2) if marker.group(1) == "actor_name" else actor
        elif text.strip():
            tail.append((source, number, text[:400]))
    return actor, tuple(tail)


def _read(path: Path) -> Iterator[str]:
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            yield from fh
    except OSError:
        return


def worker_tails(logs: Path, job_id: str) -> dict[str, dict[str, Any]]:
    """The job's workers that have files in this folder: worker id -> pid, actor class, last lines.

    Plain data (it travels back from a scan task on another node): `{"pid": int, "actor": str | None,
    "tail": [[file, line, text], ...]}`, the `.err`'s lines before the `.out`'s.
    """
    files: dict[str, list[Path]] = {}
    for path in sorted(logs.glob("worker-*")):
        m = _WORKER_FILE.match(path.name)
        if m and m.group(2) == job_id:
            files.setdefault(m.group(1), []).append(path)
    tails: dict[str, dict[str, Any]] = {}
    for wid, paths in files.items():
        actor: str | None = None
        tail: list[list[Any]] = []
        for path in sorted(paths, key=lambda p: not p.name.endswith(".err")):
            named, lines = last_lines(_read(path), path.name)
            actor = actor or named
            tail.extend(list(line) for line in lines)
        pid = int(_WORKER_FILE.match(paths[0].name).group(3))  # type: ignore[union-attr]
        tails[wid] = {"pid": pid, "actor": actor, "tail": tail}
    return tails


def worker_exits(
    logs: Path, wids: Container[str] | None = None, window: Window | None = None, limit: int = MAX_EXITS
) -> dict[str, list[str]]:
    """Unintended worker exits `gcs_server.out` reports, in file order: worker id -> [ip, exit type, detail].

    `wids` keeps those workers only; `window` (seconds since 1970 UTC) those reported then (a node
    that holds the GCS log but not the job's worker files sends the exits of the job's time, at most
    `limit`).
    """
    exits: dict[str, list[str]] = {}
    for line, m in _matches(logs / "gcs_server.out", "Reporting worker exit", _EXIT):
        wid, _node, ip, exit_type, detail = m.groups()
        if exit_type in _INTENDED or (wids is not None and wid not in wids) or not _within(line, window):
            continue
        exits[wid] = [ip, exit_type, detail.strip()[:300]]
        if len(exits) >= limit:
            break
    return exits


def kill_signals(logs: Path, wids: Container[str] | None = None) -> dict[str, str]:
    """Worker id -> the signal the raylet says it sent (`raylet.out`, "sending SIGKILL to pgid=…")."""
    return {
        m.group(3): m.group(1)
        for _line, m in _matches(logs / "raylet.out", "sending SIG", _SIGKILL)
        if wids is None or m.group(3) in wids
    }


def _within(line: str, window: Window | None) -> bool:
    if window is None:
        return True
    stamp = _STAMP.match(line)
    when = epoch(parse(stamp.group(1))) if stamp else None
    start, until = window
    return when is None or ((start is None or when >= start) and (until is None or when <= until))


def combine(
    tails: Mapping[str, Mapping[str, Any]], exits: Mapping[str, list[str]], signals: Mapping[str, str]
) -> list[DeadWorker]:
    """The dead workers: each exit of a worker with files of the job, with its last lines and signal.

    The one place last words are put together, for a folder (`dead_in_folder`) and for the parts
    every node of a cluster sends back (`from_parts`).
    """
    dead = []
    for wid, (ip, exit_type, detail) in exits.items():
        if wid not in tails:
            continue
        mine = tails[wid]
        tail = tuple((str(f), int(n), str(t)) for f, n, t in mine["tail"])
        dead.append(_dead(wid, mine["pid"], mine["actor"], ip, exit_type, detail, signals.get(wid), tail))
        if len(dead) >= MAX_DEAD:
            break
    return dead


def dead_in_folder(logs: Path, job_id: str) -> list[DeadWorker]:
    """The job's workers that died unintentionally, from a session's logs folder."""
    tails = worker_tails(logs, job_id)
    if not tails:
        return []
    return combine(tails, worker_exits(logs, tails), kill_signals(logs, tails))


def folder_parts(logs: Path, job_id: str, window: Window | None = None) -> dict[str, Any]:
    """What one node of a cluster knows of a job's dead workers (plain data, bounded), for `from_parts`.

    A worker's files and the raylet that killed it are on its node; the GCS log, which reports every
    exit, is on the head: each node sends its part and the driver joins them.
    """
    tails = worker_tails(logs, job_id)
    return {"tails": tails, "exits": worker_exits(logs, window=window), "signals": kill_signals(logs, tails)}


def from_parts(parts: Iterable[tuple[str, Mapping[str, Any] | None]]) -> list[DeadWorker]:
    """The dead workers from each node's `folder_parts` (node ip, part): worker files named `<ip>:<file>`."""
    tails: dict[str, dict[str, Any]] = {}
    exits: dict[str, list[str]] = {}
    signals: dict[str, str] = {}
    for ip, part in parts:
        if not part:
            continue
        for wid, mine in part["tails"].items():
            tails[wid] = {**mine, "tail": [[f"{ip}:{f}", n, t] for f, n, t in mine["tail"]]}
        for wid, exit_record in part["exits"].items():
            exits.setdefault(wid, exit_record)
        signals.update(part["signals"])
    return combine(tails, exits, signals)


def _dead(
    wid: str,
    pid: int | None,
    actor: str | None,
    ip: str | None,
    exit_type: str,
    detail: str,
    signal: str | None,
    tail: tuple[tuple[str, int, str], ...],
) -> DeadWorker:
    """A `DeadWorker`; the memory monitor's kills say SIGKILL even where no raylet line did."""
    if signal is None and exit_type == "NODE_OUT_OF_MEMORY":
        signal = "SIGKILL"  # the memory monitor's kill (worker_killing_policy, node_manager.cc)
    return DeadWorker(
        worker_id=wid,
        pid=pid,
        actor=actor,
        node=ip,
        exit_type=exit_type,
        exit_detail=detail.strip()[:300] or None,
        signal=signal,
        last_lines=tail,
    )


def _matches(path: Path, needle: str, pattern: re.Pattern[str]) -> Iterator[tuple[str, re.Match[str]]]:
    for line in _read(path):
        if needle in line:
            m = pattern.search(line)
            if m:
                yield line, m


def dead_live(address: str, job_id: str, fetch: Any, nodes: list[tuple[str, str]]) -> list[DeadWorker]:
    """The job's dead workers from the state API, with last lines fetched from their nodes.

    `nodes` are (node id, ip) pairs; `fetch(node_id, filename)` returns a file's lines, or
    raises; `fetch(node_id, None)` lists a node's log file names.
    """
    from ray.util.state import list_actors, list_workers

    where: dict[str, tuple[str, str, int, list[str]]] = {}
    for node_id, ip in nodes:
        for name in fetch(node_id, None):
            m = _WORKER_FILE.match(name.rsplit("/", 1)[-1])
            if m and m.group(2) == job_id:
                entry = where.setdefault(m.group(1), (node_id, ip, int(m.group(3)), []))
                entry[3].append(name)
    if not where:
        return []
    options: dict[str, Any] = {"address": address, "detail": True, "limit": 500, "raise_on_missing_output": False}
    workers = list_workers(filters=[("is_alive", "=", False)], **options)
    actors = list_actors(filters=[("state", "=", "DEAD"), ("job_id", "=", job_id)], **options)
    classes = {_get(a, "pid"): _get(a, "class_name") for a in actors}
    dead = []
    for w in workers:
        wid, exit_type = str(_get(w, "worker_id")), str(_get(w, "exit_type") or "")
        if wid not in where or not exit_type or exit_type in _INTENDED:
            continue
        node_id, ip, pid, names = where[wid]
        tail: list[tuple[str, int, str]] = []
        for name in sorted(names, key=lambda n: not n.endswith(".err")):
            try:
                tail.extend(last_lines(fetch(node_id, name), f"{ip}:{name}")[1])
            except Exception:  # a worker file the node no longer serves: its exit is still news
                continue
        detail = str(_get(w, "exit_detail") or "").splitlines()
        dead.append(_dead(wid, pid, classes.get(pid), ip, exit_type, detail[0] if detail else "", None, tuple(tail)))
    return dead[:MAX_DEAD]


def _get(record: Any, name: str) -> Any:
    return record.get(name) if isinstance(record, Mapping) else getattr(record, name, None)


def with_last_words(report: Report, dead: list[DeadWorker]) -> Report:
    """The report with `dead` on its Ray death and OOM-kill diagnoses (folded ones too), kernel OOM lines found."""
    if not dead:
        return report
    texts = [ev.text for d in report.diagnoses for x in (d, *d.folded) for ev in x.evidence]
    dead = [replace(d, kernel_oom=_kernel_line(texts, d.pid)) for d in dead]
    return replace(report, diagnoses=tuple(_attach(d, dead) for d in report.diagnoses))


def _kernel_line(texts: list[str], pid: int | None) -> str | None:
    if pid is None:
        return None
    needle = re.compile(rf"Killed process {pid}\b|Out of memory: Kill(?:ed)? process {pid}\b")
    return next((t for t in texts if needle.search(t)), None)


def _attach(diag: Diagnosis, dead: list[DeadWorker]) -> Diagnosis:
    folded = tuple(_attach(f, dead) for f in diag.folded)
    if diag.id not in DEATHS:
        return replace(diag, folded=folded) if folded != diag.folded else diag
    oom = diag.id != "ray-actor-died"
    chosen = tuple(d for d in dead if not oom or d.exit_type == "NODE_OUT_OF_MEMORY" or d.kernel_oom) or (
        () if oom else tuple(dead)
    )
    return replace(diag, folded=folded, details=replace(diag.details, dead=chosen))
