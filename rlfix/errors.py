"""Errors rlfix raises, each with a one-line message and a documented exit code."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: Exit status when no failure was recognised.
EXIT_OK = 0
#: Exit status when at least one failure was diagnosed.
EXIT_DIAGNOSED = 1
#: Exit status for usage errors, unreadable inputs and invalid knowledge bases.
EXIT_USAGE = 2


@dataclass(frozen=True)
class Location:
    """A place in a knowledge-base file (1-based line and column)."""

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        if self.column <= 0:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.column}"


class RlfixError(Exception):
    """Base class: the message is one line, safe to show to a user as is."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class Problem:
    """One problem found in a knowledge-base file: where, which field, what."""

    location: Location
    field: str
    message: str

    def __str__(self) -> str:
        field = f" {self.field}:" if self.field else ""
        return f"{self.location}:{field} {self.message}"


class KnowledgeError(RlfixError):
    """The knowledge base is invalid. Carries every problem found, not just the first."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        first = str(self.problems[0]) if self.problems else "invalid knowledge base"
        more = len(self.problems) - 1
        suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""
        super().__init__(first + suffix)


class InputError(RlfixError):
    """An input could not be read (missing path, permission, corrupt archive)."""


class UsageError(RlfixError):
    """The caller asked for something rlfix cannot do (unknown id, bad option value)."""
