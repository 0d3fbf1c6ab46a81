"""The CLI as users run it: the installed console script in a subprocess, plus click's runner."""

from __future__ import annotations

import gzip
import http.server
import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlfix.cli import cli
from tests.conftest import RunCli

CRASH = "step 3\n[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"


def test_stdin_and_exit_code_1_when_diagnosed(run_cli: RunCli) -> None:
    proc = run_cli(["diagnose"], stdin=CRASH)
    assert proc.returncode == 1, proc.stderr
    assert "cuda-illegal-memory-access" in proc.stdout
    assert "line 2 [rank 1]" in proc.stdout
    assert "\x1b[" not in proc.stdout  # piped: plain text


def test_dash_means_stdin(run_cli: RunCli) -> None:
    assert run_cli(["diagnose", "-"], stdin=CRASH).returncode == 1


def test_exit_code_0_when_nothing_recognised(run_cli: RunCli) -> None:
    proc = run_cli(["diagnose"], stdin="all fine\n")
    assert proc.returncode == 0
    assert "no failure recognised" in proc.stdout


def test_missing_path_is_one_line_exit_2_and_other_inputs_still_read(run_cli: RunCli, tmp_path: Path) -> None:
    good = tmp_path / "job.log"
    good.write_text(CRASH)
    proc = run_cli(["diagnose", str(tmp_path / "nope.log"), str(good)])
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"rlfix: error: {tmp_path / 'nope.log'}: no such file or directory"]
    assert "Traceback" not in proc.stderr
    assert "cuda-illegal-memory-access" in proc.stdout


def test_gzip_and_directories(run_cli: RunCli, tmp_path: Path) -> None:
    logs = tmp_path / "logs" / "node1"
    logs.mkdir(parents=True)
    (logs / "worker.log.gz").write_bytes(gzip.compress(CRASH.encode()))
    (logs / "other.log").write_text("nothing\n")
    proc = run_cli(["diagnose", str(tmp_path / "logs"), "--format", "json"])
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["top"] == "cuda-illegal-memory-access"
    assert data["diagnoses"][0]["evidence"][0]["source"].endswith("worker.log.gz")


def test_formats(run_cli: RunCli) -> None:
    md = run_cli(["diagnose", "--format", "markdown"], stdin=CRASH)
    assert md.stdout.startswith("## rlfix diagnosis")
    html = run_cli(["diagnose", "--format", "html"], stdin=CRASH)
    assert html.stdout.lstrip().lower().startswith("<!doctype html>")


