"""Ray addresses and connection errors: which address is which, and one bounded line when it fails.

A Ray cluster has two addresses users meet: the dashboard (HTTP, `http://head:8265`, what the
Jobs and state APIs use) and the GCS (gRPC, `head:6379`, what `ray.init` and `ray status` use).
`ray start` prints both, the dashboard without `http://`. Ray itself, given the wrong one, retries
for a minute and ends in a gRPC traceback. Here an address is probed first (one HTTP request, at
most `timeout` seconds): a dashboard answers `/api/version`, a GCS does not speak HTTP/1.1, a
closed port refuses at once. Every call into Ray that may block runs under `bounded()`, and every
error from Ray becomes one `InputError` line (exit 2), naming the right address or the missing
auth token.
"""

from __future__ import annotations

import functools
import http.client
import os
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from rlfix.errors import InputError, RlfixError, UsageError
from rlfix.integrations.ray_auth import auth_headers, configured_token, refusal

#: Seconds a connection to a cluster may take (`--timeout`).
DEFAULT_TIMEOUT = 30.0
#: The GCS port `ray start --head` uses unless told otherwise.
DEFAULT_GCS_PORT = 6379
#: Seconds the probe of an address may take at most: a dashboard or a GCS answers at once.
PROBE_TIMEOUT = 3.0
#: The dashboard port `ray start --head` uses unless told otherwise.
DEFAULT_DASHBOARD_PORT = 8265

Kind = Literal["dashboard", "auth", "closed", "unresolved", "silent", "not-http", "not-dashboard"]
T = TypeVar("T")


@dataclass(frozen=True)
class Probed:
    """What answered at host:port, and the HTTP status when something did."""

    kind: Kind
    status: int | None = None


def split_address(address: str) -> tuple[str, int | None]:
    """(host, port) of `http://h:p`, `h:p`, `ray://h:p` or `h`; port None when absent or not a number."""
    parsed = urllib.parse.urlsplit(address if "://" in address else f"//{address}")
    try:
        port = parsed.port
    except ValueError:
        port = None
    return parsed.hostname or "127.0.0.1", port


def probe(host: str, port: int, timeout: float) -> Probed:
    """What listens at host:port: the Ray dashboard, one asking for a token, nothing, or not HTTP.

    The request carries the user's Ray token when one is configured (`ray_auth`), as Ray's own
    clients send it, so a cluster with token auth answers it like any other.
    """
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        try:
            conn.connect()
        except ConnectionRefusedError:
            return Probed("closed")
        except socket.gaierror:
            return Probed("unresolved")
        except TimeoutError:  # no SYN-ACK: a black hole or a firewall (socket.timeout is TimeoutError)
            return Probed("silent")
        except OSError:
            return Probed("closed")  # unreachable network or host
        try:
            conn.request("GET", "/api/version", headers=auth_headers())
            response = conn.getresponse()
            status = response.status
            body = response.read(4096) if status == 200 else b""
        except (http.client.HTTPException, OSError):
            # A gRPC server (the GCS) answers HTTP/1.1 with HTTP/2 frames, or closes the connection.
            return Probed("not-http")
    finally:
        conn.close()
    if status in (401, 403):
        return Probed("auth", status)
    # Ray's dashboard answers /api/version with JSON naming its Ray version; other HTTP servers
    # (Ray's own metrics port, a proxy) answer something else.
    return Probed("dashboard" if status == 200 and b"ray_version" in body else "not-dashboard", status)


def dashboard_for(address: str, timeout: float) -> str | None:
    """The dashboard URL when `address` is the dashboard (with or without `http://`); None when it is not HTTP.

    Raises a one-line error when nothing listens there, the name does not resolve, nothing
    answers in time, an HTTP server that is not the dashboard answers, or the dashboard wants a token.
    """
    host, port = split_address(address)
    timeout = min(timeout, PROBE_TIMEOUT)
    if port is None:
        if address.startswith(("http://", "https://")):
            return address.rstrip("/")
        raise UsageError(f"{address}: give host:port, e.g. http://{host}:{DEFAULT_DASHBOARD_PORT} (the dashboard)")
    found = probe(host, port, timeout)
    _refuse_unreachable(address, host, port, found, timeout)
    if found.kind == "dashboard":
        return address.rstrip("/") if "://" in address else f"http://{host}:{port}"
    if found.kind == "not-dashboard":
        raise UsageError(
            f"{address} answers HTTP {found.status} to /api/version, so it is not the Ray dashboard "
            "(the dashboard is the address `ray start` prints for the dashboard, port 8265 by default)"
        )
    if address.startswith(("http://", "https://")):
        raise UsageError(
            f"{address} does not answer HTTP, so it is not the Ray dashboard (it may be the GCS address); "
            f"give the dashboard, e.g. http://{host}:{DEFAULT_DASHBOARD_PORT}"
        )
    return None


def _refuse_unreachable(address: str, host: str, port: int, found: Probed, timeout: float) -> None:
    """One true line for an address where no usable cluster answers (else nothing)."""
    if found.kind == "closed":
        raise InputError(f"cannot reach a Ray cluster at {address}: nothing listens on {host}:{port}")
    if found.kind == "unresolved":
        raise InputError(f"cannot reach a Ray cluster at {address}: the host name {host!r} does not resolve")
    if found.kind == "silent":
        raise InputError(f"cannot reach a Ray cluster at {address}: nothing answered within {timeout:g} s")
    if found.kind == "auth":
        raise InputError(f"the Ray dashboard at {address} refused the request: {refusal(found.status)}")


