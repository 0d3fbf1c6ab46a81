"""The worker pools of `--jobs` and `rlfix triage`, started the same way on every Python.

The start method is chosen here, not left to the interpreter: Python 3.14 changes the default on
Linux from fork to forkserver, and 3.12+ warns when a multi-threaded process forks (numpy's BLAS
threads are enough). forkserver is the default where the platform has it, spawn elsewhere;
``RLFIX_START_METHOD`` (fork, forkserver or spawn) overrides it. Whatever the method, what a
worker needs travels as pickled initializer arguments, so all three give the same report.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from rlfix.errors import UsageError

START_METHODS = ("fork", "forkserver", "spawn")
# Imported once by the fork server, so each worker it forks starts with rlfix already loaded.
_PRELOAD = ["rlfix.match.ranges", "rlfix.fleet.gather"]


def start_method() -> str:
    """The start method the pools use here (RLFIX_START_METHOD, else forkserver, else spawn)."""
    available = multiprocessing.get_all_start_methods()
    chosen = os.environ.get("RLFIX_START_METHOD", "").strip().lower()
    if chosen:
        if chosen not in START_METHODS or chosen not in available:
            raise UsageError(
                f"RLFIX_START_METHOD={chosen!r}: give one of {', '.join(m for m in START_METHODS if m in available)}"
            )
        return chosen
    return "forkserver" if "forkserver" in available else "spawn"


def process_pool(workers: int, initializer: Callable[..., None], initargs: tuple[Any, ...]) -> ProcessPoolExecutor:
    """A pool of `workers` processes, each set up by `initializer(*initargs)`."""
    method = start_method()
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(_PRELOAD)
    return ProcessPoolExecutor(workers, mp_context=context, initializer=initializer, initargs=initargs)
