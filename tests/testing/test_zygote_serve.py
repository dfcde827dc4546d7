"""The zygote's own module: the messages' framing both sides use, how a request and its
descriptor are read, and the exit status a child ends with (as a real interpreter's).

What a forked container does end to end (signals, output, atexit, sessions) is tested
through the kubelet in ``test_zygote.py``.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.testing._zygote_serve import HEADER, _exit_status, _receive, frame, frames

_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
_MESSAGES = st.dictionaries(st.text(max_size=10), _JSON_VALUES, max_size=4)


@given(messages=st.lists(_MESSAGES, max_size=5), cuts=st.lists(st.integers(0, 10_000)))
def test_framed_messages_come_back_whole_and_in_order_however_the_bytes_arrive(
    messages: list[dict[str, Any]], cuts: list[int]
) -> None:
    sent = b"".join(frame(message) for message in messages)
    points = sorted({0, len(sent), *(cut % (len(sent) + 1) for cut in cuts)})
    buffer = bytearray()
    received: list[dict[str, Any]] = []
    for start, end in itertools.pairwise(points):
        buffer += sent[start:end]
        received += frames(buffer)
    assert received == messages
    assert buffer == bytearray()  # nothing left over


def test_an_incomplete_message_waits_in_the_buffer() -> None:
    whole = frame({"started": 4242})
    buffer = bytearray(whole[:-1])
    assert frames(buffer) == []
    assert bytes(buffer) == whole[:-1]
    buffer += whole[-1:]
    assert frames(buffer) == [{"started": 4242}]
    assert HEADER.unpack(whole[: HEADER.size]) == (len(whole) - HEADER.size,)


def test_a_request_is_read_with_the_descriptor_sent_beside_it() -> None:
    kubelet, zygote = socket.socketpair()
    read_end, write_end = os.pipe()
    try:
        request = {"module": "m", "args": ["a"], "own_env": {}, "cwd": "/"}
        socket.send_fds(kubelet, [frame(request)], [write_end])
        received = _receive(zygote)
        assert received is not None
        message, descriptors = received
        assert message == request
        assert len(descriptors) == 1
        os.write(descriptors[0], b"through the copy")
        os.close(descriptors[0])
        assert os.read(read_end, 100) == b"through the copy"
        kubelet.close()
        assert _receive(zygote) is None  # the kubelet closed: no request
    finally:
        for end in (read_end, write_end):
            os.close(end)
        kubelet.close()
        zygote.close()


def test_a_request_cut_short_by_a_closed_socket_is_none() -> None:
    kubelet, zygote = socket.socketpair()
    try:
        kubelet.sendall(frame({"module": "m"})[:-2])
        kubelet.close()
        assert _receive(zygote) is None
    finally:
        zygote.close()


@pytest.mark.parametrize(
    "code", ["None", "0", "3", "256", "-1", "True", "'why'", "3.5"], ids=lambda code: code
)
def test_the_exit_status_is_the_one_a_real_interpreter_ends_with(
    code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    real = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.exit({code})"],
        capture_output=True, text=True, check=False, timeout=30,
    )  # fmt: skip
    assert _exit_status(eval(code)) == real.returncode  # noqa: S307 - the literals above
    assert capsys.readouterr().err == real.stderr  # what is printed, if anything
