"""An HTTP server that accepts connections and never answers: a stalled API server, or a
load balancer that keeps a connection whose other end is gone."""

from __future__ import annotations

import socket
import threading
from types import TracebackType


class SilentServer:
    """Listens on 127.0.0.1, accepts every connection and reads what comes, answering
    nothing until closed (a context manager). ``accepted``: connections so far."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self._stopping = threading.Event()
        self._held: list[socket.socket] = []
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, name="silent-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}"

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            self._held.append(connection)  # read by no one: the client waits

    def close(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        self._listener.close()
        for connection in self._held:
            connection.close()

    def __enter__(self) -> SilentServer:  # noqa: PYI034 - no typing.Self on Python 3.10
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
