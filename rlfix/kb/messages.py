"""Known messages: the templates a framework's source prints, with the cause each raise site means.

`knowledge/messages/<project>.yaml` is generated from the mined catalogue (`fixtures/messages/`,
scripts/catalogue/learn.py): a project, the version its source was read at, and per message the
signature id its label names, where the source prints it and the template, `{}` standing for each
value the program fills in. A template is kept only when its literal text alone tells the message
apart (`learnable`): `{} must be {}` would name every refusal of every framework.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from rlfix.errors import Problem
from rlfix.kb.marked_yaml import load_yaml, location, yaml_problem
from rlfix.model import KnownMessage

#: Where a template puts a value.
PLACEHOLDER = "{}"
#: A word of a template's literal text: a letter, then letters, digits or `_` (three at least).
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")
#: A template tells its message apart when its literal text has this many whole words...
MIN_WORDS = 3
#: ... of this many letters together;
MIN_LETTERS = 16
#: or two words, of this many letters, one of them an identifier (`kl_estimator`, `OutOfDisk`, a
#: word of ten letters or more): `Unknown kl_estimator: {}` is one message, `Invalid value: {}` is not.
MIN_LETTERS_WITH_IDENTIFIER = 12
_IDENTIFIER = re.compile(r"\w*_\w|\w*[a-z][A-Z]|\w{10}")

FIELDS = ("id", "source", "template")


def first_line(template: str) -> str:
    """What one log line can hold of a template: its first line (a message of several lines is
    printed on several lines, and the error line carries the first)."""
    return template.split("\n", 1)[0]


def literal_parts(template: str) -> tuple[str, ...]:
    """The literal text between the placeholders of the template's first line, stripped, empty
    parts left out."""
    return tuple(p for p in (part.strip() for part in first_line(template).split(PLACEHOLDER)) if p)


def whole_words(template: str) -> list[str]:
    """The literal words of the template's first line that no placeholder touches (`{}ForCausalLM`
    is no word: the value glued to it changes it), in order."""
    pieces = first_line(template).split(PLACEHOLDER)
    words = []
    for i, piece in enumerate(pieces):
        for m in WORD.finditer(piece):
            glued = (m.start() == 0 and i > 0) or (m.end() == len(piece) and i < len(pieces) - 1)
            if not glued:
                words.append(m.group())
    return words


def learnable(template: str) -> bool:
    """Whether a template's literal text tells its message apart from other messages."""
    words = whole_words(template)
    letters = sum(len(w) for w in words)
    if len(words) >= MIN_WORDS and letters >= MIN_LETTERS:
        return True
    named = any(_IDENTIFIER.match(w) for w in words)
    return len(words) >= 2 and letters >= MIN_LETTERS_WITH_IDENTIFIER and named


def parse_messages(text: str, file: str) -> tuple[list[KnownMessage], list[Problem]]:
    """Parse one `knowledge/messages/` file; never raises for content problems."""
    try:
        data: Any = load_yaml(text)
    except yaml.YAMLError as exc:
        return [], [yaml_problem(exc, file)]
    head = [data.get(k) for k in ("project", "version")] if isinstance(data, dict) else [None]
    items = data.get("messages") if isinstance(data, dict) else None
    if not all(isinstance(v, str) and v for v in head) or not isinstance(items, list):
        where = location(file, getattr(data, "mark", None))
        return [], [Problem(where, "messages", "the file needs `project`, `version` and a `messages:` list")]
    out, problems = [], []
    for i, item in enumerate(items):
        where = location(file, getattr(item, "mark", None))
        values = [item.get(k) for k in FIELDS] if isinstance(item, dict) else [None]
        strings = [v for v in values if isinstance(v, str) and v]
        if len(strings) != len(FIELDS):
            problems.append(Problem(where, f"messages[{i}]", f"needs strings {', '.join(FIELDS)}"))
            continue
        sig_id, source, template = strings
        if not learnable(template):
            problems.append(
                Problem(where, f"messages[{i}].template", "too little literal text to tell the message apart")
            )
            continue
        parts, words = literal_parts(template), tuple(w.lower() for w in whole_words(template))
        out.append(KnownMessage(sig_id, template, parts, words, data["project"], data["version"], source, where))
    return out, problems
