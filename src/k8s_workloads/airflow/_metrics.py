"""The executor's metrics, sent through Airflow's own ``Stats``: to StatsD, Datadog's
StatsD or OpenTelemetry, as ``[metrics]`` configures Airflow, under Airflow's prefix
(``statsd_prefix``, ``otel_prefix``) and then ``k8s_workloads.``.

:data:`METRICS` is the one place their names, types and tags are written; the docs'
page (``docs/metrics.md``) describes each, and a test holds the two together.

A metric with a tag is sent under a name that ends in the tag's value
(``k8s_workloads.pods_created.task``) and with the tag (``kind=task``): plain StatsD drops
tags, and a backend that keeps them can group by them. Every tag's values are few
(workload kinds, HTTP statuses, two watch causes): never a pod's name or a workload's key.

With metrics off (no ``statsd_on``, ``statsd_datadog_enabled`` nor ``otel_on``),
:class:`_Metrics` is given no ``Stats``: every method returns at once, and nothing is
kept per workload. The module imports no Airflow: the executor hands it ``Stats``.
"""

from __future__ import annotations

import datetime
import time
from typing import TYPE_CHECKING, Any, Literal

import attrs

from k8s_workloads.decisions.creation_errors import Delivery, delivery_of, is_transport_error
from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey

if TYPE_CHECKING:
    import logging
    from collections.abc import Callable

    from k8s_workloads.keys import WorkloadKey

__all__ = [
    "ADOPTION_RELABELS_REFUSED",
    "METRICS",
    "PODS_ADOPTED",
    "PODS_CREATED",
    "POD_CREATION_FAILURES",
    "PREFIX",
    "QUEUED_TO_RUNNING",
    "REQUESTS_IN_FLIGHT",
    "SYNC_DURATION",
    "WATCH_RESTARTS",
    "Metric",
    "_Metrics",
    "creation_failure_status",
    "workload_kind",
]

PREFIX = "k8s_workloads"


@attrs.frozen
class Metric:
    """One metric: its name after ``k8s_workloads.``, its type, the tag whose value ends
    the name (None: none) and what it counts or measures."""

    name: str
    type: Literal["counter", "gauge", "timer"]
    tag: str | None
    meaning: str

    def full_name(self, value: str | None = None) -> str:
        """The name sent (Airflow's prefix goes before it): with the tag's ``value``."""
        return f"{PREFIX}.{self.name}" if value is None else f"{PREFIX}.{self.name}.{value}"


PODS_CREATED = Metric(
    "pods_created",
    "counter",
    "kind",
    "worker pods created: a creation the API server answered with success, or one "
    "without a clear answer whose pod the read back found",
)
POD_CREATION_FAILURES = Metric(
    "pod_creation_failures",
    "counter",
    "status",
    "pod creation calls that failed, by the API server's HTTP status; `unsent`: the "
    "request never reached it; `no_answer`: sent, no answer (the pod is read back); "
    "`error`: anything else",
)
REQUESTS_IN_FLIGHT = Metric(
    "requests_in_flight",
    "gauge",
    None,
    "API calls (creations, deletions, label patches) still under way at the end of a "
    "`sync()`: they go on in the background, and the next `sync()` reports them",
)
SYNC_DURATION = Metric(
    "sync_duration",
    "timer",
    None,
    "one `sync()`: the watch events fed, adoption planned, the requests performed "
    "(bounded by `sync_max_seconds`)",
)
WATCH_RESTARTS = Metric(
    "watch_restarts",
    "counter",
    "cause",
    "pod watches started again: `ended`, the stream ended (the server's timeout, a "
    "re-list); `failed`, the watch call or its stream failed (then with a backoff)",
)
PODS_ADOPTED = Metric(
    "pods_adopted",
    "counter",
    "kind",
    "live pods of dead schedulers taken over (relabelled to this scheduler and running here)",
)
ADOPTION_RELABELS_REFUSED = Metric(
    "adoption_relabels_refused",
    "counter",
    "kind",
    "adoptions the API server refused (another scheduler took the pod first, or it is "
    "gone): not run here",
)
QUEUED_TO_RUNNING = Metric(
    "queued_to_running",
    "timer",
    "kind",
    "from the executor accepting a workload (`execute_async`, a callback queued) to the "
    "first watch event showing its pod `Running`",
)

METRICS: tuple[Metric, ...] = (
    PODS_CREATED,
    POD_CREATION_FAILURES,
    REQUESTS_IN_FLIGHT,
    SYNC_DURATION,
    WATCH_RESTARTS,
    PODS_ADOPTED,
    ADOPTION_RELABELS_REFUSED,
    QUEUED_TO_RUNNING,
)


