"""How messages and text outputs show values: on one line, cut short, tokens masked.

The values a message names come from templates, overrides, watch events and the command
line, so any of them may be hostile or secret: a newline that forges a line of output,
an escape sequence that rewrites the terminal, a lone surrogate that UTF-8 cannot write
(``"\\ud800"`` in JSON or YAML), 300 KB of text, or a workload's Execution API token
pasted into a template. Every message and every line of text output shows values through
these functions; none of them raises.

Masking by shape finds what a token looks like without knowing it: a JWT (Airflow's
Execution API tokens are JWTs), the value of a ``token`` field (``"token": "..."``,
``token=...``, also JSON-escaped), a ``Bearer`` credential. Where the token is known (the
workload's, a pod's ``--json-string`` args), :mod:`k8s_workloads.payload` masks it as
written and as escaped.
"""

from __future__ import annotations

import re

REDACTED = "***REDACTED***"
"""What a token is replaced by."""
SHOWN_LENGTH = 80
"""At most this many characters of a value are shown in a message."""

# C0 and C1 controls (newline, carriage return, ESC of ANSI sequences ...), the Unicode
# line and paragraph separators (str.splitlines and many terminals break lines there), the
# bidirectional overrides and isolates (CVE-2021-42574: they reorder what a reader sees),
# and lone surrogates, which UTF-8 cannot write. Each is shown as a Python string literal
# writes it (\n, \x1b, \u2028, \ud800), so a value never spans lines nor moves the cursor.
_UNPRINTABLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)

# A JWT: three base64url parts; the first is a JSON object, so it starts with '{"' = eyJ.
_JWT = r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"
# The value of a token field, quoted (also JSON-escaped, once or more) or not, in JSON,
# a Python repr, a field path (['token']: ...) or key=value text; and an HTTP Bearer
# credential.
_TOKEN_FIELD = r"""(?i:token)[\\"'\]]*\s*[:=]\s*[\\"']*"""  # noqa: S105 - a pattern
_BEARER = r"(?i:\bbearer)\s+"
_TOKEN_SHAPED = re.compile(
    rf"(?P<jwt>{_JWT})|(?P<lead>{_TOKEN_FIELD}|{_BEARER})(?P<secret>[^\s\\\"',;}}\]]+)"
)


def _mask_match(match: re.Match[str]) -> str:
    lead = match.group("lead")
    return REDACTED if lead is None else lead + REDACTED


def mask_token_shaped(text: str) -> str:
    """``text`` with JWTs, ``token`` field values and Bearer credentials masked."""
    lowered = text.lower()
    if "eyj" not in lowered and "token" not in lowered and "bearer" not in lowered:
        return text  # the common case, without running the pattern
    return _TOKEN_SHAPED.sub(_mask_match, text)


def printable(text: str) -> str:
    """``text`` safe for one line of terminal output: nothing unprintable left raw."""
    return _UNPRINTABLE.sub(lambda match: repr(match.group())[1:-1], text)


def one_line(text: str) -> str:
    """A message or output line as printed: token-shaped content masked, then escaped."""
    return printable(mask_token_shaped(text))


def _safe_repr(value: object) -> str:
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 - any repr may fail (a 5,000-digit int, deep nesting, user code)
        return f"<{type(value).__name__}>"


def shown(value: object, *, limit: int = SHOWN_LENGTH) -> str:
    """``value`` for a message: quoted as ``repr`` quotes it, masked, cut to ``limit``.

    A string is masked, then cut to ``limit`` characters and quoted (``'abc'``, with
    ``... (N characters)`` when cut); anything else is its ``repr``, masked, escaped and
    cut. The result is one line without control characters or surrogates.
    """
    if isinstance(value, str):
        masked = mask_token_shaped(value)
        if len(masked) <= limit:
            return repr(masked)
        return f"{masked[:limit]!r}... ({len(value)} characters)"
    text = one_line(_safe_repr(value))
    return text if len(text) <= limit else f"{text[:limit]}..."


# A key that can follow a dot in a field path as it is written: ``spec.containers``.
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def path_part(key: object) -> str:
    """One step of a field path: ``.name`` for a plain key, ``[shown(key)]`` otherwise."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"[{key}]"
    if isinstance(key, str) and len(key) <= SHOWN_LENGTH and _PLAIN_KEY.fullmatch(key):
        return f".{key}"
    return f"[{shown(key)}]"
