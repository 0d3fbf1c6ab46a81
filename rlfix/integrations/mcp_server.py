"""`rlfix mcp`: the diagnosis as Model Context Protocol tools, for agents and LLM chats.

An agent asked "why did my job die?" would otherwise read a gigabyte log into its context (it
cannot) or a few hundred lines of it (the wrong ones), with the job's secrets in the prompt. These
tools give it rlfix's answer instead: deterministic, bounded, masked by the output gate.

Tools (typed inputs, JSON outputs):
- `diagnose(path, top, lang)`: the report of a log file or folder, as the JSON contract (docs/json.md);
- `diagnose_text(text, top, lang)`: the same for log text the agent already holds (bounded);
- `explain(id, lang)`: what a failure id means, why it happens and how to fix it;
- `triage(path)`: a folder of jobs grouped by cause (the `rlfix triage` table as JSON);
- `excerpt(path, max_lines, max_chars)`: the lines that matter, as Markdown.

Paths are read only under the roots the server was started with (default: the current
directory), after resolving links, and folders are walked without leaving them. Uses the
official `mcp` SDK (version 2), an optional extra: `pip install 'rlfix[mcp]'`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlfix.api import diagnose as diagnose_source
from rlfix.api import excerpt as excerpt_of
from rlfix.errors import RlfixError, UsageError
from rlfix.fleet.gather import triage as triage_jobs
from rlfix.fleet.model import Fleet
from rlfix.gate import mask_text
from rlfix.kb.load import KnowledgeBase, load_knowledge
from rlfix.version import __version__

#: Characters of log text `diagnose_text` accepts (a paste, not a log file: use `diagnose`).
MAX_TEXT = 5 * 1024 * 1024
INSTRUCTIONS = (
    "Diagnose crashed RL / LLM training jobs (Ray, vLLM, DeepSpeed, PyTorch, verl, OpenRLHF, TRL) "
    "from their logs. Call diagnose on a log file or folder instead of reading the log yourself: it "
    "returns the ranked root causes with the evidence line, where it failed, and the fix flags for the "
    "framework it detected. Secrets in the log are masked in every answer."
)


class Roots:
    """The folders a client may read under; anything else is refused."""

    def __init__(self, roots: Sequence[str | os.PathLike[str]]) -> None:
        self.roots = tuple(Path(r).resolve() for r in (roots or [Path.cwd()]))

    def resolve(self, path: str) -> Path:
        """`path` (absolute, or relative to the first root) once it is known to lie under a root."""
        if not path or "\0" in path:
            raise UsageError("give a path to a log file or folder")
        given = Path(path).expanduser()
        candidate = (given if given.is_absolute() else self.roots[0] / given).resolve()
        if not any(candidate.is_relative_to(root) for root in self.roots):
            raise UsageError(mask_text(f"not under the folders this server may read: {path}"))
        if not candidate.exists():
            raise UsageError(mask_text(f"{path}: no such file or folder"))
        return candidate


def build_server(roots: Sequence[str | os.PathLike[str]] = (), kb: KnowledgeBase | None = None) -> Any:
    """An `mcp` server with rlfix's tools, reading only under `roots` (default: the current directory)."""
    from mcp.server.mcpserver import MCPServer

    allowed = Roots(roots)
    knowledge = kb if kb is not None else load_knowledge([])
    server = MCPServer("rlfix", version=__version__, instructions=INSTRUCTIONS)
    for tool in _tools(allowed, knowledge):
        server.add_tool(tool, structured_output=True)
    return server


def _tools(allowed: Roots, kb: KnowledgeBase) -> list[Any]:
    """The tool functions; their names, type hints and docstrings are what the client sees."""
    return [*_report_tools(allowed, kb), _explain_tool(kb), _triage_tool(allowed, kb), _excerpt_tool(allowed, kb)]