def workload_kind(key: WorkloadKey) -> str:
    """``task``, ``callback`` or ``generic``: the ``kind`` tag."""
    if isinstance(key, TaskInstanceKey):
        return "task"
    if isinstance(key, CallbackKey):
        return "callback"
    if isinstance(key, GenericKey):
        return "generic"
    raise TypeError(f"key must be a workload key, got {type(key).__name__}")


def creation_failure_status(error: BaseException) -> str:
    """The ``status`` tag of a failed creation: the HTTP status the API server answered,
    ``unsent`` (never reached it), ``no_answer`` (a connection's failure after it was sent)
    or ``error`` (anything else: a bug, a request the client refused to send). How far
    the request got is the core's rule
    (:func:`~k8s_workloads.decisions.creation_errors.delivery_of`)."""
    delivery = delivery_of(error)
    status = getattr(error, "status", None)
    if delivery is Delivery.ANSWERED:
        return str(status)
    if delivery is Delivery.UNSENT:
        return "unsent"
    # Status 0: the kubernetes client's wrapping of a connection's failure (TLS).
    answered_none = isinstance(status, int) and not isinstance(status, bool)
    return "no_answer" if answered_none or is_transport_error(error) else "error"


class _Metrics:
    """What the executor sends to Airflow's ``Stats`` (None: metrics are off).

    Called on the scheduler's thread, but for :meth:`pod_created` and
    :meth:`creation_failed` (the I/O pool's threads) and :meth:`watch_restarted` (the
    watchers'): those only send. A metric that cannot be sent is one warning, then
    nothing more is said of it: metrics never stop the executor.
    """

    def __init__(
        self,
        stats: Any | None,  # noqa: ANN401 - Airflow's Stats
        *,
        log: logging.Logger | logging.LoggerAdapter[Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.on = stats is not None
        self._stats = stats
        self._log = log
        self._clock = clock
        self._warned = False
        self._accepted: dict[WorkloadKey, float] = {}
        """When each workload not yet seen Running was accepted (``clock`` seconds)."""

    @property
    def timing_running(self) -> bool:
        """Whether a Running pod may end a :data:`QUEUED_TO_RUNNING` measure: look at the
        watch's resolutions only then."""
        return bool(self._accepted)

    # --- what the executor saw ------------------------------------------------------

    def accepted(self, key: WorkloadKey) -> None:
        """The executor took ``key`` on (submitted to the core)."""
        if self.on:
            self._accepted[key] = self._clock()

    def running(self, key: WorkloadKey | None) -> None:
        """A watch event showed a pod of ``key`` Running: the first one ends its measure."""
        started = self._accepted.pop(key, None) if key is not None else None
        if started is not None and key is not None:
            elapsed = datetime.timedelta(seconds=max(0.0, self._clock() - started))
            self._send("timing", QUEUED_TO_RUNNING, elapsed, workload_kind(key))

    def stopped(self, key: WorkloadKey) -> None:
        """``key`` no longer runs here: a measure not ended by then never will be."""
        if self._accepted:
            self._accepted.pop(key, None)

    def pod_created(self, key: WorkloadKey) -> None:
        if self.on:
            self._send("incr", PODS_CREATED, 1, workload_kind(key))

    def creation_failed(self, error: BaseException) -> None:
        if self.on:
            self._send("incr", POD_CREATION_FAILURES, 1, creation_failure_status(error))

    def adopted(self, key: WorkloadKey) -> None:
        if self.on:
            self._send("incr", PODS_ADOPTED, 1, workload_kind(key))

    def relabel_refused(self, key: WorkloadKey) -> None:
        if self.on:
            self._send("incr", ADOPTION_RELABELS_REFUSED, 1, workload_kind(key))

    def watch_restarted(self, *, failed: bool) -> None:
        if self.on:
            self._send("incr", WATCH_RESTARTS, 1, "failed" if failed else "ended")

    def synced(self, seconds: float, in_flight: int) -> None:
        """A ``sync()`` took ``seconds`` and left ``in_flight`` requests under way."""
        if self.on:
            self._send("timing", SYNC_DURATION, datetime.timedelta(seconds=seconds), None)
            self._send("gauge", REQUESTS_IN_FLIGHT, in_flight, None)

    # --- sending ---------------------------------------------------------------------

    def _send(self, method: str, metric: Metric, value: object, tag: str | None) -> None:
        name = metric.full_name(tag)
        tags = None if tag is None or metric.tag is None else {metric.tag: tag}
        try:
            getattr(self._stats, method)(name, value, tags=tags)
        except Exception as error:  # noqa: BLE001 - a metrics backend must not stop the executor
            if not self._warned and self._log is not None:
                self._warned = True
                self._log.warning(
                    "Sending the metric %s failed (%s); metrics that fail are not logged again",
                    name,
                    error,
                )
