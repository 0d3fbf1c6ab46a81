"""The one gate where text leaves rlfix: every string of what is rendered is masked first.

Reports are pasted into public issues. Masking where text is read (evidence, settings) left every
new face that quotes text (a dead worker's last words, Ray's exit detail, a fleet's job names, an
error message) to remember to call it, and some forgot. Here it happens once, on the way out:

- `masked(value)` returns `value` with every string inside it (dataclass fields, tuples, lists,
  dict keys and values, at any depth) passed through `redact_secrets`; it is idempotent, and what
  holds no secret comes back as the very same object;
- `Renderers` is the registry type of every output format (`Report`, `Fleet`, `JobReports`): a
  renderer put in it is wrapped so that it only ever receives the masked view of its subject, so a
  format added later cannot skip the gate;
- a subject whose `redacted` attribute is False (`--no-redact`, `redact=False`) passes unmasked:
  the user asked for the raw text.

Knowledge-base objects (classes marked `__rlfix_unmasked__`) are the project's own text, not log
text, and are not walked. Escaping, wrapping and encoding stay with each renderer, after the gate.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, TypeVar

from rlfix.redact import redact_secrets, redact_setting

T = TypeVar("T")
R = TypeVar("R", bound=Callable[..., str])
#: Set on a renderer the gate wraps (tests check every registered format carries it).
GATED = "__rlfix_gated__"
#: Nesting beyond this is not walked further (reports are a few levels deep; a cycle must not hang).
MAX_DEPTH = 32


def masked(value: T) -> T:
    """`value` with every string inside it masked (see the module docstring)."""
    return _mask(value, {}, 0)  # type: ignore[no-any-return]


def mask_text(text: str) -> str:
    """One string through the gate (error messages, alerts): the same rules as `masked`."""
    return redact_secrets(text)


def _mask(value: Any, seen: dict[str, str], depth: int) -> Any:
    if isinstance(value, str):
        if isinstance(value, Enum):
            return value
        out = seen.get(value)
        if out is None:
            out = seen[value] = redact_secrets(value)
        return value if out == value else out
    if depth >= MAX_DEPTH or value is None or isinstance(value, (bool, int, float, bytes, Enum)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if getattr(type(value), "__rlfix_unmasked__", False):
            return value
        changed = {}
        for f in dataclasses.fields(value):
            old = getattr(value, f.name)
            new = _mask(old, seen, depth + 1)
            if new is not old:
                changed[f.name] = new
        return dataclasses.replace(value, **changed) if changed else value
    if isinstance(value, (tuple, list)):
        items = [_mask(v, seen, depth + 1) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
    if isinstance(value, (set, frozenset)):
        items = [_mask(v, seen, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else type(value)(items)
    if isinstance(value, Mapping):
        pairs = [(_mask(k, seen, depth + 1), _mask_entry(k, v, seen, depth)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    return value


def _mask_entry(key: Any, value: Any, seen: dict[str, str], depth: int) -> Any:
    """A mapping's value; a setting's string value is masked with the name it came with
    (`--wandb_key` -> its bare value), and comes back as the same object when nothing changed."""
    if isinstance(key, str) and isinstance(value, str) and not isinstance(value, Enum):
        out = redact_setting(key, value)
        return value if out == value else out
    return _mask(value, seen, depth + 1)


def behind_gate(renderer: R) -> R:
    """`renderer`, receiving only the masked view of its subject (once: wrapping twice is a no-op)."""
    if getattr(renderer, GATED, False):
        return renderer

    @functools.wraps(renderer)
    def gated(subject: Any, *args: Any, **options: Any) -> str:
        view = subject if getattr(subject, "redacted", True) is False else masked(subject)
        return renderer(view, *args, **options)

    setattr(gated, GATED, True)
    return gated  # type: ignore[return-value]


class Renderers(dict[str, R]):
    """Output formats by name; every renderer registered here is put behind the gate."""

    def __init__(self, *args: Any, **kwargs: R) -> None:
        super().__init__()
        self.update(*args, **kwargs)

    def __setitem__(self, fmt: str, renderer: R) -> None:
        super().__setitem__(fmt, behind_gate(renderer))

    def update(self, *args: Any, **kwargs: R) -> None:  # type: ignore[override]
        for fmt, renderer in dict(*args, **kwargs).items():
            self[fmt] = renderer

    def setdefault(self, fmt: str, renderer: R | None = None) -> R:  # type: ignore[override]
        if fmt not in self and renderer is not None:
            self[fmt] = renderer
        return self[fmt]
