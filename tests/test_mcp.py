"""`rlfix mcp` through the MCP SDK's own client over stdio, as an agent would call it."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.mcpserver")

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import FIXTURES, rlfix_executable

SEED = "cuda-illegal-memory-access--openrlhf-vllm072-buried.log"
TOKEN = "hf_McpLeakQz7xK2mP9vL4nR8tW1yB5cD3"


async def _session_calls(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    command = rlfix_executable()
    params = StdioServerParameters(command=command[0], args=[*command[1:], "mcp", "--root", str(root)], cwd=root)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = [t.name for t in (await session.list_tools()).tools]
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def _call(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    return asyncio.run(asyncio.wait_for(_session_calls(root, calls), timeout=120))


def _json(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    (logs / "fleet").mkdir(parents=True)
    shutil.copy(FIXTURES / SEED, logs / SEED)
    text = (FIXTURES / SEED).read_text(encoding="utf-8", errors="replace")
    (logs / "fleet" / "job-a.log").write_text(
        text.replace("trust_remote_code", f"HF_TOKEN={TOKEN} trust_remote_code", 1)
    )
    (logs / "fleet" / "job-b.log").write_text("step 1 ok\nstep 2 ok\n")
    (tmp_path / "secret.log").write_text(f"RuntimeError: CUDA error: out of memory {TOKEN}\n")
    return logs


def test_an_agent_gets_the_diagnosis_not_the_log(root: Path) -> None:
    tools, results = _call(
        root,
        [
            ("diagnose", {"path": SEED, "top": 2}),
            ("excerpt", {"path": SEED, "max_lines": 40}),
            ("explain", {"id": "cuda-illegal-memory-access"}),
            ("triage", {"path": "fleet"}),
            ("diagnose_text", {"text": f"x\nRuntimeError: CUDA error: out of memory HF_TOKEN={TOKEN}\n"}),
        ],
    )
    assert set(tools) == {"diagnose", "diagnose_text", "excerpt", "explain", "triage"}
    report, excerpt, explained, fleet, pasted = (_json(r) for r in results)
    assert report["top"] == "cuda-illegal-memory-access" and len(report["diagnoses"]) <= 2
    assert report["diagnoses"][0]["evidence"][0]["line"] == 67
    assert "RuntimeError: CUDA error: an illegal memory access" in excerpt["markdown"]
    assert len(excerpt["markdown"].splitlines()) <= 40
    assert explained["id"] == "cuda-illegal-memory-access" and explained["steps"]
    assert fleet["jobs_total"] == 2 and fleet["jobs_failed"] == 1
    assert pasted["top"] == "cuda-oom"
    everything = json.dumps([report, excerpt, fleet, pasted])
    assert TOKEN[3:] not in everything


def test_nothing_outside_the_roots_is_read(root: Path) -> None:
    _, results = _call(
        root,
        [
            ("diagnose", {"path": "../secret.log"}),
            ("diagnose", {"path": str(root.parent / "secret.log")}),
            ("triage", {"path": "/etc"}),
            ("explain", {"id": "no-such-id"}),
        ],
    )
    for result in results:
        assert result.is_error
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert TOKEN[3:] not in text
    assert "not under the folders this server may read: ../secret.log" in results[0].content[0].text
    (root / "link.log").symlink_to(root.parent / "secret.log")
    _, (linked,) = _call(root, [("diagnose", {"path": "link.log"})])
    assert linked.is_error and "not under the folders" in linked.content[0].text
