"""The termination message rule the kit's kubelets share (``testing/_termination.py``),
against the kubelet's: the file's end whatever the policy and exit code; the log's tail
(80 lines, 2048 bytes) only for ``FallbackToLogsOnError``, a non-zero exit and no message
written; a runtime's message first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.testing._termination import (
    LOG_BYTES,
    LOG_LINES,
    MESSAGE_BYTES,
    log_tail,
    read_message_file,
    termination_message,
)

if TYPE_CHECKING:
    from pathlib import Path

PATH = {"terminationMessagePath": "/dev/termination-log"}
FILE = {**PATH, "terminationMessagePolicy": "File"}
FALLBACK = {**PATH, "terminationMessagePolicy": "FallbackToLogsOnError"}
LINES = ["Traceback (most recent call last):\n", "AttributeError: notfy\n"]


@pytest.mark.parametrize(
    ("container", "exit_code", "reason", "written", "expected"),
    [
        # The file wins, whatever the policy and exit code.
        (FILE, 0, None, b"done", "done"),
        (FALLBACK, 3, None, b"bye", "bye"),
        # No file, or an empty one: the log's tail, only on failure with the fallback.
        (FALLBACK, 1, None, None, "".join(LINES)),
        (FALLBACK, 1, None, b"", "".join(LINES)),
        (FALLBACK, 0, None, None, None),
        (FILE, 1, None, None, None),
        (FALLBACK, 1, "ContainerCannotRun", None, None),
        # No path: nothing is read from a file, the fallback still applies.
        ({"terminationMessagePolicy": "FallbackToLogsOnError"}, 2, None, b"x", "".join(LINES)),
        ({}, 2, None, b"x", None),
    ],
)
def test_the_message_is_the_files_else_the_logs_tail_on_failure(
    container: dict[str, Any],
    exit_code: int,
    reason: str | None,
    written: bytes | None,
    expected: str | None,
) -> None:
    found = termination_message(
        container, exit_code=exit_code, reason=reason, written=written, log_lines=LINES
    )
    assert found == expected


def test_a_runtime_message_comes_first() -> None:
    found = termination_message(FALLBACK, exit_code=128, written=b"", runtime_message="exec")
    assert found == "exec"
    found = termination_message(FILE, exit_code=128, written=b"why", runtime_message="exec")
    assert found == "exec: why"


def test_the_files_end_is_kept_and_a_cut_character_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "termination-log"
    path.write_bytes(b"a" * 5000 + "é".encode())
    data = read_message_file(path)
    assert data is not None
    assert len(data) == MESSAGE_BYTES
    message = termination_message(FILE, exit_code=0, written=data)
    assert message is not None
    assert message.endswith("aé")
    assert read_message_file(tmp_path / "missing") is None
    assert read_message_file(tmp_path) is None  # a directory: no message


_LINE = st.text(st.characters(exclude_characters="\n\ufffd"), max_size=120).map(lambda t: t + "\n")


@given(st.lists(_LINE, max_size=120))
def test_the_log_tail_is_the_last_80_lines_and_at_most_2048_bytes(lines: list[str]) -> None:
    tail = log_tail(lines)
    last = "".join(lines[-LOG_LINES:])
    assert tail.count("\n") <= LOG_LINES
    # What is kept is the end of those lines; a character cut at its start shows as U+FFFD.
    kept = tail.lstrip("\ufffd").encode()
    assert len(kept) <= LOG_BYTES
    assert last.encode().endswith(kept)
    if len(last.encode()) <= LOG_BYTES:
        assert tail == last
    else:
        assert len(kept) > LOG_BYTES - 4  # only a cut character's bytes are lost
