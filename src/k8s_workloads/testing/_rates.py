"""A share of the API calls a :class:`~k8s_workloads.testing.FakeApiServer` fails:
:class:`FaultRate`, and the seeded draws that serve it (:class:`FaultDraws`).

:meth:`FakeCluster.fail_next <k8s_workloads.testing.FakeCluster.fail_next>` fails the next
calls a test names; a fault rate fails calls at random, as a flaky API server or load
balancer does under a load test (5 % of the calls answered 503, say, or reset). The draws
are seeded and made in the order the calls arrive, so one client's calls in sequence
fault the same way on every run.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Iterable
from typing import Any

import attrs

from k8s_workloads import config_checks as _checks
from k8s_workloads.display import shown
from k8s_workloads.testing.errors import Fault

__all__ = ["FaultDraws", "FaultRate"]

VERBS = frozenset({"GET", "LIST", "WATCH", "POST", "PUT", "PATCH", "DELETE"})
"""The verbs a call is counted under (:class:`~k8s_workloads.testing.ServerStats`)."""

RESOURCES = frozenset({
    "pods", "pods/status", "pods/log", "pods/binding", "secrets", "namespaces",
    "selfsubjectaccessreviews",
})  # fmt: skip
"""The resources the server serves: a fault rate's calls name these (discovery documents
and the kit's own ``/_kit`` paths never fail)."""

_CALL = re.compile(r"(?:(?P<verb>[A-Z]+) )?(?P<resource>[a-z/]+)")
"""A call a fault rate selects: ``"VERB resource"`` (``"POST pods"``) or a resource alone
(``"pods"``: every verb)."""

_REASONS = {
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
"""The ``Status`` reason a real API server gives with these codes (else ``Failure``)."""

RESET = "reset"
"""How a connection fault is counted in ``ServerStats.faults_served``."""


def _statuses(value: object) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, int):
        return (value,)
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return tuple(value)
    return value  # type: ignore[return-value]  # refused by the validator, named


def _check_statuses(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    if value is None:
        return
    if (
        not isinstance(value, tuple)
        or not value
        or not all(
            isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599
            for code in value
        )
    ):
        raise _checks.InvalidConfig(
            type(instance).__name__,
            attribute.name,
            f"must be None (a connection reset), an HTTP error status from 400 to 599 or a "
            f"non-empty sequence of them, got {shown(value)}",
        )


def _call_set(value: object) -> frozenset[str] | None:
    if value is None or isinstance(value, str):
        return None if value is None else frozenset({value})
    if isinstance(value, Iterable):
        return frozenset(value)
    return value  # type: ignore[return-value]  # refused by the validator, named


def _check_calls(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    if value is None:
        return
    if not isinstance(value, frozenset) or not value:
        raise _checks.InvalidConfig(
            type(instance).__name__,
            attribute.name,
            f"must be None (every call) or a non-empty set of calls, got {shown(value)}",
        )
    for call in value:
        found = _CALL.fullmatch(call) if isinstance(call, str) else None
        verb = None if found is None else found["verb"]
        if found is None or found["resource"] not in RESOURCES or (verb and verb not in VERBS):
            raise _checks.InvalidConfig(
                type(instance).__name__,
                attribute.name,
                f"must name each call as a resource ({', '.join(sorted(RESOURCES))}) or "
                f"'VERB resource' with VERB one of {', '.join(sorted(VERBS))}, got "
                f"{shown(call)}",
            )


def _check_rate(instance: object, attribute: Any, value: Any) -> None:  # noqa: ANN401
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not 0 <= value <= 1:
        raise _checks.InvalidConfig(
            type(instance).__name__,
            attribute.name,
            f"must be a probability from 0 to 1, got {shown(value)}",
        )


def _check_seed(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
    if isinstance(value, bool) or not isinstance(value, int):
        raise _checks.InvalidConfig(
            type(instance).__name__, attribute.name, f"must be an int, got {shown(value)}"
        )


def _optional(validator: Any) -> Any:  # noqa: ANN401 - an attrs validator
    def check(instance: object, attribute: Any, value: object) -> None:  # noqa: ANN401
        if value is not None:
            validator(instance, attribute, value)

    return check


@attrs.frozen
class FaultRate:
    """Fail a share of a :class:`~k8s_workloads.testing.FakeApiServer`'s API calls.

    Each call that ``calls`` selects fails with probability ``rate``, drawn from a
    ``random.Random(seed)`` in the order the calls arrive, after the server's latency and
    before the call reaches the cluster (nothing of it is applied):

    * ``status`` an HTTP error status (400-599): the call is answered with it, a
      ``Status`` document whose reason is the API server's for that code
      (``ServiceUnavailable`` for 503 ...), with ``Retry-After: retry_after`` if given;
      a sequence of statuses: one drawn for each fault;
    * ``status`` None: the connection is reset (an RST) instead of answered.

    ``calls`` names what may fail: ``"VERB resource"`` as
    :class:`~k8s_workloads.testing.ServerStats` counts it (``"POST pods"``,
    ``"WATCH pods"``, ``"DELETE secrets"``) or a resource alone for every verb on it
    (``"pods"``, ``"secrets"``, ``"pods/status"``); None, every API call (discovery and
    ``/_kit`` never fail). ``limit`` bounds the faults served (None: no bound). The
    server counts each fault it serves (``ServerStats.faults_served``). A value that
    cannot be used is an :class:`~k8s_workloads.InvalidConfig` naming its field.
    """

    rate: float = attrs.field(validator=_check_rate)
    status: tuple[int, ...] | None = attrs.field(
        default=(500,), converter=_statuses, validator=_check_statuses
    )
    calls: frozenset[str] | None = attrs.field(
        default=None, converter=_call_set, validator=_check_calls
    )
    seed: int = attrs.field(default=0, validator=_check_seed)
    retry_after: int | None = attrs.field(default=None, validator=_optional(_checks.count))
    limit: int | None = attrs.field(default=None, validator=_optional(_checks.positive))

    def selects(self, verb: str, resource: str) -> bool:
        """Whether a call of ``verb`` on ``resource`` may fail."""
        if resource not in RESOURCES:
            return False
        return self.calls is None or resource in self.calls or f"{verb} {resource}" in self.calls


class FaultDraws:
    """A :class:`FaultRate`'s draws on one server, shared by its threads."""

    def __init__(self, rate: FaultRate) -> None:
        self.rate = rate
        self._random = random.Random(rate.seed)  # noqa: S311 - a test's faults, not secrets
        self._lock = threading.Lock()
        self._served = 0

    def draw(self, verb: str, resource: str) -> tuple[Fault, str] | None:
        """The fault this call meets and how it is counted (``"503"``, ``"reset"``), or
        None: it goes on."""
        rate = self.rate
        if not rate.selects(verb, resource):
            return None
        with self._lock:
            if rate.limit is not None and self._served >= rate.limit:
                return None
            if self._random.random() >= rate.rate:
                return None
            self._served += 1
            statuses = rate.status
            if statuses is None:
                return Fault(None), RESET
            code = statuses[0] if len(statuses) == 1 else self._random.choice(statuses)
        headers = None if rate.retry_after is None else {"Retry-After": str(rate.retry_after)}
        fault = Fault(
            code,
            _REASONS.get(code, "Failure"),
            f"injected by the kit's fault rate ({verb} {resource})",
            headers=headers,
        )
        return fault, str(code)
