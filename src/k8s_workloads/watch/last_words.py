"""What a failed container said: the last meaningful lines of its termination message,
bounded and redacted, for the text a failed task or callback is reported with.

The kubelet puts what a container wrote to its ``terminationMessagePath`` into its
``terminated`` state's ``message`` or, with ``terminationMessagePolicy:
FallbackToLogsOnError`` (the library's pods have it: :mod:`k8s_workloads.pods.termination`)
and a non-zero exit, the tail of its log: up to 80 lines and 2048 bytes, a traceback's end.
:func:`last_words` keeps what a person needs of it — its last
:data:`LAST_WORDS_LINES` meaningful lines on one line, at most :data:`LAST_WORDS_CHARS`
characters — and never what must not be shown: the message is masked before it is cut
(tokens by their shape, as every message is, and the secrets the caller knows, whole and
line by line), and control characters (a terminal's colour codes, a line feed that would
forge a log line) are removed or escaped. A JSON log line (what Airflow's Task SDK writes
in a pod) counts as its message, what went wrong and its exceptions' types and values:
``Callback failed: Callback execution failed: RuntimeError: ...``, not its timestamp,
stack frames or the callback's arguments.

Pure: text in, text out.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Final, TypeGuard

from k8s_workloads.display import REDACTED, printable
from k8s_workloads.pods.redaction import mask_cut, message_masker

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["LAST_WORDS_CHARS", "LAST_WORDS_LINES", "last_words"]

LAST_WORDS_LINES: Final = 5
"""How many of the message's last meaningful lines are kept."""
LAST_WORDS_CHARS: Final = 1000
"""At most this many characters are kept (the end: the last words matter most)."""

_SEPARATOR: Final = " | "
_CUT: Final = "..."
_LOG_TAIL_BYTES: Final = 2048
"""The kubelet's log tail for ``FallbackToLogsOnError``
(``MaxContainerTerminationMessageLogLength``): a message this long may start in the middle
of a line."""
_SHORTEST_SECRET_LINE: Final = 8
"""A known secret's line this long or longer is masked wherever it appears on its own."""

_MESSAGE_KEYS: Final = ("event", "message", "msg")
"""Where a JSON log line (structlog's ``JSONRenderer``, Airflow's Task SDK in a pod; other
JSON loggers) keeps its message."""
_DETAIL_KEYS: Final = ("error", "error_msg")
"""Fields of such a line that say what went wrong (the Task SDK's ``Callback failed``)."""

# A credential a log line shows in the clear: a URL's password (``scheme://user:PW@``) and
# the value of a field named like a secret (``password=``, ``API_KEY: ``, ``"token": ``).
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)[^\s@/]+(?=@)")
_SECRET_FIELD = re.compile(
    r"(?P<head>\b[\w.-]*(?:passw(?:or)?d|pwd|secret|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|token|credentials?|auth)[\w.-]*[\"']?\s*[:=]\s*[\"']?)(?P<value>[^\s\"',;|&]+)",
    re.IGNORECASE,
)

# ECMA-48 control sequences (colours, cursor moves): what a terminal would not print.
_ESCAPE_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
# Python's traceback markers under the failing expression (3.11+): no words of their own.
_MARKERS_ONLY = re.compile(r"[\s^~]*")


def _secret_parts(secrets: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """What to mask (each secret, and each of its lines long enough to mean something),
    and those lines, whose cut-short starts are masked too."""
    whole = {secret for secret in secrets if secret}
    lines = {
        line.strip()
        for secret in whole
        for line in secret.splitlines()
        if len(line.strip()) >= _SHORTEST_SECRET_LINE
    }
    return frozenset(whole | lines), frozenset(lines)


def _text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value.strip())


