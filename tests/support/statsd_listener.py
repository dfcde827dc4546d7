"""A StatsD server's receiving end for tests: a UDP socket on 127.0.0.1 (an ephemeral
port) that keeps every datagram sent to it, read as StatsD lines (``name:value|type``)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import attrs


@attrs.frozen
class Datagram:
    """One StatsD line: ``name:value|type`` (``c`` counter, ``g`` gauge, ``ms`` timer)."""

    name: str
    value: float
    type: str

    @classmethod
    def parse(cls, line: str) -> Datagram:
        name, _, rest = line.partition(":")
        value, _, kind = rest.partition("|")
        return cls(name, float(value), kind.split("|", 1)[0])


class StatsdListener:
    """Bound on entry; :meth:`read` takes what arrived. Closed on exit."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.setblocking(False)
        self.port: int = self.socket.getsockname()[1]
        self.received: list[Datagram] = []

    def __enter__(self) -> StatsdListener:  # noqa: PYI034 - no typing.Self on Python 3.10
        return self

    def __exit__(self, *_: object) -> None:
        self.socket.close()

    def read(self) -> list[Datagram]:
        """Every datagram received so far (those read before included)."""
        while True:
            try:
                data = self.socket.recv(65536)
            except BlockingIOError:
                return self.received
            # The statsd client sends one metric a datagram (a pipeline: one a line).
            self.received.extend(Datagram.parse(line) for line in data.decode().splitlines())

    def wait_for(self, found: Callable[[list[Datagram]], bool], timeout: float = 10.0) -> bool:
        """Read until ``found(datagrams)`` holds or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while not found(self.read()):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True
