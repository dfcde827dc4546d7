"""The termination message a kubelet writes into a container's ``terminated`` state: the
rule both kit kubelets apply, written once.

The kubelet's rule (``pkg/kubelet/kuberuntime/kuberuntime_container.go``:
``getTerminationMessage``, ``readLastStringFromContainerLogs`` and
``convertToKubeContainerStatus``; the limits are ``pkg/kubelet/container/runtime.go``'s
``MaxContainerTerminationMessage*``), for a container that exited:

* what it wrote to its ``terminationMessagePath``, whatever its exit code and policy: the
  last :data:`MESSAGE_BYTES` bytes of the file (none: no file, or no path);
* with ``terminationMessagePolicy: FallbackToLogsOnError``, a non-zero exit code and a
  reason other than ``ContainerCannotRun`` (a container that never started has no log),
  where the file is missing or empty: the tail of this run's log, its last
  :data:`LOG_LINES` lines and of those the last :data:`LOG_BYTES` bytes;
* a message the runtime gave (the kit's: a command that cannot start) comes first, the
  termination message after it, joined by ``": "``.

Bytes are read as UTF-8, an invalid or cut sequence as U+FFFD, as Go's JSON encoding of
the status writes it.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

__all__ = [
    "LOG_BYTES",
    "LOG_LINES",
    "MESSAGE_BYTES",
    "log_tail",
    "read_message_file",
    "termination_message",
]

MESSAGE_BYTES: Final = 4096
"""``MaxContainerTerminationMessageLength``: what is kept of the file (its end)."""
LOG_LINES: Final = 80
"""``MaxContainerTerminationMessageLogLines``: the log lines read for the fallback."""
LOG_BYTES: Final = 2048
"""``MaxContainerTerminationMessageLogLength``: what is kept of those lines (their end)."""

_FALLBACK: Final = "FallbackToLogsOnError"
_NEVER_STARTED: Final = "ContainerCannotRun"


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def read_message_file(path: Path) -> bytes | None:
    """The last :data:`MESSAGE_BYTES` bytes of a termination message file (``tail``'s
    ``ReadAtMost``), or None when it cannot be read (gone, or not a file)."""
    with contextlib.suppress(OSError), path.open("rb") as file:
        size = file.seek(0, os.SEEK_END)
        file.seek(max(0, size - MESSAGE_BYTES))
        return file.read(MESSAGE_BYTES)
    return None


def log_tail(lines: Sequence[str]) -> str:
    """The end of a container's log as the fallback reads it: the last :data:`LOG_LINES`
    lines, then the last :data:`LOG_BYTES` bytes of them."""
    return _text("".join(lines[-LOG_LINES:]).encode("utf-8", errors="replace")[-LOG_BYTES:])


def termination_message(
    container: Mapping[str, Any],
    *,
    exit_code: int,
    reason: str | None = None,
    written: bytes | None,
    log_lines: Sequence[str] = (),
    runtime_message: str | None = None,
) -> str | None:
    """The ``message`` of ``container``'s ``terminated`` state (None: none), by the
    kubelet's rule (see the module): ``written`` is what the container left at its
    ``terminationMessagePath`` (None: no file), ``log_lines`` this run's log lines (each
    with its newline), ``runtime_message`` the runtime's own message, if any."""
    fallback = (
        container.get("terminationMessagePolicy") == _FALLBACK
        and exit_code != 0
        and reason != _NEVER_STARTED
    )
    message = ""
    if container.get("terminationMessagePath") and written:
        message = _text(written[-MESSAGE_BYTES:])
    elif fallback:
        message = log_tail(log_lines)
    if runtime_message and message:
        return f"{runtime_message}: {message}"
    return runtime_message or message or None
