"""The worker pools of `--jobs` and `rlfix triage`, started the same way on every Python.

The start method is chosen here, not left to the interpreter: Python 3.14 changes the default on
Linux from fork to forkserver, and 3.12+ warns when a multi-threaded process forks. As a library
(a notebook, a Ray driver: processes with threads rlfix knows nothing of) rlfix uses forkserver
where the platform has it, spawn elsewhere. The `rlfix` command knows its own process (one thread,
and numpy's idle BLAS threads, which the workers never use) and prefers fork where it exists:
forkserver's server imports rlfix afresh, about 0.15 s per run (measured on a 300 MB log, 0.61 s
with fork, 0.75 s with forkserver). ``RLFIX_START_METHOD`` (fork, forkserver or spawn) overrides
both. Whatever the method, what a worker needs travels as pickled initializer arguments, so all
three give the same report (tests/test_parallel.py runs each).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlfix.errors import UsageError

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

# multiprocessing and concurrent.futures are imported only when a pool is wanted: the `rlfix`
# command imports this module at start-up (`prefer`), and most of its runs start no pool.

START_METHODS = ("fork", "forkserver", "spawn")
# Imported once by the fork server, so each worker it forks starts with rlfix already loaded.
_PRELOAD = ["rlfix.match.ranges", "rlfix.fleet.gather"]


#: The method a program embedding rlfix prefers (`prefer`); None: the library's default.
_preferred: str | None = None


def prefer(method: str) -> None:
    """Use `method` when this platform has it and RLFIX_START_METHOD does not say otherwise."""
    global _preferred
    _preferred = method


def start_method() -> str:
    """The start method the pools use here (RLFIX_START_METHOD, else the preferred one, else
    forkserver, else spawn)."""
    import multiprocessing

    available = multiprocessing.get_all_start_methods()
    chosen = os.environ.get("RLFIX_START_METHOD", "").strip().lower()
    if chosen:
        if chosen not in START_METHODS or chosen not in available:
            raise UsageError(
                f"RLFIX_START_METHOD={chosen!r}: give one of {', '.join(m for m in START_METHODS if m in available)}"
            )
        return chosen
    if _preferred in available:
        return _preferred
    return "forkserver" if "forkserver" in available else "spawn"


def process_pool(workers: int, initializer: Callable[..., None], initargs: tuple[Any, ...]) -> ProcessPoolExecutor:
    """A pool of `workers` processes, each set up by `initializer(*initargs)`."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = start_method()
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(_PRELOAD)
    return ProcessPoolExecutor(workers, mp_context=context, initializer=initializer, initargs=initargs)


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """End a pool at once: cancel what has not started and terminate the workers.

    For an interrupted run (Ctrl-C, SIGTERM, an error): `shutdown(wait=True)` would wait for every
    job in flight, and a job stuck in a slow pattern can take minutes; without wait, the workers
    outlive the command as orphans.
    """
    pool.shutdown(wait=False, cancel_futures=True)
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()
