"""What a :class:`~k8s_workloads.testing.FakeApiServer` has served, for tests and benchmarks.

Requests are counted by verb and resource as the API server's own
``apiserver_request_total`` metric labels them: ``GET`` (one object), ``LIST``, ``WATCH``,
``POST``, ``PATCH``, ``DELETE``, and the resource (``pods``, ``secrets``; a discovery path
such as ``/api/v1`` for the documents that are no resource; ``other`` for what the
server does not serve). Requests in flight are counted as the API server's max-in-flight
limit counts them: watches are long-running and left out. The network faults the server
was asked for are counted too (:data:`FAULTS`), and the faults a
:class:`~k8s_workloads.testing.FaultRate` served, by call (:attr:`ServerStats.faults_served`).
"""

from __future__ import annotations

import threading
import types
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["FAULTS", "ServerStats"]

CREATION = ("POST", "pods")
"""The request whose concurrency is also kept apart: a pod creation."""

FAULTS = ("connections_reset", "answers_dropped", "stalls", "refusals")
"""The fault counters of :class:`ServerStats`, by field name."""


def _counts(value: Mapping[str, int]) -> Mapping[str, int]:
    return types.MappingProxyType(dict(sorted(value.items())))


@attrs.frozen
class ServerStats:
    """Counts since the server started; a value, read with ``FakeApiServer.stats``."""

    connections: int = 0
    """TCP connections accepted (a client that keeps its connection alive opens one)."""
    requests: Mapping[str, int] = attrs.field(factory=dict, converter=_counts, hash=False)
    """Requests answered or under way, by ``"VERB resource"``: ``"POST pods"``."""
    max_in_flight: int = 0
    """The most requests under way at once (watches left out)."""
    max_in_flight_creations: int = 0
    """The most pod creations (``POST pods``) under way at once."""
    connections_reset: int = 0
    """Connections the server reset (an RST) for a fault: ``reset_connections``,
    ``refuse_connections``, a stall's end, a lost answer, a ``fail_next`` fault without a
    status."""
    answers_dropped: int = 0
    """Creations stored whose answer was lost (``drop_next_create_answer``)."""
    stalls: int = 0
    """Stalls begun (``stall``)."""
    refusals: int = 0
    """Refusal windows begun (``refuse_connections``). The connection attempts refused
    during one are not counted: nothing listens, the system refuses them, and the server
    never sees them."""
    faults_served: Mapping[str, int] = attrs.field(factory=dict, converter=_counts, hash=False)
    """The faults the server's :class:`~k8s_workloads.testing.FaultRate` served, by
    ``"VERB resource answer"``: ``"POST pods 503"``, ``"DELETE pods reset"`` (a reset is
    also counted in :attr:`connections_reset`)."""

    def count(self, verb: str, resource: str) -> int:
        """The requests of ``verb`` on ``resource`` (0 if none): ``count("LIST", "pods")``."""
        return self.requests.get(f"{verb} {resource}", 0)

    def count_faults(self, verb: str | None = None, resource: str | None = None) -> int:
        """The faults a fault rate served (on ``verb``, on ``resource``, if given)."""
        total = 0
        for key, served in self.faults_served.items():
            served_verb, served_resource, _answer = key.split(" ")
            if verb in {None, served_verb} and resource in {None, served_resource}:
                total += served
        return total

    def to_json(self) -> dict[str, Any]:
        """A JSON-compatible dict: what ``GET /_kit/stats`` answers."""
        return {
            "connections": self.connections,
            "requests": dict(self.requests),
            "max_in_flight": self.max_in_flight,
            "max_in_flight_creations": self.max_in_flight_creations,
            **{name: getattr(self, name) for name in FAULTS},
            "faults_served": dict(self.faults_served),
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> ServerStats:
        """Read back :meth:`to_json` (a server in another process answers it)."""
        return cls(
            connections=int(document["connections"]),
            requests={str(key): int(value) for key, value in document["requests"].items()},
            max_in_flight=int(document["max_in_flight"]),
            max_in_flight_creations=int(document["max_in_flight_creations"]),
            **{name: int(document[name]) for name in FAULTS},
            faults_served={
                str(key): int(value) for key, value in document.get("faults_served", {}).items()
            },
        )


class StatsRecorder:
    """The counters behind :class:`ServerStats`, shared by the server's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connections = 0
        self._requests: dict[str, int] = {}
        self._in_flight = 0
        self._creations = 0
        self._max_in_flight = 0
        self._max_creations = 0
        self._faults = dict.fromkeys(FAULTS, 0)
        self._served: dict[str, int] = {}

    def connected(self) -> None:
        with self._lock:
            self._connections += 1

    def faulted(self, name: str) -> None:
        """Count one fault of ``name`` (one of :data:`FAULTS`)."""
        with self._lock:
            self._faults[name] += 1

    def served(self, key: str) -> None:
        """Count one fault a fault rate served, as ``"VERB resource answer"``."""
        with self._lock:
            self._served[key] = self._served.get(key, 0) + 1

    def counted(self, verb: str, resource: str) -> None:
        key = f"{verb} {resource}"
        with self._lock:
            self._requests[key] = self._requests.get(key, 0) + 1

    def begin(self, verb: str, resource: str) -> Callable[[], None]:
        """Count the request and hold it as under way; the returned function ends that
        (call it before the answer is written, once: the client may send its next
        request as soon as it reads the answer). Calling it again does nothing."""
        self.counted(verb, resource)
        creation = (verb, resource) == CREATION
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            if creation:
                self._creations += 1
                self._max_creations = max(self._max_creations, self._creations)
        ended = False

        def end() -> None:
            nonlocal ended
            with self._lock:
                if ended:
                    return
                ended = True
                self._in_flight -= 1
                if creation:
                    self._creations -= 1

        return end

    def snapshot(self) -> ServerStats:
        with self._lock:
            return ServerStats(
                connections=self._connections,
                requests=self._requests,
                max_in_flight=self._max_in_flight,
                max_in_flight_creations=self._max_creations,
                **self._faults,
                faults_served=self._served,
            )