def test_output_file(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli(["diagnose", "-f", "json", "-o", str(out)], stdin=CRASH)
    assert proc.returncode == 1 and proc.stdout == ""
    assert json.loads(out.read_text())["version"] == 1


def test_usage_error_is_exit_2(run_cli: RunCli) -> None:
    proc = run_cli(["diagnose", "--format", "pdf"], stdin=CRASH)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_explain_and_kb_commands(run_cli: RunCli) -> None:
    explain = run_cli(["explain", "cuda-illegal-memory-access"])
    assert explain.returncode == 0 and "How to fix" in explain.stdout
    unknown = run_cli(["explain", "no-such-id"])
    assert unknown.returncode == 2 and unknown.stderr.startswith("rlfix: error: unknown id")
    listing = run_cli(["kb", "list"])
    assert listing.returncode == 0 and "cuda-illegal-memory-access" in listing.stdout
    show = run_cli(["kb", "show", "cuda-illegal-memory-access"])
    assert "anchors:" in show.stdout
    info = run_cli(["kb", "info"])
    assert "engine:" in info.stdout
    assert re.search(r"\(\d+ signatures, \d{4,} known messages, digest ", info.stdout), info.stdout


def test_user_kb_with_problems_names_file_and_line(run_cli: RunCli, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "bad.yaml").write_text("signatures:\n  - id: Bad_Id\n    title: x\n")
    proc = run_cli(["diagnose", "--kb", str(kb)], stdin=CRASH)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "bad.yaml:2:" in proc.stderr
    lint = run_cli(["kb", "lint", "--kb", str(kb)])
    assert lint.returncode == 2 and "bad.yaml:2:" in lint.stderr


def test_python_dash_m(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "rlfix", "diagnose", "-"], input=CRASH, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1 and "cuda-illegal-memory-access" in proc.stdout


def test_click_runner_agrees() -> None:
    result = CliRunner().invoke(cli, ["diagnose", "-"], input=CRASH)
    assert result.exit_code == 1
    assert "cuda-illegal-memory-access" in result.output


def test_help_documents_exit_status(run_cli: RunCli) -> None:
    out = run_cli(["diagnose", "--help"]).stdout
    assert "Exit status" in out and "2  usage error" in out


def test_exit_status_of_a_saved_log(run_cli: RunCli, tmp_path: Path) -> None:
    """`--exit-status` for logs a wrapper script saved: 137, -9 and SIGKILL mean the same."""
    log = tmp_path / "job.log"
    log.write_text("step 3 loss 0.2\n")
    for status in ("137", "-9", "SIGKILL"):
        proc = run_cli(["diagnose", str(log), "--exit-status", status, "-f", "json"])
        assert proc.returncode == 1, proc.stderr
        data = json.loads(proc.stdout)
        assert data["failed"] is True and data["top"] == "host-oom-sigkill"
    proc = run_cli(["diagnose", str(log), "--exit-status", "1"])
    assert proc.returncode == 1 and "the command failed (exit status 1)" in proc.stdout
    assert run_cli(["diagnose", str(log), "--exit-status", "0"]).returncode == 0
    bad = run_cli(["diagnose", str(log), "--exit-status", "SIGNOPE"])
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown exit status" in bad.stderr


def test_ray_commands_share_the_view_options(tmp_path: Path) -> None:
    """Issue 11 item 8: `rlfix ray job|logs|cluster` take the options `diagnose` takes."""
    for command in (["ray", "job"], ["ray", "logs"], ["ray", "cluster"]):
        helped = CliRunner().invoke(cli, [*command, "--help"], terminal_width=200).output
        for option in ("--top", "--all", "--all-flags", "-o, --output", "--format", "-v, --verbose", "--color"):
            assert option in helped, (command, option)
    logs = tmp_path / "logs"
    logs.mkdir()
    oom = "Task was killed due to the node running low on memory."
    (logs / "raylet.out").write_text(f"[2026-11-22 01:10:16,361 I 1 1] (raylet) node_manager.cc:1: {oom}\n")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(cli, ["ray", "logs", str(logs), "-f", "json", "-o", str(out), "--top", "1", "-v"])
    assert result.exit_code == 1, result.output
    # A folder with no job: the kill is the node's own finding (one section per job, then the node's).
    doc = json.loads(out.read_text())
    assert result.output == "" and doc["jobs"] == [] and doc["node"]["report"]["top"] == "ray-oom-killer"


# --- Ray connection problems (issue 11 item 5): one line, exit 2, within --timeout; no cluster needed.


class _Dashboard(http.server.BaseHTTPRequestHandler):
    """Answers like a Ray dashboard: /api/version, and 404 for any job."""

    status = 200

    def do_GET(self) -> None:
        body = json.dumps({"version": "4", "ray_version": "2.60.0", "ray_commit": "x"}).encode()
        code = self.status if self.path.startswith("/api/version") or self.status != 200 else 404
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _NeedsToken(_Dashboard):
    status = 401


@contextmanager
def _serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def _not_http(reply: bytes) -> Iterator[int]:
    """A TCP port that answers like a gRPC server (HTTP/2 bytes), or holds the connection silently."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            if reply:
                conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        for conn in held:
            conn.close()


def _closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return int(sock.getsockname()[1])


GRPC_BYTES = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x05\x00\x00@\x00"


def _one_line_exit_2(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def _timed(run_cli: RunCli, args: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    proc = run_cli(args, env={"RAY_ADDRESS": "", "RAY_API_SERVER_ADDRESS": ""})
    return proc, time.monotonic() - start


def test_ray_wrong_port_on_loopback_is_one_line(run_cli: RunCli) -> None:
    pytest.importorskip("ray")
    port = _closed_port()
    for args in (["ray", "job", "raysubmit_x", "--address"], ["ray", "cluster", "--address"]):
        proc, took = _timed(run_cli, [*args, f"127.0.0.1:{port}", "--timeout", "2"])
        _one_line_exit_2(proc, f"nothing listens on 127.0.0.1:{port}")
        assert took < 15


def test_ray_dashboard_given_where_the_gcs_is_wanted(run_cli: RunCli) -> None:
    pytest.importorskip("ray")
    with _serving(_Dashboard) as port:
        for address in (f"127.0.0.1:{port}", f"http://127.0.0.1:{port}"):
            proc, took = _timed(run_cli, ["ray", "cluster", "--address", address, "--timeout", "2"])
            _one_line_exit_2(proc, "is the Ray dashboard", "GCS", "127.0.0.1:6379")
            assert took < 15
        # Without http://, as `ray start` prints it, the dashboard is recognised: the Jobs API answers.
        proc, _ = _timed(run_cli, ["ray", "job", "raysubmit_nope", "--address", f"127.0.0.1:{port}"])
        _one_line_exit_2(proc, "no Ray job 'raysubmit_nope'")


def test_ray_gcs_given_where_the_dashboard_is_wanted(run_cli: RunCli) -> None:
    pytest.importorskip("ray")
    with _not_http(GRPC_BYTES) as port:
        proc, took = _timed(run_cli, ["ray", "job", "raysubmit_x", "--address", f"http://127.0.0.1:{port}"])
        _one_line_exit_2(proc, "not the Ray dashboard", "http://127.0.0.1:8265")
        assert took < 15
    with _not_http(b"") as port:  # accepts and never answers: bounded by --timeout
        proc, took = _timed(run_cli, ["ray", "job", "raysubmit_x", "--address", f"127.0.0.1:{port}", "--timeout", "3"])
        _one_line_exit_2(proc, "within 3 s")
        assert took < 20


def test_ray_token_auth_asks_for_the_token(run_cli: RunCli) -> None:
    pytest.importorskip("ray")
    with _serving(_NeedsToken) as port:
        # No token configured (the test session configures one for its own Ray head): name the fix.
        proc = run_cli(
            ["ray", "job", "raysubmit_x", "--address", f"http://127.0.0.1:{port}"],
            env={"RAY_ADDRESS": "", "RAY_AUTH_MODE": "", "RAY_AUTH_TOKEN_PATH": ""},
        )
        _one_line_exit_2(proc, "uses token authentication", "RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN")


class _Forbidden(_Dashboard):
    status = 403


class _OtherHttp(http.server.BaseHTTPRequestHandler):
    """An HTTP server that is not the dashboard (Ray's own metrics port answers like this)."""

    def do_GET(self) -> None:
        body = b"# HELP ray_node_cpu_count\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_ray_token_that_the_cluster_refuses_is_named_without_its_value(run_cli: RunCli) -> None:
    pytest.importorskip("ray")
    token = "f00d" * 16
    with _serving(_Forbidden) as port:
        proc = run_cli(
            ["ray", "job", "raysubmit_x", "--address", f"http://127.0.0.1:{port}"],
            env={"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "RAY_ADDRESS": ""},
        )
        _one_line_exit_2(proc, "refused the token from RAY_AUTH_TOKEN", "not this cluster's token")
        assert token not in proc.stderr


def test_ray_http_port_that_is_not_the_dashboard_says_so(run_cli: RunCli) -> None:
    pytest.importorskip("ray")
    with _serving(_OtherHttp) as port:
        proc, _ = _timed(run_cli, ["ray", "job", "raysubmit_x", "--address", f"http://127.0.0.1:{port}"])
        _one_line_exit_2(proc, "answers HTTP 200", "not the Ray dashboard")


def test_probe_tells_an_unresolved_name_and_a_silent_host_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from rlfix.errors import InputError
    from rlfix.integrations import ray_connect

    for raised, said in (
        (socket.gaierror(-2, "Name or service not known"), "does not resolve"),
        (TimeoutError(), "nothing answered within 3 s"),
    ):

        def connect(self: object, raised: BaseException = raised) -> None:
            raise raised

        monkeypatch.setattr(http.client.HTTPConnection, "connect", connect)
        with pytest.raises(InputError, match=said) as caught:
            ray_connect.dashboard_for("http://head.example:8265", 30.0)
        # Never the address it was given as the suggestion.
        assert "give the dashboard" not in str(caught.value)


def test_the_probe_sends_the_token_ray_clients_send(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from rlfix.integrations.ray_auth import auth_headers, configured_token

    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    assert auth_headers() == {}
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    assert configured_token() is None
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("abc123\n")
    assert auth_headers() == {"Authorization": "Bearer abc123"}
    named = tmp_path / "tok"
    named.write_text("from-path")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(named))
    assert configured_token() is not None and configured_token().source == f"RAY_AUTH_TOKEN_PATH={named}"  # type: ignore[union-attr]
    monkeypatch.setenv("RAY_AUTH_TOKEN", "from-env")
    assert auth_headers() == {"Authorization": "Bearer from-env"}