def _exception_words(value: object) -> list[str]:
    """An exception field of a JSON log line in words: structlog's ``dict_tracebacks``
    (a list of ``exc_type``/``exc_value`` records, the cause first) or a formatted
    traceback (its last line)."""
    if isinstance(value, str):
        lines = [line.strip() for line in value.splitlines() if line.strip()]
        return lines[-1:]
    if not isinstance(value, list):
        return []
    return [
        f"{record['exc_type']}: {record.get('exc_value', '')}".rstrip(": ")
        for record in value
        if isinstance(record, dict) and isinstance(record.get("exc_type"), str)
    ]


def _condensed(line: str) -> str:
    """A JSON log line as its words: its message, the details of what went wrong and its
    exceptions' types and values, each once (not its timestamp, frames or other fields,
    which may be long: a callback's arguments, its context); any other line as it is."""
    text = line.strip()
    if not text.startswith("{"):
        return line
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):  # a line cut short, or not JSON after all
        return line
    if not isinstance(record, dict):
        return line
    words = [
        value.strip()
        for value in (
            next((record[key] for key in _MESSAGE_KEYS if _text(record.get(key))), None),
            *(record.get(key) for key in _DETAIL_KEYS),
        )
        if _text(value)
    ]
    words += _exception_words(record.get("exception"))
    kept: list[str] = []
    for word in words:  # each once: a word another holds is left out, where it was
        if any(word in earlier for earlier in kept):
            continue
        at = next((i for i, earlier in enumerate(kept) if earlier in word), len(kept))
        kept = [*kept[:at], word, *(earlier for earlier in kept[at:] if earlier not in word)]
    return ": ".join(kept) if kept else line


def last_words(message: object, *, secrets: Iterable[str] = ()) -> str | None:
    """The last :data:`LAST_WORDS_LINES` meaningful lines of a container's termination
    message, joined by ``" | "`` on one line of at most :data:`LAST_WORDS_CHARS`
    characters (its end, after ``"..."``, when longer); None when it has none (no text,
    only blank lines or traceback markers).

    Masked first, as a whole: token-shaped values (a JWT, ``token=...``, a Bearer
    credential), a URL's password, the value of a field named like a secret (``password=``,
    ``API_KEY:``, ``"client_secret": ...``) and each of ``secrets``, as written and
    JSON-escaped, also each of their lines of 8 characters or more and any such line cut
    short after its first 8 (as a log line cut at its end shows it). Then cut: a message of
    the kubelet's full log tail (2048 bytes or more) may begin in the middle of a line,
    which is dropped. A JSON object line is read as its ``event`` (or ``message``, ``msg``),
    ``error`` and ``error_msg``, and its ``exception``'s types and values, each once, joined
    by ``": "`` (masked again once decoded). Escape sequences are removed, other control
    characters escaped.
    """
    if not isinstance(message, str) or not message.strip():
        return None
    tokens, lines_of_secrets = _secret_parts(secrets)
    masker = message_masker(tokens)

    def masked(text: str) -> str:
        text = masker.text(text)
        for line in lines_of_secrets:
            text = mask_cut(text, line)
        text = _URL_PASSWORD.sub(lambda found: found["head"] + REDACTED, text)
        return _SECRET_FIELD.sub(lambda found: found["head"] + REDACTED, text)

    lines = masked(message).splitlines()
    if len(lines) > 1 and len(message.encode("utf-8", errors="replace")) >= _LOG_TAIL_BYTES:
        lines = lines[1:]  # maybe the end of a line cut at its start: no words of its own
    # A JSON line's values are masked again once decoded (a secret spelt with escapes).
    meaningful = [
        printable(masked(_condensed(line)).strip())
        for line in (_ESCAPE_SEQUENCE.sub("", line) for line in lines)
        if not _MARKERS_ONLY.fullmatch(line)
    ]
    words = _SEPARATOR.join(line for line in meaningful[-LAST_WORDS_LINES:] if line)
    if not words:
        return None
    if len(words) > LAST_WORDS_CHARS:
        words = _CUT + words[len(words) - (LAST_WORDS_CHARS - len(_CUT)) :]
    return words