def _report_tools(allowed: Roots, kb: KnowledgeBase) -> list[Any]:
    def diagnose(path: str, top: int = 3, lang: str = "en") -> dict[str, Any]:
        """Ranked root causes of the crashed job whose log file or folder is at `path`: for each,
        the evidence lines (file:line), why it ranks there, and the fix flags for the framework
        detected. `top` limits the diagnoses returned."""
        report = _guarded(lambda: diagnose_source(allowed.resolve(path), kb=kb))
        return _trimmed(report.to_dict(), top)

    def diagnose_text(text: str, top: int = 3, lang: str = "en") -> dict[str, Any]:
        """As `diagnose`, for log text already at hand (a paste of at most 5 MiB)."""
        if len(text) > MAX_TEXT:
            message = f"text of {len(text):,} characters: give at most {MAX_TEXT:,}, or a path to `diagnose`"
            raise _tool_error(message)
        report = _guarded(lambda: diagnose_source(text.encode("utf-8", "replace"), kb=kb))
        return _trimmed(report.to_dict(), top)

    return [diagnose, diagnose_text]


def _explain_tool(kb: KnowledgeBase) -> Any:
    def explain(id: str, lang: str = "en") -> dict[str, Any]:
        """What a failure id (such as cuda-oom or nccl-timeout) means, why it happens, how to fix it."""
        sig = _guarded(lambda: kb.require(id))
        words = sig.localized(lang)
        flags = [
            {"framework": f.framework, "flag": f.value, "versions": f.versions, "purpose": f.purpose}
            for f in sig.remediation.flags
        ]
        return {
            "id": sig.id,
            "title": words.title,
            "kind": sig.kind.value,
            "severity": sig.severity.value,
            "action": sig.decision.action.value,
            "owner": sig.decision.owner.value,
            "summary": words.summary,
            "steps": list(words.steps),
            "flags": flags,
            "references": list(sig.references),
        }

    return explain


def _triage_tool(allowed: Roots, kb: KnowledgeBase) -> Any:
    def triage(path: str) -> dict[str, Any]:
        """A folder of jobs (each file or sub-folder one job) grouped by root cause: how many jobs,
        when, and an example job with its evidence line for each cause."""
        fleet: Fleet = _guarded(lambda: triage_jobs(str(allowed.resolve(path)), kb=kb, jobs=1))
        return fleet.to_dict()

    return triage


def _excerpt_tool(allowed: Roots, kb: KnowledgeBase) -> Any:
    def excerpt(path: str, max_lines: int = 60, max_chars: int = 8000) -> dict[str, Any]:
        """Only the lines of the log that matter (each root's evidence with context, the
        traceback, the job's frameworks and flags), as Markdown ready for an issue or a prompt."""
        text = _guarded(lambda: excerpt_of(allowed.resolve(path), kb=kb, max_lines=max_lines, max_chars=max_chars))
        return {"markdown": text}

    return excerpt


def _guarded(call: Any) -> Any:
    """Run a tool's work; rlfix's own errors reach the client as one masked line (the SDK shows a
    `ToolError`'s message to the model, and hides any other exception's)."""
    try:
        return call()
    except RlfixError as exc:
        raise _tool_error(str(exc)) from None


def _tool_error(message: str) -> Exception:
    """The SDK's `ToolError` (shown to the model), with `message` masked."""
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(mask_text(message))


def _trimmed(doc: dict[str, Any], top: int) -> dict[str, Any]:
    """The report JSON with at most `top` diagnoses (an agent's context is precious)."""
    shown = max(1, top)
    hidden = len(doc.get("diagnoses", [])) - shown
    doc["diagnoses"] = doc.get("diagnoses", [])[:shown]
    doc["more_diagnoses"] = max(0, hidden)
    return doc


def serve(roots: Sequence[str | os.PathLike[str]] = (), kb: KnowledgeBase | None = None) -> None:
    """Serve the tools over stdio until the client disconnects (what `rlfix mcp` runs)."""
    build_server(roots, kb).run("stdio")
