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
workload's, a pod's ``--json-string`` args), :mod:`k8s_workloads.pods.payload` masks it as
written and as escaped.
"""

from __future__ import annotations

import re

__all__ = [
    "REDACTED",
    "SHOWN_LENGTH",
    "has_unprintable",
    "mask_token_shaped",
    "one_line",
    "path_part",
    "printable",
    "shown",
]

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

# A JWT: base64url parts joined by dots; the first is a JSON object, so it starts with
# '{"', base64 "eyJ". The whole run of base64url characters and dots holding one is
# masked, so that a JWT glued to another ("<jwt>-<jwt>") or cut short leaves nothing
# behind. The run is found by its start (the lookbehind), so matching stays linear.
_RUN_WITH_EYJ = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*eyJ[A-Za-z0-9_.-]*")
# The value of a token field, quoted (also JSON-escaped, once or more) or not, in JSON,
# a Python repr, a field path (['token']: ...) or key=value text; and an HTTP Bearer
# credential.
_TOKEN_FIELD = re.compile(
    r"""(?P<lead>(?i:token)[\\"'\]]*\s*[:=]\s*[\\"']*|(?i:\bbearer)\s+)"""
    r"""[^\s\\"',;}\]]+"""
)


def _is_jwt(run: str) -> bool:
    """Whether a run of base64url characters and dots holds a JWT, or the start of one.

    Two parts (one dot) are enough where "eyJ" begins a word; inside one, three are
    needed, so that ``monkeyJumper.task`` is not taken for a JWT.
    """
    parts = run.split(".")
    for index, part in enumerate(parts[:-1]):
        at = part.find("eyJ")
        while at >= 0:
            word_start = at == 0 or part[at - 1] in "_-"
            if at + 3 < len(part) and (word_start or index + 2 < len(parts)):
                return True
            at = part.find("eyJ", at + 1)
    return False


def _mask_run(match: re.Match[str]) -> str:
    return REDACTED if _is_jwt(match.group()) else match.group()


def mask_token_shaped(text: str) -> str:
    """``text`` with JWTs, ``token`` field values and Bearer credentials masked."""
    lowered = text.lower()
    if "eyj" in lowered:
        text = _RUN_WITH_EYJ.sub(_mask_run, text)
    if "token" in lowered or "bearer" in lowered:
        text = _TOKEN_FIELD.sub(lambda match: match.group("lead") + REDACTED, text)
    return text


def has_unprintable(text: str) -> bool:
    """Whether ``text`` holds a character :func:`printable` escapes (a control, a line or
    paragraph separator, a bidirectional override, a lone surrogate)."""
    return _UNPRINTABLE.search(text) is not None


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


_SHORT_INT = 10**18
_SHORT_INT_DIGITS = 19  # a sign and 18 digits


def shown(value: object, *, limit: int = SHOWN_LENGTH) -> str:
    """``value`` for a message: quoted as ``repr`` quotes it, masked, cut to ``limit``.

    A string is masked, then cut to ``limit`` characters and quoted (``'abc'``, with
    ``... (N characters)`` when cut); anything else is its ``repr``, masked, escaped and
    cut. The result is one line without control characters or surrogates.
    """
    if type(value) is int and -_SHORT_INT < value < _SHORT_INT and limit >= _SHORT_INT_DIGITS:
        # A sign and digits, within the limit: nothing to mask, escape or cut (the exit code
        # of every failure message).
        return repr(value)
    if isinstance(value, str):
        masked = mask_token_shaped(value)
        if len(masked) <= limit:
            return repr(masked)
        return f"{masked[:limit]!r}... ({len(value)} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        # repr() of a 5,000-digit number raises (Python's digit limit), and says nothing.
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
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
