"""docs/cli.md documents every command and every option that `rlfix ... --help` shows, and no others."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rlfix.cli import cli

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
# A heading that names a command: "## `rlfix kb lint`" (arguments after the name are allowed).
HEADING = re.compile(r"^#{1,4}\s+`rlfix(?P<path>(?: [a-z][\w-]*)*)(?: [A-Z\[.][^`]*)?`", re.M)
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if isinstance(sub, click.Group):
            out.extend(_commands(sub, (*prefix, name)))
        elif sub is not None:
            out.append((*prefix, name))
    return out


COMMANDS = _commands(cli)


def _help(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(cli, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def _options(help_text: str) -> set[str]:
    """Option names from the `Options:` block: the part of each entry before its description."""
    block = help_text.split("\nOptions:\n", 1)[1]
    names: set[str] = set()
    for line in block.splitlines():
        if not line.strip():
            break  # a blank line ends the block (the exit-status epilog follows)
        if not line.startswith("  -"):
            continue  # a wrapped description
        entry = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        names.update(OPTION.findall(entry))
    return names


def _sections() -> dict[tuple[str, ...], str]:
    text = DOC.read_text(encoding="utf-8")
    heads = list(HEADING.finditer(text))
    out = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out[tuple(m.group("path").split())] = text[m.end() : end]
    return out


SECTIONS = _sections()


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: "rlfix " + " ".join(p))
def test_every_command_and_option_is_documented(path: tuple[str, ...]) -> None:
    name = "rlfix " + " ".join(path) if path else "rlfix"
    assert path in SECTIONS, f"docs/cli.md has no heading for `{name}`"
    options = _options(_help(path))
    assert options, f"could not read the options of `{name} --help`"
    if path:
        options -= {"-h", "--help"}  # documented once, for `rlfix`
    missing = sorted(o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", SECTIONS[path]))
    assert not missing, f"docs/cli.md, section `{name}`, does not mention {', '.join(missing)}"


def test_no_stale_commands_are_documented() -> None:
    stale = sorted(" ".join(p) for p in SECTIONS if p not in COMMANDS)
    assert not stale, f"docs/cli.md documents commands that do not exist: {stale}"


def test_option_reader_sees_every_option() -> None:
    # Guard the parser above, so a change in click's help layout cannot make the check vacuous.
    assert _options(_help(("diagnose",))) >= {"-f", "--format", "--top", "-a", "--all", "--color", "--no-color", "--kb"}
