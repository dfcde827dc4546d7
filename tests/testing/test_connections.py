"""The kit server's connections (:mod:`k8s_workloads.testing._connections`), on real TCP
sockets: a reset is an RST the peer sees, a plain close a clean end; a stall holds a
handler until its connection is reset. Through the real clients: ``test_kit_faults.py``."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from k8s_workloads.testing._connections import Connection, ConnectionCut, Connections


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected (server side, client side) pair over 127.0.0.1."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname()[:2], timeout=30)
        served, _ = listener.accept()
    yield served, client
    for each in (served, client):
        each.close()


def test_a_reset_connection_closes_with_an_rst_counted_once(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    served, client = pair
    resets: list[int] = []
    connections = Connections(on_reset=lambda: resets.append(1))
    connection = connections.opened(served)
    assert connections.reset(connection)
    assert not connections.reset(connection)  # once
    assert connections.reset_all() == 0
    with pytest.raises(ConnectionCut):
        connection.proceed(threading.Event())
    connections.close(served)
    with pytest.raises(ConnectionResetError):
        client.recv(1)
    assert (len(resets), len(connections)) == (1, 0)


def test_a_connection_not_reset_ends_cleanly(pair: tuple[socket.socket, socket.socket]) -> None:
    served, client = pair
    connections = Connections(on_reset=lambda: None)
    connection = connections.opened(served)
    connection.proceed(threading.Event())  # neither held nor reset: goes on at once
    connections.close(served)
    assert client.recv(1) == b""  # an end, no error
    assert not connections.reset(connection)  # closed already


def test_a_stall_holds_a_handler_until_its_connection_is_reset(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    served, _ = pair
    connections = Connections(on_reset=lambda: None)
    connection = connections.opened(served)
    assert connections.stall_all() == [connection]
    assert connections.stall_all() == []  # held already
    outcome: list[BaseException] = []
    waiting = threading.Event()

    def handler() -> None:
        waiting.set()
        try:
            connection.proceed(threading.Event())
        except ConnectionCut as error:
            outcome.append(error)

    thread = threading.Thread(target=handler)
    thread.start()
    waiting.wait()
    assert connections.reset_stalled() == 1
    thread.join()
    assert len(outcome) == 1


def test_a_pause_ends_early_once_the_connection_is_reset(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    served, _ = pair
    connections = Connections(on_reset=lambda: None)
    connection = connections.opened(served)
    connections.reset(connection)
    connection.pause(3600, threading.Event())  # returns: nothing more will be answered
    stopping = threading.Event()
    stopping.set()
    Connection(served).pause(3600, stopping)  # a stopping server waits no more
