"""A real local Ray head for the Ray integration tests (CPU only, dashboard on, loopback only).

Used as a session-scoped fixture by tests/test_ray_*.py and runnable by hand for exploration:
`python -m tests.ray_cluster` starts a head, prints its addresses and waits for Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

#: Memory the OOM scenario may grow above what the machine already uses before Ray kills it.
OOM_HEADROOM_GIB = 2.5


def free_port() -> int:
    """A TCP port nobody listens on right now (loopback)."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` different TCP ports nobody listens on right now (loopback).

    The sockets are held open together until all are chosen: ports picked one at a time may come
    back the same (the kernel reuses a port it just freed), and Ray refuses two components on one port.
    """
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]


def write_token(path: Path) -> Path:
    """A new Ray auth token at `path`, readable by its owner only (as `ray get-auth-token --generate`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(secrets.token_hex(32), encoding="ascii")
    path.chmod(0o600)
    return path


def memory_threshold(headroom_gib: float = OOM_HEADROOM_GIB) -> float:
    """A `RAY_memory_usage_threshold` a few GiB above the machine's current use.

    A fixed low fraction would make the memory monitor kill innocent workers whenever
    something else on the machine is busy; a threshold relative to the current use keeps the
    OOM scenario's allocation small (a few GiB) and still kills it for real.
    """
    info: dict[str, int] = {}
    with open("/proc/meminfo", encoding="ascii") as fh:
        for line in fh:
            key, value = line.split(":", 1)
            info[key] = int(value.split()[0]) * 1024
    total, available = info["MemTotal"], info["MemAvailable"]
    used = total - available
    return min(0.9, (used + headroom_gib * (1 << 30)) / total)


@dataclass
class RayHead:
    """A running `ray start --head`: where to reach it and where its files are."""

    temp_dir: Path
    home: Path
    gcs_address: str
    dashboard_url: str
    env: dict[str, str] = field(default_factory=dict)

    @property
    def logs_dir(self) -> Path:
        return self.temp_dir / "session_latest" / "logs"

    def pids(self) -> list[int]:
        """Processes of this cluster: every one names its own temp dir on its command line."""
        mark = str(self.temp_dir).encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if mark in cmdline:
                found.append(int(entry.name))
        return found

    def stop(self) -> None:
        """Stop this head only, by pid (`ray stop` would also stop other clusters on the machine)."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = self.pids()
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + 10
            while pids and time.monotonic() < deadline:
                time.sleep(0.2)
                pids = self.pids()
            if not pids:
                break


def start_head(
    base: Path, *, memory_usage_threshold: float | None = None, timeout: float = 90.0, token_auth: bool = True
) -> RayHead:
    """Start a Ray head with the Jobs API under `base`; raise if it is not up in `timeout` s.

    A port chosen free can be taken by another process before Ray binds it: `ray start` is tried
    up to three times, with new ports each time.
    """
    for attempt in range(3):
        try:
            return _start_head_once(
                base, memory_usage_threshold=memory_usage_threshold, timeout=timeout, token_auth=token_auth
            )
        except PortTaken:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


class PortTaken(RuntimeError):
    """`ray start` failed because a port it was given was in use by then."""


def _start_head_once(base: Path, *, memory_usage_threshold: float | None, timeout: float, token_auth: bool) -> RayHead:
    """One `ray start --head` (see `start_head`).

    With `token_auth` (the default, as production clusters run) the head requires Ray's auth token,
    kept where RAY_AUTH_TOKEN_PATH names it (else in the head's own `$HOME/.ray/auth_token`); `env` holds
    what a user's shell holds to talk to it: HOME, RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH.
    """
    # Ray's unix sockets live under the temp dir and must stay under ~107 bytes: keep it short.
    temp_dir = Path(os.environ.get("RLFIX_TEST_RAY_TMP") or f"/tmp/rfxt{os.getpid()}")
    if temp_dir.exists():
        shutil.rmtree(temp_dir, ignore_errors=True)
    temp_dir.mkdir(parents=True)
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    port, dash, *others = free_ports(7)
    env = {
        **os.environ,
        "HOME": str(home),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_memory_monitor_refresh_ms": "100",
        # Job drivers and `ray` CLI calls from the tests must reach this head, not another one.
        "RAY_ADDRESS": f"127.0.0.1:{port}",
    }
    if token_auth:
        # The token the environment names, as a user's shell does (the test session sets one up
        # before Ray is imported: Ray reads RAY_AUTH_MODE once per process); else a new one.
        named = os.environ.get("RAY_AUTH_TOKEN_PATH")
        token_file = Path(named) if named and Path(named).is_file() else write_token(home / ".ray" / "auth_token")
        env["RAY_AUTH_MODE"] = "token"
        env["RAY_AUTH_TOKEN_PATH"] = str(token_file)
    if memory_usage_threshold is not None:
        env["RAY_memory_usage_threshold"] = f"{memory_usage_threshold:.3f}"
    ray = Path(sys.executable).with_name("ray")
    cmd = [
        str(ray),
        "start",
        "--head",
        "--node-ip-address=127.0.0.1",
        f"--port={port}",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={dash}",
        "--include-dashboard=true",
        # Every port explicit and free: other Ray clusters may run on this machine (default ports clash).
        f"--dashboard-agent-listen-port={others[0]}",
        f"--dashboard-agent-grpc-port={others[1]}",
        f"--metrics-export-port={others[2]}",
        f"--runtime-env-agent-port={others[3]}",
        f"--ray-client-server-port={others[4]}",
        # Logical CPUs, not cores: the trial (tests/test_ray_trial.py) runs nine jobs with their actors
        # and tasks at once, and none of them may queue for a CPU slot on a 2-core machine.
        "--num-cpus=16",
        "--num-gpus=0",
        f"--temp-dir={temp_dir}",
        "--disable-usage-stats",
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    head = RayHead(temp_dir, home, f"127.0.0.1:{port}", f"http://127.0.0.1:{dash}", env)
    if proc.returncode != 0:
        head.stop()
        taken = "port" in proc.stderr and ("used by other components" in proc.stderr or "in use" in proc.stderr)
        raise (PortTaken if taken else RuntimeError)(f"ray start failed ({proc.returncode}): {proc.stderr[-2000:]}")
    deadline = time.monotonic() + timeout
    while True:
        try:
            headers = {"Authorization": f"Bearer {token_file.read_text()}"} if token_auth else {}
            request = urllib.request.Request(f"{head.dashboard_url}/api/version", headers=headers)
            with urllib.request.urlopen(request, timeout=5) as resp:
                if resp.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            head.stop()
            raise RuntimeError(f"Ray dashboard at {head.dashboard_url} did not come up in {timeout:.0f} s")
        time.sleep(0.5)
    return head


if __name__ == "__main__":
    import tempfile

    running = start_head(Path(tempfile.mkdtemp(prefix="rfx")), memory_usage_threshold=memory_threshold())
    print(f"gcs {running.gcs_address}  dashboard {running.dashboard_url}  logs {running.logs_dir}", flush=True)
    print(f"HOME={running.home} RAY_ADDRESS={running.gcs_address}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        running.stop()
