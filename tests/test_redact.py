"""Secret redaction in every output, one test per credential kind, and `--no-redact`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rlfix.api import diagnose
from rlfix.redact import redact_secrets

CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"

# (kind, secret as it appears in a log line, the part that must never be shown)
SECRETS = [
    ("huggingface", "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123", "AbCdEfGhIjKlMnOpQrStUvWxYz0123"),
    ("huggingface-bare", "token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123 used", "AbCdEfGhIjKlMnOpQrStUvWxYz0123"),
    ("openai", "key=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    ("wandb", "WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"),
    ("wandb-login", "wandb login 0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"),
    ("aws-access-key", "aws_access_key_id AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("aws-secret", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG"),
    ("bearer", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "eyJhbGciOiJIUzI1NiJ9"),
    ("url-password", "connecting to https://alice:s3cr3tPassw0rd@storage.example.com/ckpt", "s3cr3tPassw0rd"),
]


@pytest.mark.parametrize(("kind", "line", "secret"), SECRETS, ids=[s[0] for s in SECRETS])
def test_redact_secrets_masks_each_kind(kind: str, line: str, secret: str) -> None:
    masked = redact_secrets(line)
    assert secret not in masked
    assert "***" in masked


@pytest.mark.parametrize(("kind", "line", "secret"), SECRETS, ids=[s[0] for s in SECRETS])
def test_evidence_in_every_format_is_redacted(kind: str, line: str, secret: str) -> None:
    report = diagnose(f"{CUDA} while {line}\n")
    assert report.ids[0] == "cuda-illegal-memory-access"
    for fmt in ("text", "json", "markdown", "html"):
        assert secret not in report.render(fmt), fmt
    raw = diagnose(f"{CUDA} while {line}\n", redact=False)
    assert secret in raw.render("json")


@pytest.mark.parametrize(
    "line",
    [
        "commit 0123456789abcdef0123456789abcdef01234567",  # a git hash is not a W&B key
        "step 12 loss=0.25 lr=1e-06",
        "tokenizer: hf_hub_download(repo_id='meta-llama/Llama-3')",
        "https://github.com/OpenRLHF/OpenRLHF/issues/815",
    ],
)
def test_ordinary_text_is_left_alone(line: str) -> None:
    assert redact_secrets(line) == line


def test_cli_redacts_and_no_redact_turns_it_off(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    secret = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"
    log.write_text(f"{CUDA} (HF_TOKEN={secret})\n")
    rlfix = [sys.executable, "-m", "rlfix", "diagnose", "--no-color"]
    masked = subprocess.run([*rlfix, str(log)], capture_output=True, text=True, timeout=60)
    assert masked.returncode == 1
    assert secret not in masked.stdout and "***" in masked.stdout
    shown = subprocess.run([*rlfix, "--no-redact", str(log)], capture_output=True, text=True, timeout=60)
    assert secret in shown.stdout
