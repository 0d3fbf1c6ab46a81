"""`--notify`: one short, masked message per failed job, sent through Apprise to a loopback receiver.

No chat service is reachable from CI, so Apprise's `json://` webhook (what a generic webhook, or a
Slack or Teams relay, receives) posts to an HTTP server this test runs on 127.0.0.1. Slack, Teams
and Discord go through the same Apprise call with another URL; they are not exercised here.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("apprise")

from rlfix.api import diagnose
from rlfix.integrations.notify import notify
from tests.conftest import RunCli
from tests.ray_cluster import free_port

CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"
TOKEN = "hf_NotifyLeakQz7xK2mP9vL4nR8tW1yB5c"


class Receiver:
    """An HTTP server on 127.0.0.1 that keeps every JSON body posted to it."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        received = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received.append({"path": self.path, **json.loads(body)})
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.close()


def _crash(tmp_path: Path) -> Path:
    log = tmp_path / "train.log"
    log.write_text(f"step 1 ok\n[rank0]: {CUDA} (uploading with HF_TOKEN={TOKEN})\n")
    return log


def test_a_failure_sends_one_short_masked_message(tmp_path: Path, receiver: Receiver) -> None:
    report = diagnose(_crash(tmp_path))
    assert notify(report, receiver.url, job="grpo-run-7") is True
    assert len(receiver.posts) == 1
    post = receiver.posts[0]
    assert post["path"] == "/hook" and post["type"] == "failure"
    assert post["title"] == "rlfix: grpo-run-7 failed: cuda-illegal-memory-access (CUDA illegal memory access)"
    assert "train.log:2 [rank 0]: " in post["message"] and "illegal memory access" in post["message"]
    assert TOKEN[3:] not in json.dumps(post)
    assert len(post["message"].splitlines()) <= 4


def test_a_healthy_report_or_no_url_sends_nothing(tmp_path: Path, receiver: Receiver, monkeypatch: Any) -> None:
    healthy = tmp_path / "ok.log"
    healthy.write_text("step 1 ok\nWarning: the tokenizer is slow\n")
    assert notify(diagnose(healthy), receiver.url) is False
    monkeypatch.delenv("RLFIX_NOTIFY", raising=False)
    assert notify(diagnose(_crash(tmp_path))) is False
    assert receiver.posts == []


def test_the_cli_notifies_once_and_keeps_its_exit_status(tmp_path: Path, receiver: Receiver, run_cli: RunCli) -> None:
    log = _crash(tmp_path)
    result = run_cli(["diagnose", str(log), "--notify", receiver.url])
    assert result.returncode == 1
    assert len(receiver.posts) == 1
    healthy = tmp_path / "ok.log"
    healthy.write_text("step 1 ok\n")
    assert run_cli(["diagnose", str(healthy)], env={"RLFIX_NOTIFY": receiver.url}).returncode == 0
    assert len(receiver.posts) == 1  # nothing for a healthy log
    assert run_cli(["diagnose", str(log)], env={"RLFIX_NOTIFY": receiver.url}).returncode == 1
    assert len(receiver.posts) == 2  # RLFIX_NOTIFY is read too


def test_rlfix_run_notifies_after_the_command_failed(tmp_path: Path, receiver: Receiver, run_cli: RunCli) -> None:
    script = f"print({CUDA!r}, flush=True); raise SystemExit(3)"
    result = run_cli(["run", "--notify", receiver.url, "--", sys.executable, "-c", script])
    assert result.returncode == 3
    assert [p["title"].split(": ", 2)[-1] for p in receiver.posts] == [
        "cuda-illegal-memory-access (CUDA illegal memory access)"
    ]
    ok = run_cli(["run", "--notify", receiver.url, "--", sys.executable, "-c", "print('done')"])
    assert ok.returncode == 0 and len(receiver.posts) == 1


def test_a_receiver_that_is_down_is_a_masked_warning(tmp_path: Path, run_cli: RunCli) -> None:
    url = f"json://alice:SecretPw9x@127.0.0.1:{free_port()}/hook"
    result = run_cli(["diagnose", str(_crash(tmp_path)), "--notify", url])
    assert result.returncode == 1  # the diagnosis stands
    assert "rlfix: warning: notification not sent:" in result.stderr
    assert "SecretPw9x" not in result.stdout + result.stderr
    unknown = run_cli(["diagnose", str(_crash(tmp_path)), "--notify", "nosuchservice://x"])
    assert unknown.returncode == 1 and "not a notification URL" in unknown.stderr
