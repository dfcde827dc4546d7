"""What the JSON readers say of bad JSON, computed from the running interpreter's ``json``.

The library promises the prefix (``not JSON: ``) and the place (line and column in the
whole input); the words in between are the decoder's, and CPython words them differently
from release to release (3.13: "Illegal trailing comma before end of object" where 3.11
says "Expecting property name enclosed in double quotes", one column further on). Tests
build their expectations here, so they hold on every Python the package supports.
"""

from __future__ import annotations

import json


def decoder_error(text: str) -> str:
    """``str()`` of what ``json.loads`` raises for ``text`` (which must not be JSON)."""
    try:
        json.loads(text)
    except (ValueError, RecursionError) as error:
        return str(error)
    raise AssertionError(f"valid JSON: {text[:40]!r}")


def not_json(text: str, *, line: int = 1, column: int = 1) -> str:
    """The stream reader's report of a bad value: ``text`` is the input from where the
    value starts (at ``line``, ``column`` of the input) to its end."""
    try:
        json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError as error:
        at_line = line + error.lineno - 1
        at_column = error.colno + (column - 1 if error.lineno == 1 else 0)
        message = error.msg.removesuffix(" at")  # "Unterminated string starting at"
        return f"not JSON: {message} at line {at_line}, column {at_column}"
    raise AssertionError(f"valid JSON: {text[:40]!r}")
