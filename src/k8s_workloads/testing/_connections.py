"""The kit server's open TCP connections, and the network faults they can be made to suffer.

What an API server restart or a load balancer does to a client's connections, at the level
the client sees them (kubernetes-api-semantics.md, "Connections"):

* a **reset**: the server closes the connection with ``SO_LINGER`` 0, so the client gets an
  RST (``ECONNRESET``), not a clean end, whether the connection was idle in the client's
  pool, had a request under way, or carried a watch;
* a **stall**: nothing the connection carries is forwarded any more, in either direction —
  a request on it is never served, a watch on it gets no bytes — until the stall ends and
  the connection is reset, as a load balancer drops a flow it has held.

:class:`Connections` keeps every connection the server accepted until it is closed; the
request handler asks its :class:`Connection` before it serves a request or writes a byte
(:meth:`Connection.proceed`), so that a stalled one waits and a reset one stops. Waking a
handler blocked reading the next request is ``shutdown(SHUT_RD)``, which sends nothing to
the peer on Linux; the RST itself is the close. Every close goes through
:meth:`Connections.close`, under the registry's lock, so that a reset never touches a
descriptor number the system has given to another socket since.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Connection", "ConnectionCut", "Connections"]

# SO_LINGER on with a 0 s timeout: close() sends an RST and drops unsent data (socket(7)).
_LINGER_RESET = struct.pack("ii", 1, 0)
_WAIT_STEP_SECONDS = 0.05  # how often a held handler checks that the server is stopping


def _shut(sock: socket.socket, how: int) -> None:
    with contextlib.suppress(OSError):  # the peer is gone already
        sock.shutdown(how)


class ConnectionCut(ConnectionResetError):
    """The kit reset this connection: nothing more is read from it or written to it."""

    def __init__(self) -> None:
        super().__init__(104, "Connection reset by peer (a fault of the kit)")


class Connection:
    """One accepted connection: whether a fault holds it (:attr:`stalled`) or reset it
    (:attr:`cut`). Changed only by :class:`Connections`."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.cut = False
        self.stalled = False
        self._woken = threading.Event()  # set once cut: a held handler stops waiting

    def proceed(self, stopping: threading.Event) -> None:
        """Before a request is served or a byte written: wait while the connection is
        stalled; raise :class:`ConnectionCut` once it was reset."""
        while self.stalled and not self.cut and not stopping.is_set():
            self._woken.wait(_WAIT_STEP_SECONDS)
        if self.cut:
            raise ConnectionCut

    def pause(self, seconds: float, stopping: threading.Event) -> None:
        """Wait ``seconds`` (a latency), less if the connection is reset or the server
        stops meanwhile."""
        end = time.monotonic() + seconds
        while not self.cut and not stopping.is_set():
            left = end - time.monotonic()
            if left <= 0:
                return
            self._woken.wait(min(left, _WAIT_STEP_SECONDS))

    def _cut(self) -> None:
        self.cut = True
        self._woken.set()


class Connections:
    """Every connection the server accepted and has not closed yet. ``on_reset`` is called
    once for each connection a fault resets (the server counts them)."""

    def __init__(self, on_reset: Callable[[], None]) -> None:
        self._lock = threading.Lock()
        self._open: dict[socket.socket, Connection] = {}
        self._on_reset = on_reset

    def opened(self, sock: socket.socket) -> Connection:
        """Keep ``sock``, just accepted."""
        connection = Connection(sock)
        with self._lock:
            self._open[sock] = connection
        return connection

    def of(self, sock: socket.socket) -> Connection:
        """The connection kept for ``sock`` (a detached one if it is not kept)."""
        with self._lock:
            return self._open.get(sock) or Connection(sock)

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)

    def close(self, sock: socket.socket) -> None:
        """Close ``sock`` as its handler is done with it: an RST if it was reset, else a
        clean end (``SHUT_WR``, then close, as ``socketserver`` does)."""
        with self._lock:
            connection = self._open.pop(sock, None)
            if connection is None or not connection.cut:
                _shut(sock, socket.SHUT_WR)
            sock.close()

    def reset(self, connection: Connection) -> bool:
        """Reset ``connection``: its handler stops at its next step and the close sends an
        RST. False if it was reset or closed already."""
        with self._lock:
            return self._reset_locked(connection)

    def reset_all(self) -> int:
        """Reset every open connection; how many were."""
        with self._lock:
            return sum(self._reset_locked(each) for each in list(self._open.values()))

    def reset_stalled(self) -> int:
        """Reset every connection a stall holds; how many were."""
        with self._lock:
            held = [each for each in self._open.values() if each.stalled]
            return sum(self._reset_locked(each) for each in held)

    def end_all(self) -> None:
        """Wake every handler blocked reading its next request: it reads an end and closes
        its connection cleanly (the server stops)."""
        with self._lock:
            for each in self._open.values():
                _shut(each.sock, socket.SHUT_RD)

    def stall_all(self) -> list[Connection]:
        """Hold every open connection that is neither reset nor held already; those."""
        with self._lock:
            held = [each for each in self._open.values() if not each.cut and not each.stalled]
            for each in held:
                each.stalled = True
            return held

    def _reset_locked(self, connection: Connection) -> bool:
        if connection.cut or self._open.get(connection.sock) is not connection:
            return False
        connection._cut()  # noqa: SLF001 - this registry is the one that changes it
        with contextlib.suppress(OSError):  # the peer is gone already
            connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
        # Wakes a handler blocked reading the next request (it reads an end), sending
        # nothing: the RST goes when the handler is done and the socket is closed.
        _shut(connection.sock, socket.SHUT_RD)
        self._on_reset()
        return True
