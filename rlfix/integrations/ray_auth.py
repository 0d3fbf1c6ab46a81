"""The user's Ray auth token, found where Ray's own CLI finds it.

A cluster started with `RAY_AUTH_MODE=token` refuses HTTP requests without `Authorization: Bearer
<token>` (401) and with a wrong one (403), and gRPC calls with `UNAUTHENTICATED`. Ray's clients read
the token from `RAY_AUTH_TOKEN`, else the file named by `RAY_AUTH_TOKEN_PATH`, else
`~/.ray/auth_token` (ray/_private/authentication/authentication_token_setup.py), and send it when
`RAY_AUTH_MODE=token`. rlfix's own HTTP probe sends the same header, so a cluster with token auth
works with every Ray face exactly when `ray job status` works in the same shell.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: At most this many bytes are read from a token file (a Ray token is 64 hex characters).
MAX_TOKEN_BYTES = 4096
FIX = (
    "set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH, default ~/.ray/auth_token) "
    "to the cluster's token, as for `ray job status`"
)


@dataclass(frozen=True)
class Token:
    """A configured token and where it came from (named in errors; the value never is)."""

    value: str
    source: str


def auth_mode_is_token() -> bool:
    """Whether the user asked Ray's clients to authenticate (`RAY_AUTH_MODE=token`)."""
    return os.environ.get("RAY_AUTH_MODE", "").strip().lower() == "token"


def configured_token() -> Token | None:
    """The token Ray's CLI would send from this environment, or None (no token mode, or none found)."""
    if not auth_mode_is_token():
        return None
    value = os.environ.get("RAY_AUTH_TOKEN", "").strip()
    if value:
        return Token(value, "RAY_AUTH_TOKEN")
    named = os.environ.get("RAY_AUTH_TOKEN_PATH", "").strip()
    path = Path(named).expanduser() if named else Path.home() / ".ray" / "auth_token"
    source = f"RAY_AUTH_TOKEN_PATH={named}" if named else "~/.ray/auth_token"
    try:
        with open(path, "rb") as fh:
            value = fh.read(MAX_TOKEN_BYTES).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return Token(value, source) if value else None


def auth_headers() -> dict[str, str]:
    """The header Ray's HTTP clients send, when a token is configured (else none)."""
    token = configured_token()
    return {"Authorization": f"Bearer {token.value}"} if token else {}


def refusal(status: int | None = None) -> str:
    """Why a cluster with token auth refused us, and what to do, in one clause (no token value)."""
    token = configured_token()
    if token is None:
        if auth_mode_is_token():
            return f"the cluster uses token authentication and no token was found: {FIX}"
        return f"the cluster uses token authentication: {FIX}"
    if status == 401:
        return f"the cluster did not accept the request with the token from {token.source}"
    return f"the cluster refused the token from {token.source}: it is not this cluster's token"
