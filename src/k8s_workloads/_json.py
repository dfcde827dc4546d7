"""Total readers for parsed JSON (pod manifests, watch events): wrong types read as empty.

Shared by the modules that read pods the API server sent; none of them raises on a value
of the wrong type, they see it as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast


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


_SHOWN_CHARACTERS = 60
_SHOWN_INTEGER_BITS = 200


def shown(value: object) -> str:
    """A value as an error message shows it: ``repr`` of a scalar, cut to 60 characters.

    Never raises and never grows with the value: a long string keeps its first 60
    characters and says how long it was, a huge integer says how many digits it has,
    anything else is named by its type.
    """
    if isinstance(value, str):
        if len(value) <= _SHOWN_CHARACTERS:
            return repr(value)
        return f"{value[:_SHOWN_CHARACTERS]!r}... ({len(value)} characters)"
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, int):
        if value.bit_length() <= _SHOWN_INTEGER_BITS:
            return repr(int(value))
        digits = int(value.bit_length() * 0.30103) + 1
        return f"an integer of about {digits} digits"
    return f"a {type(value).__name__}"
