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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rlfix.details import DeadWorker
from rlfix.report import Diagnosis, Report

#: Lines kept from the end of each of a dead worker's .err and .out.
LAST_LINES = 4
#: Dead workers kept per job (the earliest first).
MAX_DEAD = 8
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


def dead_in_folder(logs: Path, job_id: str) -> list[DeadWorker]:
    """The job's workers that died unintentionally, from a session's logs folder."""
    files: dict[str, list[Path]] = {}
    for path in sorted(logs.glob("worker-*")):
        m = _WORKER_FILE.match(path.name)
        if m and m.group(2) == job_id:
            files.setdefault(m.group(1), []).append(path)
    if not files:
        return []
    signals = {m.group(3): m.group(1) for m in _matches(logs / "raylet.out", "sending SIG", _SIGKILL)}
    dead = []
    for m in _matches(logs / "gcs_server.out", "Reporting worker exit", _EXIT):
        wid, _node, ip, exit_type, detail = m.groups()
        if wid not in files or exit_type in _INTENDED:
            continue
        actor: str | None = None
        tail: list[tuple[str, int, str]] = []
        for path in sorted(files[wid], key=lambda p: not p.name.endswith(".err")):
            named, lines = last_lines(_read(path), path.name)
            actor = actor or named
            tail.extend(lines)
        pid = int(_WORKER_FILE.match(files[wid][0].name).group(3))  # type: ignore[union-attr]
        dead.append(_dead(wid, pid, actor, ip, exit_type, detail, signals.get(wid), tuple(tail)))
        if len(dead) >= MAX_DEAD:
            break
    return dead


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


def _matches(path: Path, needle: str, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
    for line in _read(path):
        if needle in line:
            m = pattern.search(line)
            if m:
                yield m


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