def require_gcs(address: str, timeout: float, command: str = "this command") -> None:
    """Refuse a dashboard address where the GCS one is wanted, naming the one to use; check the port is open."""
    host, port = split_address(address)
    timeout = min(timeout, PROBE_TIMEOUT)
    found = probe(host, port, timeout) if port is not None and not address.startswith(("http://", "https://")) else None
    if found is not None and port is not None:
        _refuse_unreachable(address, host, port, found, timeout)  # nothing there, or a token wanted: say that
    if address.startswith(("http://", "https://")) or (found is not None and found.kind != "not-http"):
        raise UsageError(
            f"{address} is the Ray dashboard; {command} needs the cluster (GCS) address, "
            f"e.g. {host}:{DEFAULT_GCS_PORT} (`ray start` prints it as --address='{host}:{DEFAULT_GCS_PORT}')"
        )
    if port is None:
        raise UsageError(f"{address}: give host:port, e.g. {host}:{DEFAULT_GCS_PORT} (the GCS address)")


def bounded(
    call: Callable[[], T],
    timeout: float,
    what: str,
    spent: float = 0.0,
    abort_if: Callable[[], str | None] | None = None,
) -> T:
    """Run a call into Ray with a time limit; any error it raises becomes one `InputError` line.

    The call runs in a daemon thread: after `timeout - spent` seconds (`spent`: what earlier
    steps of the same connection already waited) the caller gets an error and goes on (Ray's own
    retries are left to die with the process).
    """
    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # handed to the caller below
            failure.append(exc)

    thread = threading.Thread(target=target, name="rlfix-ray-call", daemon=True)
    thread.start()
    deadline = time.monotonic() + max(0.1, timeout - spent)
    while thread.is_alive() and time.monotonic() < deadline:
        thread.join(min(0.2, max(0.0, deadline - time.monotonic())) if abort_if else deadline - time.monotonic())
        reason = abort_if() if abort_if is not None and thread.is_alive() else None
        if reason:
            raise InputError(reason)
    if thread.is_alive():
        raise InputError(f"{what}: no answer within {timeout:g} s (raise it with --timeout)")
    if failure:
        raise one_line_error(failure[0], what) from failure[0]
    return result[0]


#: What Ray's C++ client prints when a cluster with token auth refuses it.
_AUTH_REFUSED = (b"Unauthenticated", b"InvalidAuthToken", b"UNAUTHENTICATED", b"PermissionDenied")


def init_quietly(init: Callable[[], object], timeout: float, what: str, spent: float = 0.0) -> None:
    """Run `ray.init` (inside `init`) bounded, with what Ray's C++ core prints kept off the terminal.

    Ray's GCS client logs to the process's stderr (file descriptor 2, below Python) and, refused by
    a cluster with token auth, retries for 20 s printing a warning each time. Its output goes to
    a temporary file instead; a refusal seen there ends the wait at once with one line naming the
    fix, and any other failure shows Ray's last line, not all of them.
    """
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:

            def refused() -> str | None:
                size = os.fstat(caught.fileno()).st_size
                head = os.pread(caught.fileno(), min(size, 1 << 20), 0)
                return f"{what}: {refusal(None)}" if any(m in head for m in _AUTH_REFUSED) else None

            bounded(init, timeout, what, spent, abort_if=refused)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def one_line_error(exc: BaseException, what: str) -> RlfixError:
    """A Ray client error as one line: an auth problem asks for the token; rlfix's own errors pass as they are."""
    if isinstance(exc, RlfixError):
        return exc
    name = type(exc).__name__
    text = str(getattr(exc, "message", "") or exc).strip()
    if name == "AuthenticationError" or "UNAUTHENTICATED" in text.upper() or "InvalidAuthToken" in text:
        return InputError(f"{what}: {refusal(403 if configured_token() else 401)}")
    if "401" in text.split(" ", 3)[:3] or "Authentication required" in text:
        return InputError(f"{what}: {refusal(401)}")
    if "403" in text.split(" ", 3)[:3] or "Authentication failed" in text:
        return InputError(f"{what}: {refusal(403)}")
    first = text.splitlines()[0] if text else name
    return InputError(f"{what}: {first[:300]}")


#: Modules whose exceptions are the Ray client's (or its transports'): caught at the boundary.
CLIENT_MODULES = ("ray", "grpc", "requests", "urllib3", "aiohttp", "websockets")
F = TypeVar("F", bound=Callable[..., object])


def ray_boundary(what: str) -> Callable[[F], F]:
    """Decorate a public entry point: a Ray client error escaping it becomes one `InputError` line."""

    def wrap(func: F) -> F:
        @functools.wraps(func)
        def guarded(*args: object, **kwargs: object) -> object:
            try:
                return func(*args, **kwargs)
            except (ConnectionError, TimeoutError) as exc:
                raise one_line_error(exc, what) from exc
            except Exception as exc:
                if not type(exc).__module__.startswith(CLIENT_MODULES):
                    raise
                raise one_line_error(exc, what) from exc

        return guarded  # type: ignore[return-value]

    return wrap
