"""YAML with line marks: PyYAML's safe loader (its C parser when built) that remembers where each
value starts, so every knowledge-base problem can name its file, line and column."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml

from rlfix.errors import Location, Problem


class Marked(dict):  # type: ignore[type-arg]
    """A mapping that remembers where each key's value starts in the file."""

    mark: Any = None
    marks: dict[Any, Any]


class MarkedList(list):  # type: ignore[type-arg]
    mark: Any = None
    marks: list[Any]


class MarkingLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader (its C parser when built), recording line marks and rejecting duplicate keys."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[Any, str]] = []


def _construct_mapping(loader: MarkingLoader, node: yaml.MappingNode) -> Marked:
    loader.flatten_mapping(node)
    out = Marked()
    out.mark = node.start_mark
    out.marks = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, Hashable):  # `? [a, b]` is valid YAML but no field name
            raise yaml.constructor.ConstructorError(None, None, "a key must be a plain value", key_node.start_mark)
        if key in out:
            loader.duplicates.append((key_node.start_mark, f"duplicate key {key!r}"))
        out[key] = loader.construct_object(value_node, deep=True)
        out.marks[key] = value_node.start_mark
    return out


def _construct_sequence(loader: MarkingLoader, node: yaml.SequenceNode) -> MarkedList:
    out = MarkedList(loader.construct_object(child, deep=True) for child in node.value)
    out.mark = node.start_mark
    out.marks = [child.start_mark for child in node.value]
    return out


MarkingLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
MarkingLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def reject_aliases(text: str) -> None:
    """Raise a YAMLError at the first anchor: knowledge-base files need none, and aliases can
    expand exponentially (a "billion laughs" file). Only text holding `&` can define one."""
    if "&" not in text:
        return
    for token in yaml.scan(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        if isinstance(token, (yaml.AnchorToken, yaml.AliasToken)):
            raise yaml.MarkedYAMLError(problem="anchors and aliases are not allowed", problem_mark=token.start_mark)


def load_yaml(text: str) -> Any:
    """Parse untrusted YAML safely: no aliases, plain keys only; raises yaml.YAMLError."""
    reject_aliases(text)
    loader = MarkingLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def yaml_problem(exc: yaml.YAMLError, file: str) -> Problem:
    """A YAML syntax error as a problem at its place."""
    mark = getattr(exc, "problem_mark", None)
    reason = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unreadable"])[0]
    return Problem(location(file, mark), "", f"invalid YAML: {reason}")


def location(file: str, mark: Any) -> Location:
    """A file:line:column location from a YAML mark (1-based)."""
    if mark is None:
        return Location(file)
    return Location(file, mark.line + 1, mark.column + 1)
