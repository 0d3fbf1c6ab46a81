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
import socket
import threading
import urllib.parse
from collections.abc import Callable
from typing import Literal, TypeVar

from rlfix.errors import InputError, RlfixError, UsageError

#: Seconds a connection to a cluster may take (`--timeout`).
DEFAULT_TIMEOUT = 30.0
#: The GCS port `ray start --head` uses unless told otherwise.
DEFAULT_GCS_PORT = 6379
#: Seconds the probe of an address may take at most: a dashboard or a GCS answers at once.
PROBE_TIMEOUT = 3.0
#: The dashboard port `ray start --head` uses unless told otherwise.
DEFAULT_DASHBOARD_PORT = 8265
AUTH_HINT = (
    "the cluster uses token authentication: set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN "
    "(or RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token) to the cluster's token"
)

Kind = Literal["dashboard", "auth", "closed", "not-http"]
T = TypeVar("T")


def split_address(address: str) -> tuple[str, int | None]:
    """(host, port) of `http://h:p`, `h:p`, `ray://h:p` or `h`; port None when absent or not a number."""
    parsed = urllib.parse.urlsplit(address if "://" in address else f"//{address}")
    try:
        port = parsed.port
    except ValueError:
        port = None
    return parsed.hostname or "127.0.0.1", port


def probe(host: str, port: int, timeout: float) -> Kind:
    """What listens at host:port: the Ray dashboard, a dashboard asking for a token, nothing, or not HTTP."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", "/api/version")
        status = conn.getresponse().status
    except ConnectionRefusedError:
        return "closed"
    except socket.gaierror:
        return "closed"
    except (http.client.HTTPException, OSError):
        return "not-http"  # a gRPC server (the GCS) answers HTTP/1.1 with HTTP/2 frames, or not at all
    finally:
        conn.close()
    return "auth" if status in (401, 403) else "dashboard"


def dashboard_for(address: str, timeout: float) -> str | None:
    """The dashboard URL when `address` is the dashboard (with or without `http://`); None when it is not HTTP.

    Raises a one-line error when nothing listens there or the dashboard wants a token.
    """
    host, port = split_address(address)
    timeout = min(timeout, PROBE_TIMEOUT)
    if port is None:
        if address.startswith(("http://", "https://")):
            return address.rstrip("/")
        raise UsageError(f"{address}: give host:port, e.g. http://{host}:{DEFAULT_DASHBOARD_PORT} (the dashboard)")
    kind = probe(host, port, timeout)
    if kind == "closed":
        raise InputError(f"cannot reach a Ray cluster at {address}: nothing listens on {host}:{port}")
    if kind == "auth":
        raise InputError(f"the Ray dashboard at {address} refused the request: {AUTH_HINT}")
    if kind == "dashboard":
        return address.rstrip("/") if "://" in address else f"http://{host}:{port}"
    if address.startswith(("http://", "https://")):
        raise UsageError(
            f"{address} does not answer HTTP, so it is not the Ray dashboard (it may be the GCS address); "
            f"give the dashboard, e.g. http://{host}:{DEFAULT_DASHBOARD_PORT}"
        )
    return None


def require_gcs(address: str, timeout: float, command: str = "this command") -> None:
    """Refuse a dashboard address where the GCS one is wanted, naming the one to use; check the port is open."""
    host, port = split_address(address)
    timeout = min(timeout, PROBE_TIMEOUT)
    if address.startswith(("http://", "https://")) or (port is not None and probe(host, port, timeout) != "not-http"):
        if port is not None and not address.startswith(("http://", "https://")):
            dashboard_for(address, timeout)  # nothing there, or a token wanted: say that instead
        raise UsageError(
            f"{address} is the Ray dashboard; {command} needs the cluster (GCS) address, "
            f"e.g. {host}:{DEFAULT_GCS_PORT} (`ray start` prints it as --address='{host}:{DEFAULT_GCS_PORT}')"
        )
    if port is None:
        raise UsageError(f"{address}: give host:port, e.g. {host}:{DEFAULT_GCS_PORT} (the GCS address)")


def bounded(call: Callable[[], T], timeout: float, what: str, spent: float = 0.0) -> T:
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
    thread.join(max(0.1, timeout - spent))
    if thread.is_alive():
        raise InputError(f"{what}: no answer within {timeout:g} s (raise it with --timeout)")
    if failure:
        raise one_line_error(failure[0], what) from failure[0]
    return result[0]


def one_line_error(exc: BaseException, what: str) -> RlfixError:
    """A Ray client error as one line: an auth problem asks for the token; rlfix's own errors pass as they are."""
    if isinstance(exc, RlfixError):
        return exc
    name = type(exc).__name__
    text = str(getattr(exc, "message", "") or exc).strip()
    if name == "AuthenticationError" or "UNAUTHENTICATED" in text or "401" in text.split(" ", 3)[:3]:
        return InputError(f"{what}: {AUTH_HINT}")
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
