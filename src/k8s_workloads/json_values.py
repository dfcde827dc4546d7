"""Total readers for parsed JSON (pod manifests, watch events): wrong types read as empty.

Shared by the modules that read pods the API server sent; none of them raises on a value
of the wrong type, they see it as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

__all__ = ["as_int", "as_list", "as_map", "as_str", "as_text", "children"]


def as_map(value: object) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one."""
    # Parsed JSON is made of plain dicts: skip the costly ABC check for them (hot path).
    if type(value) is dict:
        return cast("dict[str, Any]", value)
    return value if value is not None and isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Any]:
    """``value`` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def as_int(value: object) -> int | None:
    """``value`` if it is an integer (a bool is not one), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_str(value: object) -> str | None:
    """``value`` if it is a string, else None."""
    return value if isinstance(value, str) else None


def as_text(value: object) -> str:
    """``value`` if it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def children(value: object) -> list[tuple[object, object]] | None:
    """A container's members: a mapping's ``(key, value)`` pairs, a list's or tuple's
    ``(index, item)`` pairs; None for anything else (what a walk of a document visits)."""
    if isinstance(value, Mapping):
        return list(value.items())
    if isinstance(value, (list, tuple)):
        return list(enumerate(value))
    return None
